#!/usr/bin/env bash
# What `make test` needs from the system, before anything runs as an ordinary user: the Debian
# packages of the build and the peers, the SSH tests' login account and keys, Chromium for the report
# test. Each step installs only what is missing: apt-get directly as root, through sudo otherwise —
# and no sudo at all when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --with-peers
scripts/ssh-peers.sh > /dev/null
scripts/browser.sh

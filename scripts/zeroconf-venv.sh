#!/bin/sh
# .venv-zeroconf/: python-zeroconf, a real multicast DNS responder and browser, pinned, for the tests
# of hadeploy's mDNS browser (MulticastDNSTests: it finds what zeroconf announces).
exec "$(dirname "$0")/pinned-venv.sh" zeroconf zeroconf==0.154.0

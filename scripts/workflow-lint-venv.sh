#!/bin/sh
# .venv-workflow-lint/: zizmor, the GitHub Actions security linter `make lint` runs on every workflow
# template hadeploy ships (Templates/ci/*.yml): unpinned actions, cache poisoning, token permissions,
# persisted credentials, template injection.
exec "$(dirname "$0")/pinned-venv.sh" workflow-lint zizmor==1.32.0

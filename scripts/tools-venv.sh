#!/bin/sh
# .venv-tools/: the Python reference tools the tests compare against: python-dotenv (the .env
# grammar hadeploy follows) and PyYAML (a second YAML parser for templates).
exec "$(dirname "$0")/pinned-venv.sh" tools python-dotenv==1.2.2 PyYAML==6.0.3

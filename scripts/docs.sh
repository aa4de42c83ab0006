#!/usr/bin/env bash
# Build the documentation site with warnings as errors: docs/_build/html/index.html.
# The claims rendered on the pages are checked during the build; a verdict that differs from
# what a page asserts fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pip install -q -e ".[docs]"
.venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
echo "docs: docs/_build/html/index.html"

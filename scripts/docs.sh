#!/usr/bin/env bash
# Build the documentation site with warnings as errors: docs/_build/html/index.html.
# The claims rendered on the pages are checked during the build; a verdict that differs from
# what a page asserts fails it. Every build starts clean, as on a fresh clone: outputs left by an
# earlier build of another checkout (a gallery example no longer there) would otherwise fail it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pip install -q -e ".[docs]"
rm -rf docs/_build docs/auto_examples docs/_generated
.venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
echo "docs: docs/_build/html/index.html"

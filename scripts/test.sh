#!/usr/bin/env bash
# Set up (if needed) and run the test suite, then build the docs (sphinx -W) and check their
# internal links and typeset math in headless Chromium (scripts/browser_check.sh).
# With arguments, only pytest runs, with those arguments (e.g. a test file or -k EXPR).
# GEOATTN_SKIP_DOCS=1 skips the docs checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest "$@"
if [ "$#" -eq 0 ] && [ "${GEOATTN_SKIP_DOCS:-0}" != 1 ]; then
    bash scripts/browser_check.sh
fi

#!/usr/bin/env bash
# Build the docs (scripts/docs.sh), check internal links, then load every page in headless
# Chromium (1,280 px wide) with the network blocked and check the typeset math, identifiers with
# underscores inside math, sideways overflow and the ledger's verdicts (negative controls first).
# Installs Debian's chromium and chromium-driver when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromedriver >/dev/null 2>&1; then
    echo "browser: installing chromium and chromium-driver"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium chromium-driver >/dev/null
fi
bash scripts/docs.sh
.venv/bin/python -m pip install -q "selenium>=4.10"
.venv/bin/python scripts/check_links.py docs/_build/html
.venv/bin/python scripts/check_math.py docs/_build/html --self-test
.venv/bin/python scripts/browser_check.py docs/_build/html --self-test --screenshots docs/_build/screenshots

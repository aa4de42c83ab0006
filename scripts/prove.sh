#!/usr/bin/env bash
# Set up (if needed) and run the claims engine over the whole ledger.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/geoattn prove --json ledger.json "$@"

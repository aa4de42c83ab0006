#!/usr/bin/env bash
# Create .venv and install geoattn with its test extra (and gcc where no C compiler is found).
# torch: where none is installed, the CPU build is installed first
# (pip install torch==2.13.0 where that build is available locally,
# otherwise the newest CPU-compatible release pip finds).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
VPY=.venv/bin/python
if ! "$VPY" -c "import torch" >/dev/null 2>&1; then
    echo "setup: installing torch (CPU build)"
    "$VPY" -m pip install -q "torch==2.13.0" || "$VPY" -m pip install -q "torch>=2.4"
fi
"$VPY" -m pip install -q -e ".[test]"
# the Triton kernels' tests run the printed kernels in Triton's interpreter on the CPU (TRITON_INTERPRET=1);
# torch's CUDA builds bring triton with them, the CPU build does not
if ! "$VPY" -c "import triton" >/dev/null 2>&1; then
    echo "setup: installing triton (for the Triton kernels' interpreter tests)"
    "$VPY" -m pip install -q "triton>=3.2,<4" ||
        echo "setup: triton could not be installed; the Triton kernels' tests are skipped"
fi
# the native CPU kernels are compiled at first use: install a C compiler where none is found
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing gcc (for the native kernels)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    { $SUDO apt-get update -q >/dev/null &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q gcc libc6-dev >/dev/null; } ||
        echo "setup: gcc could not be installed; the torch form of the native kernels serves"
fi
echo "setup: $("$VPY" -c 'import torch, sympy; print("torch", torch.__version__, "sympy", sympy.__version__)')" \
    "$("$VPY" -c 'import triton; print("triton", triton.__version__)' 2>/dev/null || echo 'no triton')"

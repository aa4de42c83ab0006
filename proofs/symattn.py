"""Nonlinear symplectic attention: its potentials' gradients, the gradient-shear argument, geoattn's layer and
its backward, and what GeometricMachineLearning.jl states about them (commit edb632b3).

Run: python proofs/symattn.py [--seed N] [--depth N]
Prints each claim's derivation steps and verdict; exits 1 if a verdict
differs from the one recorded in the ledger.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from geoattn.symbolic.report import family_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(family_main("symattn", __doc__))

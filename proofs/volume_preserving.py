"""Volume-preserving attention: weightings, the layer map's linear-time form, invariant, inverse and volume (seed 000).

Run: python proofs/volume_preserving.py [--seed N] [--depth N]
Prints each claim's derivation steps and verdict; exits 1 if a verdict
differs from the one recorded in the ledger. The layer map Z -> Z Cayley(Z^T A Z)
is proved volume-preserving for every d and T by a flow argument (and so is
Z -> Z exp(Z^T A Z)); the push-through claims justify its O(T d^2) form.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from geoattn.symbolic.report import family_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(family_main("volume_preserving", __doc__))

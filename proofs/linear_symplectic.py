"""Linear symplectic attention and the symplectic product structure (seed 004).

Run: python proofs/linear_symplectic.py [--seed N] [--depth N]
Prints each claim's derivation steps and verdict; exits 1 if a verdict
differs from the one recorded in the ledger.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from geoattn.symbolic.report import print_family  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--depth", type=int, default=1)
    args = parser.parse_args()
    sys.exit(print_family("linear_symplectic", seed=args.seed, depth=args.depth))

"""Symplectic-attention benchmark: SymplecticAttention against scaled_dot_product_attention at the same shape.

    python benchmarks/symplectic.py [--quick] [--json PATH] [--threads N] [--device cpu|cuda]
                                    [--batch B] [--lengths T ...]

For input ``x`` of shape ``(B, T, 4)`` (two positions, two momenta per token) the reference is
``scaled_dot_product_attention`` of ``x`` as one head, measured in the same run, as in ``benchmarks/layers.py``
(whose timing and memory helpers this script uses): forward, forward+backward with a dense random
incoming gradient and with the one of ``out.sum()``, activation memory. Besides the layer with its
generated backward, a row times the same layer differentiated by autograd through the generated
forward (``autograd``), to show what the generated backward buys.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from geoattn.kernels import _generated as gen  # noqa: E402
from geoattn.nn import SymplecticAttention  # noqa: E402
from layers import common_parser, line, measure, print_preamble, ratios, sdpa, write_results  # noqa: E402


def autograd_version(layer: SymplecticAttention):
    """The layer's map with autograd through the generated forward instead of the generated backward."""
    forward = getattr(gen, f"symattn_update_{layer.activation}")

    def run(x):
        n = x.shape[-1] // 2
        q, p = x[..., :n], x[..., n:]
        return torch.cat([q, p + forward(q, layer.weighting())[0]], dim=-1)

    return run


def main(argv=None) -> int:
    parser = common_parser(__doc__, "B = 256, T in {4, 16}, one repetition")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--lengths", type=int, nargs="+")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    B = args.batch or (256 if args.quick else 4096)
    lengths = args.lengths or ([4, 16] if args.quick else [4, 16, 64])
    reps = 1 if args.quick else args.reps
    print_preamble(device)
    rows = []
    for T in lengths:
        torch.manual_seed(0)
        x = torch.randn(B, T, 4, device=device)
        ref = measure(sdpa, x, reps, device)
        rows.append({"layer": "sdpa", "B": B, "dim": 4, "T": T, **ref})
        line("sdpa (reference)", B, 4, T, ref)
        for act in ("matrix_softmax", "vector_softmax"):
            layer = SymplecticAttention(4, activation=act, device=device)
            for name, fn in ((f"SymplecticAttention({act})", layer),
                             (f"  autograd ({act})", autograd_version(layer))):
                m = measure(fn, x, reps, device)
                row = {"layer": name.strip(), "B": B, "dim": 4, "T": T, **m, **ratios(m, ref)}
                rows.append(row)
                line(name, B, 4, T, m, row)
    if args.json:
        write_results(args.json, device, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

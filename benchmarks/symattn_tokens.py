"""SymplecticAttention forward+backward against SDPA at B*T = 65,536 tokens, one thread, float32.

    python benchmarks/symattn_tokens.py [DIMS [LENGTHS [ACTIVATIONS]]]   # e.g. 4,8,16 16,64,256 matrix_softmax

Each row: the layer (default initialisation, symmetric and general weighting) with a dense random incoming
gradient | with out.sum(); ratios against scaled_dot_product_attention as one head on (B, 1, T, dim) and on
(B, 1, T, dim/2) measured in the same run; best of three calls after one warm-up.
"""

import os
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from geoattn.nn import SymplecticAttention  # noqa: E402
def best(fn, reps=3):
    """The least of `reps` timings of `fn()` after one warm-up call, in seconds."""
    fn(); ts=[]
    for _ in range(reps):
        t=time.perf_counter(); fn(); ts.append(time.perf_counter()-t)
    return min(ts)
def fb(f, x, g):
    """A call of `f` on a fresh leaf copy of `x` and its backward (incoming gradient `g`, or of out.sum())."""
    def run():
        xx = x.detach().requires_grad_()
        out = f(xx)
        if g is None: out.sum().backward()
        else: out.backward(g)
    return run
def sd(w):
    """SDPA of the first `w` features of its input as one head."""
    def f(x):
        h = x[..., :w].unsqueeze(1)
        return F.scaled_dot_product_attention(h, h, h).squeeze(1)
    return f
dims = [int(a) for a in sys.argv[1].split(",")] if len(sys.argv) > 1 else [4, 8, 16]
Ts = [int(a) for a in sys.argv[2].split(",")] if len(sys.argv) > 2 else [16, 64, 256]
acts = sys.argv[3].split(",") if len(sys.argv) > 3 else [
    "matrix_softmax", "vector_softmax", "matrix_one_softmax", "vector_one_softmax"]
syms = [True, False]
print(f"{'dim':>4}{'T':>5} {'act':<20}{'sym':>5}{'ms':>9}{'x/sdpa(d)':>10}{'x/sdpa(d/2)':>12}  dense|sum")
for dim in dims:
    for T in Ts:
        B = 65536 // T
        torch.manual_seed(0)
        x = torch.randn(B, T, dim); g = torch.randn(B, T, dim)
        ref = {}
        for w in (dim, dim // 2):
            ref[w] = (best(fb(sd(w), x, torch.randn(B, T, w))), best(fb(sd(w), x, None)))
        full, half = ref[dim], ref[dim // 2]
        print(f"{dim:>4}{T:>5} sdpa d={dim}: {full[0]*1e3:.1f}|{full[1]*1e3:.1f} ms  "
              f"d/2: {half[0]*1e3:.1f}|{half[1]*1e3:.1f}", flush=True)
        for act in acts:
            for s in syms:
                layer = SymplecticAttention(dim, activation=act, symmetric=s)
                t = (best(fb(layer, x, g)), best(fb(layer, x, None)))
                print(f"{dim:>4}{T:>5} {act:<20}{str(s):>5}{t[0]*1e3:>6.1f}|{t[1]*1e3:<6.1f}"
                      f"{t[0]/full[0]:>5.2f}|{t[1]/full[1]:<5.2f}{t[0]/half[0]:>6.2f}|{t[1]/half[1]:<5.2f}", flush=True)

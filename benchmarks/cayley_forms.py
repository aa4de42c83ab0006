"""Exact forms of the Cayley forward pass against the batched LU solve, measured in one run.

    python benchmarks/cayley_forms.py [--quick] [--json PATH] [--threads N]

The Cayley kernel's forward is the generated batched LAPACK solve ``cayley_matrix``
(``torch.linalg.solve(I + C, I - C)``), the same call as the naive composition; only its backward is derived (two products). This
script records why: each form below computes the same matrix exactly in exact arithmetic,
and is timed against the solve (alternately, median of several runs) at B = 4096 and checked
for accuracy in float32 against a float64 solve, as ``max |error| / (T eps (1 + |C|_2))``:

* ``lu-chunked``: the same solve over chunks of 256 matrices (temporaries stay in cache);
* ``cholesky``: ``2 ((I - C)(I - C)^T)^{-1} (I - C) - I`` through a Cholesky factor and a
  triangular inverse (skew ``C`` only; the error grows like ``|C|^2``);
* ``gauss-jordan``: in-place elimination without pivoting, vectorised over the batch (for
  skew ``C`` every pivot of ``I + C`` is at least 1);
* ``block``: recursive 2 x 2 block inversion through Schur complements and batched products;
* ``adjugate`` (T = 3 only): ``2 adj(I + C) / det(I + C) - I`` from gathered entries;
* with ``--compile``, ``gauss-jordan-compiled``: the Gauss-Jordan form through
  ``torch.compile(dynamic=False)``, compiled once per (T, dtype) before timing (the compile
  time is printed, not counted).

Ratios below 1 mean the form is faster than the solve.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernels import timeit_pair, write_json  # noqa: E402  (puts the repository root on sys.path)

from geoattn.kernels import _generated as gen  # noqa: E402


#: the Cayley kernel's own forward: the generated batched solve (I + C)^{-1}(I - C)
lu = gen.cayley_matrix


def lu_chunked(c, size=256):
    out = torch.empty_like(c)
    for i in range(0, c.shape[0], size):
        out[i : i + size] = lu(c[i : i + size])
    return out


def _two_inverse_minus_eye(x):
    x.mul_(2)
    x.diagonal(dim1=-2, dim2=-1).sub_(1)
    return x


def cholesky(c):
    eye = torch.eye(c.shape[-1], dtype=c.dtype)
    r = eye - c
    low = torch.linalg.cholesky_ex(r @ r.mT)[0]
    inv_low = torch.linalg.solve_triangular(low, eye.expand_as(c), upper=False)
    return _two_inverse_minus_eye(inv_low.mT @ (inv_low @ r))


def gauss_jordan(c):
    x = c.clone()
    x.diagonal(dim1=-2, dim2=-1).add_(1)
    for k in range(x.shape[-1]):
        piv = 1 / x[..., k, k]
        row = x[..., k, :] * piv[..., None]
        col = x[..., :, k].clone()
        x.addcmul_(col[..., :, None], row[..., None, :], value=-1)
        x[..., k, :] = row
        x[..., :, k] = col * (-piv[..., None])
        x[..., k, k] = piv
    return _two_inverse_minus_eye(x)


def _block_inverse(m):
    n = m.shape[-1]
    if n == 1:
        return 1 / m
    h = n // 2
    a, b, e, d = m[..., :h, :h], m[..., :h, h:], m[..., h:, :h], m[..., h:, h:]
    ai = _block_inverse(a)
    x, y = ai @ b, e @ ai
    si = _block_inverse(d - e @ x)
    sy = si @ y
    top = torch.cat((ai + x @ sy, -(x @ si)), -1)
    return torch.cat((top, torch.cat((-sy, si), -1)), -2)


def block(c):
    m = c.clone()
    m.diagonal(dim1=-2, dim2=-1).add_(1)
    return _two_inverse_minus_eye(_block_inverse(m))


def _adjugate_index():
    # adj(M)_ij = M_{j+1,i+1} M_{j+2,i+2} - M_{j+1,i+2} M_{j+2,i+1}, indices mod 3
    cols = [[], [], [], []]
    for i in range(3):
        for j in range(3):
            for slot, (r, s) in enumerate(((1, 1), (2, 2), (1, 2), (2, 1))):
                cols[slot].append(3 * ((j + r) % 3) + (i + s) % 3)
    return torch.tensor(sum(cols, []))


_ADJ = _adjugate_index()


def adjugate(c):
    m = c.reshape(-1, 9) + torch.eye(3, dtype=c.dtype).reshape(9)
    g = m.index_select(1, _ADJ).view(-1, 4, 9)
    adj = g[:, 0] * g[:, 1] - g[:, 2] * g[:, 3]
    det = m[:, 0] * adj[:, 0] + m[:, 1] * adj[:, 3] + m[:, 2] * adj[:, 6]
    q = adj * (2 / det)[:, None]
    q[:, ::4] -= 1
    return q.view(c.shape)


FORMS = {"lu-chunked": lu_chunked, "cholesky": cholesky, "gauss-jordan": gauss_jordan, "block": block, "adjugate": adjugate}


def skew(B, T, dtype, scale, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(B, T, T, generator=g, dtype=torch.float64) * scale
    return ((m - m.mT) / T**0.5).to(dtype)


def accuracy(form, T, B, scale):
    """``max |form(C) - Cayley(C)| / (T eps (1 + |C|_2))`` in float32, reference in float64."""
    c = skew(B, T, torch.float64, scale, seed=1)
    want = lu(c)
    got = form(c.float()).double()
    norm = torch.linalg.matrix_norm(c, ord=2)
    err = (got - want).abs().amax(dim=(-2, -1)) / (T * torch.finfo(torch.float32).eps * (1 + norm))
    return float(err.max())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="B = 64, T in (3, 8), one repetition")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the results to PATH")
    parser.add_argument("--compile", action="store_true", help="also time the torch.compile'd Gauss-Jordan form")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    B, sizes = (64, (3, 8)) if args.quick else (4096, (3, 8, 16, 32))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {platform.processor() or platform.machine()}, B={B}")
    header = f"{'form':13s} {'dtype':8s} {'T':>3s} {'form ms':>9s} {'solve ms':>9s} {'ratio':>6s} {'err@1':>7s} {'err@100':>8s}"
    print(header)
    print("-" * len(header))
    rows = []
    for T in sizes:
        for dtype in (torch.float32, torch.float64):
            c = skew(B, T, dtype, 1.0)
            reps = 1 if args.quick else (15 if T <= 16 else 7)
            forms = dict(FORMS)
            if args.compile:
                torch._dynamo.reset()  # a fresh cache: each (T, dtype) is its own compiled graph
                start = time.perf_counter()
                forms["gauss-jordan-compiled"] = torch.compile(gauss_jordan, dynamic=False)
                forms["gauss-jordan-compiled"](c)
                print(f"(compiled gauss-jordan for T={T}, {dtype} in {time.perf_counter() - start:.1f} s)", flush=True)
            for name, form in forms.items():
                if name == "adjugate" and T != 3:
                    continue
                t_form, t_lu = timeit_pair(lambda: form(c), lambda: lu(c), reps)
                r = {"form": name, "dtype": str(dtype).replace("torch.", ""), "B": B, "T": T,
                     "form_fwd": t_form, "solve_fwd": t_lu, "ratio_fwd": t_form / t_lu}
                if dtype == torch.float32:
                    r["err_scale_1"] = accuracy(form, T, min(B, 512), 1.0)
                    r["err_scale_100"] = accuracy(form, T, min(B, 512), 100.0)
                rows.append(r)
                errs = f"{r['err_scale_1']:7.2f} {r['err_scale_100']:8.2f}" if "err_scale_1" in r else f"{'':7s} {'':8s}"
                print(f"{name:13s} {r['dtype']:8s} {T:3d} {1e3 * t_form:9.2f} {1e3 * t_lu:9.2f} {r['ratio_fwd']:6.2f} {errs}", flush=True)
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

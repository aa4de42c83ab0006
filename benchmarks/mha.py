"""The MultiHeadAttention table of ``benchmarks/layers.py``: the layer against ``torch.nn.MultiheadAttention``.

At a fixed number of tokens ``B * T`` (65,536 by default), for each ``T`` and ``dim`` of the table and ``n_heads``
heads (2 by default): forward, and forward+backward with both incoming gradients (a dense random one, and the
expanded one of ``out.sum()``), of ``geoattn.nn.MultiHeadAttention(dim, n_heads)`` and of
``torch.nn.MultiheadAttention(dim, n_heads, batch_first=True)``, both default-initialised and in training mode as a
user builds them (torch's biases and output projection included), torch's called with ``need_weights=False`` (its
form without the weights), each with the same mask in its own convention:

* ``none``;
* ``causal``: ``is_causal=True`` for ours; for torch's, the causal boolean ``attn_mask`` with ``is_causal=True``
  (the hint under which it hands ``is_causal`` to SDPA);
* ``bool``: a random ``(T, T)`` boolean mask (each pair kept with probability 0.7, the diagonal always), ``True``
  where a query attends for ours, its complement for torch's;
* ``additive``: a ``(T, T)`` standard normal float mask, added to the scores by both;
* ``padding``: a ``(B, T)`` key padding mask, each key padded with probability 0.2 (key 0 never).

Timing on a shared machine: the two modules alternate within every repeat (after one warm-up call each), the times
are medians over the repeats, and each ratio is the median of the per-repeat ratios, so that a load that changes
during the run weighs on both alike. Memory: on CPU the bytes of the distinct storages saved for backward plus the
output (a tensor that several operations save, as the input of three projections, counts once; the main table
counts every saved tensor); on CUDA the main table's peak allocated memory of forward+backward.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from geoattn.nn import MultiHeadAttention

__all__ = ["MASKS", "mask_kwargs", "paired", "saved_bytes", "mha_rows"]

#: the mask kinds of the table
MASKS = ("none", "causal", "bool", "additive", "padding")


def mask_kwargs(kind: str, B: int, T: int, device, gen: torch.Generator) -> tuple[dict, dict]:
    """The keyword arguments of mask ``kind`` for ``MultiHeadAttention`` and for ``torch.nn.MultiheadAttention``."""
    if kind == "none":
        return {}, {}
    if kind == "causal":
        causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()
        return {"is_causal": True}, {"attn_mask": ~causal, "is_causal": True}
    if kind == "bool":
        keep = (torch.rand(T, T, generator=gen) < 0.7) | torch.eye(T, dtype=torch.bool)
        keep = keep.to(device)
        return {"mask": keep}, {"attn_mask": ~keep}
    if kind == "additive":
        add = torch.randn(T, T, generator=gen).to(device)
        return {"mask": add}, {"attn_mask": add}
    if kind == "padding":
        pad = torch.rand(B, T, generator=gen) < 0.2
        pad[:, 0] = False
        pad = pad.to(device)
        return {"key_padding_mask": pad}, {"key_padding_mask": pad}
    raise ValueError(f"Expected a mask kind in {MASKS}. Got {kind!r}.")


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def paired(fa: Callable[[], object], fb: Callable[[], object], reps: int, device) -> tuple[float, float, float]:
    """``(median time of fa, median time of fb, median of the per-repeat ratios fa / fb)``, the two alternating."""
    fa(), fb()
    _sync(device)
    ta, tb = [], []
    for _ in range(reps):
        for fn, times in ((fa, ta), (fb, tb)):
            t = time.perf_counter()
            fn()
            _sync(device)
            times.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb), statistics.median(a / b for a, b in zip(ta, tb))


def saved_bytes(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> int:
    """The bytes of the distinct storages ``fn(x)`` saves for backward, plus its output's."""
    storages = {}

    def pack(t):
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x)
    storages[out.untyped_storage().data_ptr()] = out.untyped_storage().nbytes()
    return sum(storages.values())


def timed_calls(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> dict[str, Callable[[], None]]:
    """The three timed calls of ``fn``: forward without autograd, forward+backward with a dense random incoming
    gradient, and forward+backward of ``out.sum()``."""
    leaf = x.clone().requires_grad_()
    grad = torch.randn_like(x)

    def fwd():
        with torch.no_grad():
            fn(x)

    def fwd_bwd():
        leaf.grad = None
        fn(leaf).backward(grad)

    def fwd_bwd_sum():
        leaf.grad = None
        fn(leaf).sum().backward()

    return {"fwd": fwd, "fwd_bwd": fwd_bwd, "fwd_bwd_sum": fwd_bwd_sum}


def mha_rows(device, *, tokens: int, lengths, dims, heads: int, reps: int,
             memory: Callable, line: Callable) -> list[dict]:
    """Measure the table; print each pair of rows with ``line`` (the main table's printer) and return the rows.

    ``memory(fn, leaf, device)`` is the main table's memory count, used on CUDA (on CPU: :func:`saved_bytes`).
    The layer's rows carry
    ``reference = "torch.nn.MultiheadAttention"`` and the ratios to torch's row of the same shape and mask.
    """
    rows = []
    for T in lengths:
        B = max(1, tokens // T)
        for dim in dims:
            torch.manual_seed(0)
            ours = MultiHeadAttention(dim, heads, device=device)
            ref = torch.nn.MultiheadAttention(dim, heads, batch_first=True, device=device)
            x = torch.randn(B, T, dim, device=device)
            gen = torch.Generator().manual_seed(T * 1000 + dim)
            for kind in MASKS:
                ours_kw, ref_kw = mask_kwargs(kind, B, T, device, gen)

                def f_ours(z, kw=ours_kw):
                    return ours(z, **kw)

                def f_ref(z, kw=ref_kw):
                    return ref(z, z, z, need_weights=False, **kw)[0]

                a_modes, b_modes = timed_calls(f_ours, x), timed_calls(f_ref, x)
                m_ours, m_ref, ratio = {}, {}, {}
                for mode in a_modes:
                    m_ours[mode], m_ref[mode], ratio[f"ratio_{mode}"] = paired(a_modes[mode], b_modes[mode], reps,
                                                                               device)
                leaf = x.clone().requires_grad_()
                count = memory if device.type == "cuda" else (lambda fn, z, _device: saved_bytes(fn, z))
                m_ours["memory"], m_ref["memory"] = count(f_ours, leaf, device), count(f_ref, leaf, device)
                ratio["ratio_memory"] = m_ours["memory"] / m_ref["memory"]
                shape = {"B": B, "dim": dim, "T": T, "heads": heads, "mask": kind, "tokens": tokens}
                ref_row = {"layer": "torch.nn.MultiheadAttention", **shape, **m_ref}
                row = {"layer": "MultiHeadAttention", "reference": "torch.nn.MultiheadAttention", **shape, **m_ours,
                       **ratio}
                rows += [ref_row, row]
                line(f"torch MHA {kind}", B, dim, T, m_ref)
                line(f"MultiHeadAttention {kind}", B, dim, T, m_ours, row)
    return rows

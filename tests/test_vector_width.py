"""The generated C kernels at every vector width (Note [vector width] in geoattn.codegen.cprinter): each kernel
compiled with the width forced to 16, 32 and 64 bytes gives the default build's results bit for bit, and no
generated file declares a vector type of a fixed width."""

from __future__ import annotations

import os
import re

import pytest
import torch

from geoattn.kernels import _exp_action as ea
from geoattn.kernels import _native_exp_action as na

KERNELS = os.path.join(os.path.dirname(__file__), os.pardir, "geoattn", "kernels")
#: (bytes, registers) of the widths the kernels are compiled for: SSE/NEON, AVX2, AVX-512
WIDTHS = [(16, 16), (32, 16), (64, 32)]
#: the generated files whose vector types take their width from GEOATTN_VBYTES
CONVERTED = ["_native_exp_action.c"]


def forced(tmp_path, source: str, vbytes: int, vregs: int) -> str:
    """A copy of the C file ``source`` compiled at ``vbytes`` bytes per vector and ``vregs`` registers."""
    with open(source) as fh:
        text = fh.read()
    path = tmp_path / f"w{vbytes}_{os.path.basename(source)}"
    path.write_text(f"#define GEOATTN_VBYTES {vbytes}\n#define GEOATTN_VREGS {vregs}\n" + text)
    return str(path)


def fixed_widths(text: str) -> list[str]:
    """The lines of a C text declaring a vector type whose width is a literal (not from GEOATTN_VBYTES)."""
    return [ln for ln in text.splitlines() if re.search(r"vector_size\(\s*\d+\s*\)", ln)]


@pytest.mark.parametrize("name", CONVERTED)
def test_no_fixed_width_vector_types(name):
    with open(os.path.join(KERNELS, name)) as fh:
        assert fixed_widths(fh.read()) == []


def test_fixed_width_check_fails_on_a_literal_width():
    # negative control of the check above
    assert fixed_widths("typedef float vr __attribute__((vector_size(64)));") != []
    assert fixed_widths("typedef float vr __attribute__((vector_size(GEOATTN_VBYTES)));") == []


@pytest.mark.skipif(not na.exp_action_native_status(4)[0], reason="native kernel not built")
@pytest.mark.parametrize("vbytes,vregs", WIDTHS)
@pytest.mark.parametrize("dtype,k,T", [(torch.float32, 4, 21), (torch.float32, 8, 40), (torch.float64, 3, 17)])
def test_exp_action_every_width_bit_identical(tmp_path, vbytes, vregs, dtype, k, T):
    g = torch.Generator().manual_seed(T)
    a = torch.randn(5, T, T, generator=g, dtype=torch.float64)
    S = (a - a.mT).to(dtype).contiguous()
    x = torch.randn(5, T, k, generator=g).to(dtype)
    gy = torch.randn(5, T, k, generator=g).to(dtype)
    rho = ea.norm_bound(S)
    deg = ea.chebyshev_degree(rho, torch.finfo(dtype).eps / 2)
    top = int(deg.max())
    c = ea.chebyshev_coefficients(rho, top, start=top + 40)
    c = torch.where(torch.arange(top + 1)[None] <= deg[:, None], c, torch.zeros_like(c)).to(dtype).contiguous()
    r = rho.to(dtype)
    lib = na.build(k, na._native._REALS[dtype][0], forced(tmp_path, na.SOURCE, vbytes, vregs))
    assert not isinstance(lib, str), lib
    ref = na.native_forward(S, x, r, c, deg)
    assert torch.equal(na.native_forward(S, x, r, c, deg, lib), ref)
    for got, want in zip(na.native_backward(S, x, r, c, deg, gy, lib), na.native_backward(S, x, r, c, deg, gy)):
        assert torch.equal(got, want)

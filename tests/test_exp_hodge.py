"""The closed-form exponential of skew matrices of size <= 4 (claim exp_skew.hodge_form, kernel exp_skew_so4)."""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from geoattn.codegen.printer import CodegenError, TorchKernelPrinter
from geoattn.codegen.soa import SoAKernelPrinter
from geoattn.kernels import _generated as gen
from geoattn.kernels._exp import exp_skew_closed
from geoattn.symbolic import expressions as ex
from geoattn.symbolic.claims.kernels_spectral import so4_derivation, so4_identity
from geoattn.symbolic.evidence import ProofFailed
from geoattn.symbolic.nodes import Hodge4
from geoattn.symbolic.strategies import search_counterexample

F32, F64 = torch.float32, torch.float64


def eps(dtype):
    return torch.finfo(dtype).eps


def skew(n, k, scale, dtype=F64):
    w = torch.randn(n, k, k, dtype=dtype) * scale
    return w - w.mT


# -- the claim and its negative controls -------------------------------------------------------------------------


def test_the_derivation_verifies_every_step_but_the_lemma():
    der = so4_derivation().run()
    assert [s.verified for s in der.steps] == [True, True, None, True, True, True, True]
    assert [s.lemma for s in der.lemmas] == ["exp_commuting"]


def _broken(name, expr):
    return [(n, expr if n == name else e) for n, e in ex.EXP_SO4]


@pytest.mark.parametrize("mutant", ["no Hodge star", "sign of a half-turn", "sine in place of sinc",
                                    "square of the other half", "scaled square"])
def test_negative_control_broken_bindings_fail_the_proof_and_are_refuted(mutant):
    H, Sp, Sp2, I4 = (sp.MatrixSymbol(n, 4, 4) for n in ("H", "Sp", "Sp2", "I"))
    theta = sp.sqrt(-sp.Trace(Sp2)) / 2
    if mutant == "no Hodge star":
        bad = _broken("H", ex.S4)
    elif mutant == "sign of a half-turn":
        bad = _broken("Ep", sp.cos(theta) * sp.Identity(4) - sp.sinc(theta) * Sp)
    elif mutant == "sine in place of sinc":
        bad = _broken("Ep", sp.cos(theta) * sp.Identity(4) + sp.sin(theta) * Sp)
    elif mutant == "square of the other half":  # a multiple of I, but not S+^2: the angle is wrong
        bad = _broken("Sp2", sp.MatrixSymbol("Sm", 4, 4) ** 2)
    else:
        bad = _broken("Sp2", 4 * Sp**2)
    with pytest.raises(ProofFailed):
        so4_derivation(bad).run()
    assert search_counterexample(so4_identity(bad), [{"T": 4}], seed=0, points=3) is not None
    assert search_counterexample(so4_identity(), [{"T": 4}], seed=0, points=1) is None


def test_hodge_node():
    with pytest.raises(ValueError, match="Expected a 4 x 4 matrix"):
        Hodge4(sp.MatrixSymbol("X", 3, 3))
    S = sp.Matrix(4, 4, lambda i, j: sp.Symbol(f"m{i}{j}"))  # any matrix: the star sees its skew part
    star = Hodge4.explicit(S)
    assert star == -star.T and Hodge4.explicit(star) == (S - S.T) / 2  # an involution on skew matrices
    printer = SoAKernelPrinter({ex.S4: "S"}, {}, like="S")
    with pytest.raises(CodegenError):
        printer._print(Hodge4(ex.S4))


def test_printed_hodge_matches_the_interpreter():
    """The torch code the printer emits for the star, run on a general (not skew) matrix, against its explicit
    meaning; and the kernel printed from the bindings against torch's matrix exponential."""
    torch.manual_seed(0)
    S = torch.randn(3, 4, 4, dtype=F64)
    printer = TorchKernelPrinter({ex.S4: "S"}, {}, like="S")
    code = printer._print(Hodge4(ex.S4))
    assert not printer.lines  # one expression, no temporaries
    got = eval(code, {"torch": torch, "S": S})
    for i in range(3):
        want = Hodge4.explicit(sp.Matrix(S[i].tolist()))
        assert torch.allclose(got[i], torch.tensor(want.tolist(), dtype=F64), rtol=0, atol=4 * eps(F64))
    Ss = S - S.mT
    assert torch.allclose(gen.exp_skew_so4(Ss), torch.linalg.matrix_exp(Ss), rtol=0, atol=64 * eps(F64))


# -- the runtime ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [1e-8, 1e-3, 1.0, 30.0])
def test_matches_matrix_exp(k, scale, dtype):
    torch.manual_seed(k)
    S = skew(64, k, scale)
    want = torch.linalg.matrix_exp(S)
    got = exp_skew_closed(S.to(dtype)).double()
    # exp(S) moves by |S| eps under a relative eps perturbation of S (the rounding of the input itself)
    assert (got - want).abs().max() <= 16 * k * (1 + 2 * scale * k) * eps(dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("k", [2, 3, 4])
def test_orthogonal_at_every_norm(k, dtype):
    """One formula from 1e-6 to 1e6: the rotation stays orthogonal to a few eps (a form built on
    torch.sinc(x / pi) drifts by about |x| eps)."""
    torch.manual_seed(5)
    for scale in (1e-6, 1.0, 1e3, 1e6):
        E = exp_skew_closed(skew(64, k, scale, dtype))
        assert (E.mT @ E - torch.eye(k, dtype=dtype)).abs().max() <= 8 * k * eps(dtype)
        assert torch.allclose(torch.linalg.det(E.double()), torch.ones(64, dtype=F64), atol=16 * k * eps(dtype))


def test_sin_over_is_exact_where_torch_sinc_is_not():
    x = torch.linspace(1e3, 2e3, 1001, dtype=F32)
    want = torch.sin(x.double())  # x sin_over(x) against sin(x) at the same float32 points
    assert (x.double() * gen.sin_over(x).double() - want).abs().max() <= 4 * eps(F32)
    assert gen.sin_over(torch.zeros(3)).eq(1).all() and gen.sin_over(torch.tensor([1e-30])).eq(1).all()
    # negative control: torch.sinc(x / pi) rounds its argument twice; x times it misses sin(x) by about x eps
    scaled = x.double() * torch.sinc(x / torch.pi).double()
    assert (scaled - want).abs().max() > 100 * eps(F32)


def test_errors_and_batch_independence():
    with pytest.raises(ValueError, match="Expected skew matrices of size at most 4"):
        exp_skew_closed(torch.zeros(2, 5, 5))
    S = skew(7, 4, 3.0)
    alone = exp_skew_closed(S[:1])
    S[1:] *= 1e5
    assert torch.equal(exp_skew_closed(S)[:1], alone)

"""The public structure checks: they pass on maps with the structure and fail, saying by how much, on maps without."""

import subprocess
import sys

import pytest
import torch

from geoattn import testing as T

f64 = torch.float64


def test_jacobian_of_linear_map_is_its_matrix():
    W = torch.randn(3, 3, dtype=f64)
    x = torch.randn(4, 2, 3, dtype=f64)
    J = T.jacobian(lambda y: y @ W, x)
    # row-major flattening of (T, d): J = I_T (x) W^T
    assert torch.equal(J, torch.kron(torch.eye(2, dtype=f64), W.mT.contiguous()).expand(4, 6, 6))
    assert torch.equal(T.jacobian(lambda y: y @ W, x, vectorize=False), J)


def test_volume_check_passes_and_fails():
    x = torch.randn(3, 2, 3, dtype=f64)
    Q = torch.linalg.qr(torch.randn(3, 3, dtype=f64)).Q
    Q = Q * torch.sign(torch.linalg.det(Q))  # det +1
    T.assert_volume_preserving(lambda y: y @ Q, x)
    assert torch.allclose(T.jacobian_determinant(lambda y: 2 * y, x), torch.full((3,), 64.0, dtype=f64))
    with pytest.raises(AssertionError, match=r"Expected \|det J - 1\| <= .* Got 63"):
        T.assert_volume_preserving(lambda y: 2 * y, x)
    # a volume change of 1e-9 is far above the float64 tolerance and is caught
    s = 1 + 1e-9 / 6
    with pytest.raises(AssertionError, match="times the tolerance"):
        T.assert_volume_preserving(lambda y: s * (y @ Q), x)


def test_singular_jacobian_is_not_waved_through():
    """A rank-deficient map has cond(J) = inf; the check must fail rather than pass with an infinite tolerance."""
    x = torch.randn(2, 3, dtype=f64)
    P = torch.diag(torch.tensor([1.0, 1.0, 0.0], dtype=f64))
    with pytest.raises(AssertionError, match="conditioned well enough"):
        T.assert_volume_preserving(lambda y: y @ P, x)
    with pytest.raises(AssertionError, match="Got 1"):
        T.assert_volume_preserving(lambda y: y @ P, x, atol=1e-12)


def test_symplectic_form():
    O = T.symplectic_form(8, dim=4)
    assert torch.equal(O, -O.mT)
    assert torch.equal(O @ O, -torch.eye(8, dtype=f64))
    with pytest.raises(ValueError, match="Expected an even phase-space dimension"):
        T.symplectic_form(9, dim=3)


def test_symplectic_check_passes_and_fails():
    x = torch.randn(3, 4, 6, dtype=f64)  # seq_len 4, n = 3
    S = torch.randn(4, 4, dtype=f64)

    def shear(M):
        return lambda y: torch.cat([y[..., :3], y[..., 3:] + M @ y[..., :3]], -1)

    T.assert_symplectic(shear(S + S.mT), x)
    # k * N * eps with N = 24 phase-space coordinates, scaled by the shear's size squared
    tol = 16 * 24 * torch.finfo(f64).eps * (1 + float((S + S.mT).abs().max())) ** 2
    assert T.symplecticity_error(shear(S + S.mT), x).max() <= tol
    with pytest.raises(AssertionError, match=r"J\^T Omega J - Omega"):
        T.assert_symplectic(shear(S - S.mT), x)  # non-symmetric shear: volume-preserving, not symplectic
    T.assert_volume_preserving(shear(S - S.mT), x)
    with pytest.raises(ValueError, match="even phase-space"):
        T.symplecticity_error(lambda y: y, torch.randn(2, 3, 5, dtype=f64))


def test_orthogonality_check_scales_with_dtype():
    Q = torch.linalg.qr(torch.randn(5, 6, 6, dtype=f64)).Q
    T.assert_orthogonal(Q)
    T.assert_orthogonal(Q.float())  # float32 rounding is within the float32 tolerance
    with pytest.raises(AssertionError, match="M\\^T M - I"):
        T.assert_orthogonal(Q + 1e-10)  # but not within the float64 one
    assert T.orthogonality_error(2 * Q).min() > 1
    with pytest.raises(ValueError, match="Expected square"):
        T.orthogonality_error(torch.randn(2, 3))
    with pytest.raises(TypeError, match="Expected a floating"):
        T.orthogonality_error(torch.ones(3, 3, dtype=torch.int64))


def test_bad_inputs():
    with pytest.raises(ValueError, match="batch-first"):
        T.jacobian(lambda y: y, torch.randn(3))
    with pytest.raises(TypeError, match="floating dtype"):
        T.jacobian(lambda y: y, torch.ones(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="as many numbers"):
        T.jacobian_determinant(lambda y: y[..., :2], torch.randn(2, 3))


def test_module_is_checked_in_float64_without_touching_it():
    layer = torch.nn.Linear(3, 3, bias=False)
    x = torch.randn(2, 3)
    J = T.jacobian(layer, x)
    assert J.dtype == f64 and layer.weight.dtype == torch.float32
    assert torch.equal(J[0], layer.weight.detach().double())


def test_volume_failure_prints_the_determinant_with_enough_digits():
    """A det of 1 + 2e-6 fails the float64 check; the message must show the deviation, not round it to 1."""
    x = torch.randn(2, 2, 3, dtype=f64)
    s = (1 + 2e-6) ** (1 / 6)  # six numbers per sample: det J = s^6
    with pytest.raises(AssertionError) as info:
        T.assert_volume_preserving(lambda y: s * y, x)
    msg = str(info.value)
    assert "det J ranges over [1.000002" in msg, msg
    assert "[1, 1]" not in msg
    # the bounds read back as the determinants that were computed
    lo, hi = msg.split("det J ranges over [")[1].split("]")[0].split(", ")
    det = T.jacobian_determinant(lambda y: s * y, x)
    assert (float(lo), float(hi)) == (float(det.min()), float(det.max()))


def _probe_modules(statement: str, names: tuple[str, ...]) -> set[str]:
    """Run ``statement`` in a fresh interpreter; the names of ``names`` that are in its sys.modules afterwards."""
    code = f"import sys\n{statement}\nprint(' '.join(n for n in {names!r} if n in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.split())


LAYERS_AND_MODELS = ("geoattn.nn", "geoattn.models", "sympy")


def test_testing_imports_neither_layers_nor_models():
    """geoattn.testing holds the public checks only: importing it loads neither geoattn.nn nor geoattn.models
    (nor SymPy), and assert_preserves reads the ledger ids from the generated table, not from the claims engine
    (torch.func itself may load SymPy, so the engine's package is what is checked there)."""
    assert _probe_modules("import geoattn.testing", LAYERS_AND_MODELS) == set()
    run = ("import torch, geoattn.testing as T\nfrom geoattn.nn.linear_symplectic import LinearSymplecticAttention\n"
           "T.assert_preserves(LinearSymplecticAttention(3).double(), torch.randn(2, 3, 4, dtype=torch.float64))")
    engine = ("geoattn.symbolic", "geoattn._ledger_ids", "geoattn.models")
    assert _probe_modules(run, engine) == {"geoattn._ledger_ids"}
    # negative controls: the probe sees the modules where they are imported (the cases import both packages;
    # the ledger loads the engine and SymPy)
    assert _probe_modules("import geoattn.models._cases", LAYERS_AND_MODELS) == {"geoattn.nn", "geoattn.models"}
    assert _probe_modules("import geoattn.testing, geoattn.symbolic.ledger as L; L.all_claims()",
                          (*LAYERS_AND_MODELS, *engine)) == {"sympy", "geoattn.symbolic"}

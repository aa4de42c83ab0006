"""The public structure checks: they pass on maps with the structure and fail, saying by how much, on maps without."""

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

"""geoattn.models: each model's stated structure, checked untrained and trained, with negative controls."""

from __future__ import annotations

import pytest
import torch

from geoattn.experiments import TrainConfig, train
from geoattn.models import (
    GradientLayer,
    LinearSymplecticTransformer,
    ResNetIntegrator,
    StandardTransformerIntegrator,
    SympNet,
    SympNetIntegrator,
    TriangularResidual,
    VolumePreservingFeedForward,
    VolumePreservingTransformer,
    rollout,
)
from geoattn.nn import LayerDtypeError, LayerShapeError
from geoattn.systems import CoupledOscillator, RigidBody, TrajectoryWindows
from geoattn.testing import assert_symplectic, assert_volume_preserving, jacobian_determinant


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _trained(model, data, epochs=15):
    x, y = data
    train(model, x, y, TrainConfig(epochs=epochs, batch_size=32, lr=1e-2), progress=False)
    return model


@pytest.fixture(scope="module")
def rigid_data():
    body = RigidBody()
    traj = body.trajectories(body.initial_conditions(3), t_end=4.0)
    return TrajectoryWindows(traj, 3, dtype=torch.float32).tensors()


@pytest.fixture(scope="module")
def osc_data():
    osc = CoupledOscillator()
    traj = osc.trajectories(osc.initial_conditions(4), t_end=3.0)
    return TrajectoryWindows(traj, 3, dtype=torch.float32).tensors()


# --------------------------------------------------------------------------- building blocks


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("activation", ["tanh", "sigmoid", None])
def test_triangular_residual_volume_preserving(lower, activation):
    layer = TriangularResidual(4, lower=lower, activation=activation)
    with torch.no_grad():
        layer.weight.mul_(3).add_(1)  # large weights: det 1 holds whatever L is
        if layer.bias is not None:
            layer.bias.normal_()
    assert_volume_preserving(layer, _x(5, 4))


def test_triangular_residual_without_mask_fails():
    """Negative control: a full (not strictly triangular) weight is not volume-preserving."""
    layer = TriangularResidual(3, lower=True)
    layer.mask.fill_(True)
    with torch.no_grad():
        layer.weight.normal_()
    with pytest.raises(AssertionError, match="det J"):
        assert_volume_preserving(layer, _x(4, 3))


def test_feedforward_volume_preserving_not_symplectic():
    ff = VolumePreservingFeedForward(4, n_blocks=2, n_linear=2)
    x = _x(3, 5, 4)
    assert_volume_preserving(ff, x)
    with pytest.raises(AssertionError, match="Omega"):
        assert_symplectic(ff, x)


@pytest.mark.parametrize("update", ["p", "q"])
def test_gradient_layer_symplectic(update):
    layer = GradientLayer(6, 10, update=update)
    with torch.no_grad():
        layer.bias.normal_()
    x = _x(4, 2, 6)
    assert_symplectic(layer, x)
    assert_volume_preserving(layer, x)


def test_gradient_layer_untied_weights_fail():
    """Negative control (ledger models.gradient_layer_symplectic.untied): K^T diag(a sigma') W with W != K is not."""

    class Untied(GradientLayer):
        def __init__(self):
            super().__init__(4, 6)
            self.other = torch.nn.Parameter(torch.randn(6, 2))

        def potential_gradient(self, q):
            return (self.scale * torch.tanh(q @ self.weight.mT + self.bias)) @ self.other

    layer = Untied()
    with pytest.raises(AssertionError, match="Omega"):
        assert_symplectic(layer, _x(3, 1, 4))


def test_sympnet_symplectic():
    assert_symplectic(SympNet(4, n_layers=3, upscaling_dim=8), _x(3, 2, 4))


# --------------------------------------------------------------------------- whole models, untrained and trained


def test_vpt_skew_volume_preserving_untrained_and_trained(rigid_data):
    torch.manual_seed(0)
    model = VolumePreservingTransformer(3, 3, depth=2)
    x = rigid_data[0][:16]
    assert_volume_preserving(model, x)
    _trained(model, rigid_data)
    assert_volume_preserving(model, x)


def test_vpt_arbitrary_not_volume_preserving_untrained_and_trained(rigid_data):
    """Negative control: the arbitrary weighting is refuted (vp.map_volume_preserving.arbitrary)."""
    torch.manual_seed(0)
    model = VolumePreservingTransformer(3, 3, depth=2, skew_sym=False)
    x = rigid_data[0][:16]
    with pytest.raises(AssertionError, match="det J"):
        assert_volume_preserving(model, x)
    _trained(model, rigid_data)
    with pytest.raises(AssertionError, match="det J"):
        assert_volume_preserving(model, x)


def test_vpt_not_symplectic():
    model = VolumePreservingTransformer(4, 3)
    with pytest.raises(AssertionError, match="Omega"):
        assert_symplectic(model, _x(3, 3, 4))


def test_lst_symplectic_untrained_and_trained(osc_data):
    torch.manual_seed(0)
    model = LinearSymplecticTransformer(4, 3, n_sympnet=2, depth=2)
    x = osc_data[0][:16]
    assert_symplectic(model, x)
    assert_volume_preserving(model, x)
    _trained(model, osc_data)
    assert_symplectic(model, x)
    assert_volume_preserving(model, x)


@pytest.mark.parametrize("data", ["rigid_data", "osc_data"])
def test_baselines_preserve_nothing_trained(data, request):
    """Negative controls: the unstructured baselines fail both checks once trained."""
    x, y = request.getfixturevalue(data)
    d = x.shape[-1]
    torch.manual_seed(0)
    for model in (StandardTransformerIntegrator(d, 3, transformer_dim=8), ResNetIntegrator(d, 3, width=8)):
        _trained(model, (x, y), epochs=3)
        with pytest.raises(AssertionError, match="det J"):
            assert_volume_preserving(model, x[:8])
        if d % 2 == 0:
            with pytest.raises(AssertionError, match="Omega"):
                assert_symplectic(model, x[:8])


def test_sympnet_integrator_symplectic_trained(osc_data):
    x, y = osc_data
    one_step = TrajectoryWindows(CoupledOscillator().trajectories(CoupledOscillator().initial_conditions(3),
                                                                  t_end=2.0), 1, dtype=torch.float32).tensors()
    model = _trained(SympNetIntegrator(4, n_layers=2), one_step)
    assert_symplectic(model, one_step[0][:8])


def test_training_reduces_loss(rigid_data):
    torch.manual_seed(0)
    model = VolumePreservingTransformer(3, 3)
    x, y = rigid_data
    hist = train(model, x, y, TrainConfig(epochs=20, batch_size=32, lr=1e-2), progress=False)
    assert hist["loss"][-1] < 0.5 * hist["loss"][0]


# --------------------------------------------------------------------------- rollout


@pytest.mark.parametrize("n_steps", [1, 3, 7, 10])
def test_rollout_shapes_and_iteration(n_steps):
    model = VolumePreservingTransformer(3, 3, dtype=torch.float64)
    w = _x(2, 3, 3).double()
    out = rollout(model, w, n_steps)
    assert out.shape == (2, n_steps, 3)
    with torch.no_grad():
        manual = torch.cat([model(w), model(model(w)), model(model(model(w))), model(model(model(model(w))))], 1)
    torch.testing.assert_close(out, manual[:, :n_steps])
    assert model.rollout(w[0], n_steps).shape == (n_steps, 3)  # unbatched


def test_rollout_one_step_model():
    model = ResNetIntegrator(3)
    out = model.rollout(_x(4, 1, 3), 5)
    assert out.shape == (4, 5, 3)


# --------------------------------------------------------------------------- bad configurations


@pytest.mark.parametrize(
    "build",
    [
        lambda: LinearSymplecticTransformer(3, 4),
        lambda: GradientLayer(5, 4),
        lambda: SympNet(3),
        lambda: SympNetIntegrator(7),
    ],
)
def test_odd_sys_dim_rejected(build):
    with pytest.raises(LayerShapeError, match="even sys_dim"):
        build()


@pytest.mark.parametrize(
    "model",
    [
        VolumePreservingTransformer(3, 3),
        LinearSymplecticTransformer(4, 3),
        StandardTransformerIntegrator(3, 3),
        ResNetIntegrator(3, 3),
    ],
    ids=type,
)
def test_seq_len_mismatch_rejected(model):
    d = model.sys_dim
    with pytest.raises(LayerShapeError, match=r"seq_len = 3 .*Got shape \(2, 4, "):
        model(torch.randn(2, 4, d))
    with pytest.raises(LayerShapeError, match="features"):
        model(torch.randn(2, 3, d + 2))
    with pytest.raises(LayerDtypeError, match="dtype"):
        model(torch.randn(2, 3, d, dtype=torch.float64))


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: VolumePreservingTransformer(3, 3, depth=0), "depth"),
        (lambda: VolumePreservingFeedForward(3, n_linear=-1), "n_linear"),
        (lambda: VolumePreservingTransformer(3, 3, activation="cosh"), "activation"),
        (lambda: LinearSymplecticTransformer(4, 3, n_sympnet=-1), "n_sympnet"),
        (lambda: StandardTransformerIntegrator(3, 3, transformer_dim=10, n_heads=3), "divide"),
        (lambda: GradientLayer(4, 4, update="x"), "update"),
        (lambda: rollout(ResNetIntegrator(3), torch.randn(1, 1, 3), 0), "n_steps"),
    ],
)
def test_bad_configurations(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_state_dict_round_trip(tmp_path):
    model = LinearSymplecticTransformer(4, 3)
    torch.save(model.state_dict(), tmp_path / "m.pt")
    other = LinearSymplecticTransformer(4, 3)
    other.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    x = _x(2, 3, 4)
    torch.testing.assert_close(model(x), other(x), rtol=0, atol=0)


def test_dtype_and_device_arguments():
    m = VolumePreservingTransformer(3, 3, dtype=torch.float64, device="cpu")
    assert all(p.dtype == torch.float64 for p in m.parameters())
    x = _x(2, 3, 3).double()
    d = jacobian_determinant(m, x)
    assert d.dtype == torch.float64


def test_rollout_bound_marks_divergence():
    """A sample that leaves the ball is NaN from then on and is no longer fed; the others are untouched."""

    class Doubling(ResNetIntegrator):
        def forward(self, x):
            self._check(x)
            return 2 * x

    model = Doubling(2, 1)
    w = torch.tensor([[[1.0, 0.0]], [[1e-3, 0.0]]])
    out = model.rollout(w, 6, bound=10.0)
    assert torch.isnan(out[0, 3:]).all() and torch.isfinite(out[0, :3]).all()  # 16 > 10 at the 4th step
    torch.testing.assert_close(out[1, :, 0], 1e-3 * 2.0 ** torch.arange(1, 7))
    torch.testing.assert_close(rollout(model, w, 6), torch.cat([w * 2.0**k for k in range(1, 7)], 1))
    with pytest.raises(LayerShapeError, match="positive bound"):
        model.rollout(w, 2, bound=0.0)


@pytest.mark.parametrize("positional", [False, True])
def test_standard_transformer_permutation_equivariance(positional):
    """The docstring's promise: without a positional embedding the map commutes with permuting time steps."""
    torch.manual_seed(0)
    model = StandardTransformerIntegrator(3, 4, transformer_dim=8, positional=positional)
    with torch.no_grad():
        if positional:
            model.positional.normal_()
    x = _x(2, 4, 3)
    perm = torch.tensor([2, 0, 3, 1])
    same = torch.allclose(model(x)[:, perm], model(x[:, perm]), atol=64 * 12 * torch.finfo(torch.float32).eps)
    assert same is (not positional)

r"""Sequence-to-sequence integrators: a window of states in, the next window out."""

from __future__ import annotations

from types import MappingProxyType

import torch
from torch import nn

from .._docstrings import fill_doc
from ..nn import LinearSymplecticAttention, VolumePreservingAttention
from ..nn._common import NOTHING_PRESERVED as _NOTHING
from ..nn._common import LayerShapeError, check_positive_int, check_sequence
from ._common import check_even_sys_dim, check_nonnegative_int
from .feedforward import VolumePreservingFeedForward
from .sympnet import GradientLayer

__all__ = [
    "Integrator",
    "VolumePreservingTransformer",
    "LinearSymplecticTransformer",
    "rollout",
]


class Integrator(nn.Module):
    r"""Base of the models that map a window of ``seq_len`` states to the next window.

    ``forward`` takes ``(batch, seq_len, sys_dim)`` (or ``(seq_len, sys_dim)``)
    holding :math:`z^{(t)}, \dots, z^{(t + T - 1)}` and returns the same shape
    holding the prediction of :math:`z^{(t + T)}, \dots, z^{(t + 2T - 1)}`.
    :meth:`rollout` iterates it.
    """

    sys_dim: int
    seq_len: int
    #: what the map preserves / is refuted to preserve: property -> ledger ids
    #: (see :func:`geoattn.testing.assert_preserves`); subclasses declare theirs
    preserves = _NOTHING
    does_not_preserve = _NOTHING
    #: the attributes :meth:`extra_repr` shows, in order
    _repr_fields: tuple[str, ...] = ("sys_dim", "seq_len")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, seq_len, sys_dim)``; returns the predicted next window, the same shape."""
        self._check(x)
        return self._window_map(x)

    def _window_map(self, x: torch.Tensor) -> torch.Tensor:
        """The map of a checked window (the layers in ``self.layers`` by default)."""
        return self.layers(x)

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in self._repr_fields)

    def _check(self, x: torch.Tensor) -> None:
        p = next(self.parameters())
        check_sequence(self, "x", x, dim=self.sys_dim, seq_len=self.seq_len, dtype=p.dtype, device=p.device)

    def _dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    @torch.no_grad()
    def rollout(self, window: torch.Tensor, n_steps: int, *, bound: float | None = None) -> torch.Tensor:
        """Predict ``n_steps`` states after ``window`` by feeding each predicted window back in.

        Parameters
        ----------
        window : Tensor
            ``(batch, seq_len, sys_dim)``, the initial window.
        n_steps : int
            how many states to predict.
        bound : float, optional
            radius beyond which a sample counts as diverged (its remaining
            states are NaN).

        Returns
        -------
        Tensor
            ``(batch, n_steps, sys_dim)``: the states that follow ``window``.
        """
        return rollout(self, window, n_steps, bound=bound)


def rollout(model: Integrator, window: torch.Tensor, n_steps: int, *, bound: float | None = None) -> torch.Tensor:
    """Iterate a window-to-window ``model`` from ``window`` for ``n_steps`` states (see :meth:`Integrator.rollout`).

    With ``bound``, a sample whose state leaves the ball of that radius (or
    stops being finite) is marked as diverged: its remaining states are NaN
    and it is no longer fed to the model (whose kernels may refuse
    non-finite input).
    """
    check_positive_int("n_steps", n_steps)
    model._check(window)
    if bound is not None and not bound > 0:
        raise LayerShapeError(f"Expected a positive bound. Got {bound!r}.")
    out, x = [], window
    done = 0
    alive = torch.ones(window.shape[:-2], dtype=torch.bool, device=window.device)
    with torch.no_grad():
        while done < n_steps:
            y = model(torch.where(alive[..., None, None], x, window) if bound is not None else x)
            if bound is not None:
                ok = torch.isfinite(y).all(-1).all(-1) & (y.norm(dim=-1) <= bound).all(-1)
                alive = alive & ok
                y = torch.where(alive[..., None, None], y, torch.full_like(y, float("nan")))
            out.append(y)
            x = y
            done += y.shape[-2]
    return torch.cat(out, dim=-2)[..., :n_steps, :]


@fill_doc
class VolumePreservingTransformer(Integrator):
    r"""The volume-preserving transformer: ``depth`` blocks of attention and a volume-preserving feed-forward.

    .. math::

        \Phi = (F_L\circ A_L)\circ\cdots\circ(F_1\circ A_1),

    :math:`A_i` a :class:`~geoattn.nn.VolumePreservingAttention` over the
    sequence and :math:`F_i` a
    :class:`~geoattn.models.VolumePreservingFeedForward` on every time step.

    What the whole map preserves:

    * ``skew_sym=True``: volume. Each :math:`F_i` has unit triangular
      Jacobians and each :math:`A_i` is volume-preserving
      (``vp.map_volume_preserving.skew``), so :math:`\det J_\Phi = 1` at
      every input window;
    * ``skew_sym=False``: **not** volume — the arbitrary-weighting attention
      is not (``vp.map_volume_preserving.arbitrary`` is refuted), and neither
      is the composition in general;
    * neither is symplectic.

    Parameters
    ----------
    sys_dim, seq_len : int
    n_blocks, n_linear : int
        of each :class:`~geoattn.models.VolumePreservingFeedForward`.
    depth : int
        number of attention + feed-forward blocks.
    activation : str or nn.Module
        :math:`\sigma` of the feed-forward blocks' nonlinear layers (a name in :data:`ACTIVATIONS` or a module).
    skew_sym : bool
        skew or arbitrary weighting in the attention layers.
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import assert_volume_preserving
    >>> model = VolumePreservingTransformer(3, 3, depth=2)
    >>> assert_volume_preserving(model, torch.randn(4, 3, 3))
    """

    @property
    def preserves(self) -> dict[str, tuple[str, ...]]:
        """What the whole map preserves: property -> ledger ids (see :func:`geoattn.testing.assert_preserves`)."""
        return {"volume": ("vp.map_volume_preserving.skew", "models.triangular_residual_det_one")} if self.skew_sym \
            else {}

    @property
    def does_not_preserve(self) -> dict[str, tuple[str, ...]]:
        """Properties the ledger refutes for the whole map: property -> ledger ids."""
        return {} if self.skew_sym else {"volume": ("vp.map_volume_preserving.arbitrary",)}

    _repr_fields = ("sys_dim", "seq_len", "depth", "skew_sym")

    def __init__(self, sys_dim: int, seq_len: int, *, n_blocks: int = 1, n_linear: int = 1, depth: int = 2,
                 activation="tanh", skew_sym: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.sys_dim = check_positive_int("sys_dim", sys_dim)
        self.seq_len = check_positive_int("seq_len", seq_len)
        self.depth = check_positive_int("depth", depth)
        self.skew_sym = bool(skew_sym)
        kw = {"device": device, "dtype": dtype}
        layers = []
        for _ in range(depth):
            layers.append(VolumePreservingAttention(sys_dim, skew_sym=skew_sym, **kw))
            layers.append(VolumePreservingFeedForward(sys_dim, n_blocks=n_blocks, n_linear=n_linear,
                                                      activation=activation, **kw))
        self.layers = nn.Sequential(*layers)



@fill_doc
class LinearSymplecticTransformer(Integrator):
    r"""The linear symplectic transformer: linear symplectic attention and SympNet gradient layers.

    Each of the ``depth`` blocks is a :class:`~geoattn.nn.LinearSymplecticAttention`
    updating :math:`q` followed by ``n_sympnet`` :class:`~geoattn.models.GradientLayer`
    layers (alternating ``q``, ``p``) on every time step, then one updating
    :math:`p` followed by ``n_sympnet`` more (the order of
    GeometricMachineLearning.jl).

    What the whole map preserves: the symplectic product structure
    :math:`\hat{\mathbb{J}}` of seed 004 (every factor is symplectic for it:
    ``lsa.map_symplectic`` and the symmetric Jacobian of a gradient shear),
    hence volume. It is not orthogonal.

    Parameters
    ----------
    sys_dim : int
        :math:`2n`, even.
    seq_len : int
    n_sympnet : int
        gradient layers after each attention layer.
    depth : int
    upscaling_dim : int, optional
        width of the gradient layers (default ``2 * sys_dim``).
    activation : str or nn.Module
        :math:`\sigma` of the gradient layers (a name in :data:`ACTIVATIONS` or a module).
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import assert_symplectic
    >>> model = LinearSymplecticTransformer(4, 3)
    >>> assert_symplectic(model, torch.randn(2, 3, 4))
    """

    preserves = MappingProxyType({"symplectic": ("lsa.map_symplectic", "models.gradient_layer_symplectic",
                                "symplectic.product_structure")})
    _repr_fields = ("sys_dim", "seq_len", "depth", "n_sympnet")

    def __init__(self, sys_dim: int, seq_len: int, *, n_sympnet: int = 2, depth: int = 1,
                 upscaling_dim: int | None = None, activation="tanh", device=None, dtype=None) -> None:
        super().__init__()
        m = set_block_sizes(self, sys_dim, seq_len, depth, n_sympnet, upscaling_dim)
        kw = {"device": device, "dtype": dtype}
        self.layers = symplectic_blocks(lambda update: LinearSymplecticAttention(seq_len, update=update, **kw),
                                        sys_dim, depth, n_sympnet, m, activation, kw)


def set_block_sizes(module: nn.Module, sys_dim, seq_len, depth, n_sympnet, upscaling_dim) -> int:
    """Check and set ``sys_dim`` (even), ``seq_len``, ``depth`` and ``n_sympnet`` on a symplectic transformer;
    return the gradient layers' width (``upscaling_dim``, default ``2 * sys_dim``)."""
    module.sys_dim = check_even_sys_dim(check_positive_int("sys_dim", sys_dim))
    module.seq_len = check_positive_int("seq_len", seq_len)
    module.depth = check_positive_int("depth", depth)
    module.n_sympnet = check_nonnegative_int("n_sympnet", n_sympnet)
    return 2 * module.sys_dim if upscaling_dim is None else check_positive_int("upscaling_dim", upscaling_dim)


def symplectic_blocks(attention, sys_dim: int, depth: int, n_sympnet: int, width: int, activation,
                      kw: dict) -> nn.Sequential:
    """``depth`` blocks of ``attention("q")``, ``n_sympnet`` gradient layers, ``attention("p")``, ``n_sympnet`` more.

    The layout of the symplectic transformers (Note [layer order]); every factor is symplectic.
    """
    # Note [layer order]: each attention shear is followed by its own gradient layers (q-attention,
    # n_sympnet gradient layers, p-attention, n_sympnet gradient layers), as GeometricMachineLearning.jl
    # orders them. Two adjacent linear attention shears compose to [[I, S], [S, I + S^2]] per eigenvalue s
    # of the symmetric weighting S: trace 2 + s^2 > 2, a hyperbolic (expanding) map whenever S != 0,
    # which only the gradient layers after it can undo.
    layers = []
    for _ in range(depth):
        for update in ("q", "p"):
            layers.append(attention(update))
            for i in range(n_sympnet):
                layers.append(GradientLayer(sys_dim, width, update="qp"[i % 2], activation=activation, **kw))
    return nn.Sequential(*layers)

"""Adversarial inputs over every public kernel and layer: each case must give a correct result or a clear error.

A case is one (subject, input) pair. Its outcome is

* ``correct``: the result is finite (for finite input), has the right shape and agrees with a float64
  reference computed from the same input to within a backward-error tolerance
  ``k * n * eps(dtype) * growth`` (relative to the scale of the result; ``growth`` is how much the
  problem amplifies a rounding of its input), and the structured subjects keep what they promise (an
  orthogonal matrix; the norm of every feature column of the sequence), which no magnitude loosens;
* ``unverified``: finite and of the right shape, but the problem is so ill-conditioned at that
  magnitude (tolerance above 1 %) that the reference cannot tell right from wrong, and the subject
  promises no structure to check instead (softmax attention with scores of size 1e4 and more);
* ``clear error``: a ``ValueError`` or ``TypeError`` (geoattn's error classes derive from them) whose
  message says what was expected (``Expected ...``, ``expected ...``);
* ``obscure``: any other exception;
* ``silently wrong``: a result that fails its check.

For non-finite input, a clear error or a result that is non-finite exactly in the affected samples
counts as correct. A second set runs every subject under ``torch.func.vmap`` (must equal the batched
call), on the ``meta`` device (shapes only) and on integer input (refused, or equal to the float64
result). The summary tests print the counts; none may be obscure or silently wrong.
"""

from __future__ import annotations

import collections

import pytest
import torch

import geoattn.kernels as K
import geoattn.nn as N

EPS = {torch.float32: torch.finfo(torch.float32).eps, torch.float64: torch.finfo(torch.float64).eps}
K_TOL = 64.0


def _skew(B, T, scale, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    S = torch.randn(B, T, T, generator=g, dtype=torch.float64)
    return ((S - S.mT) * scale).to(dtype)


def _seq(B, T, d, scale, dtype, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, T, d, generator=g, dtype=torch.float64) * scale).to(dtype)


def _orthogonal_ok(Q, dtype):
    n = Q.shape[-1]
    err = (Q.mT.double() @ Q.double() - torch.eye(n, dtype=torch.float64)).abs().amax()
    return bool(err <= K_TOL * n * EPS[dtype])


def _close(out, ref, dtype, n, growth):
    """Agreement with the float64 reference to a backward-error tolerance: ``k * n * eps(dtype) * growth``, where
    ``growth`` is how much the problem amplifies a relative rounding of its input (the norm of a skew input; the
    square of a sequence's scale, which enters the correlation quadratically). At large magnitudes the structure
    checks, which do not grow, carry the test."""
    scale = ref.abs().amax().clamp_min(torch.finfo(torch.float64).tiny)
    return bool(((out.double() - ref).abs().amax() / scale) <= K_TOL * n * EPS[dtype] * growth)


def _norms_kept(x, y, dtype):
    """An orthogonal reweighting keeps the norm of every feature column (over time) of each sample."""
    nx, ny = x.double().norm(dim=-2), y.double().norm(dim=-2)
    return bool(((nx - ny).abs() <= K_TOL * x.shape[-2] * EPS[dtype] * nx.amax(-1, keepdim=True)).all())


# --- subjects: (name, build(dtype) -> callable(input) -> output, reference(input64) -> output64, kind of input,
#                structure check(input, output, dtype) -> bool)
def _layer_subject(name, factory, structured, growth):
    def build(dtype):
        torch.manual_seed(0)
        layer = factory(dtype)
        ref = factory(torch.float64)
        ref.load_state_dict({k: v.double() for k, v in layer.state_dict().items()})
        return layer, ref

    def check(x, y, dtype):
        return _norms_kept(x, y, dtype) if structured else True

    return name, build, "seq", check, growth, structured


def _cayley_reference(C):
    """(I - C)(I + C)^{-1} by one LAPACK solve in float64: independent of the kernel's code paths."""
    eye = torch.eye(C.shape[-1], dtype=C.dtype)
    return torch.linalg.solve((eye + C).mT, (eye - C).mT).mT


def _semisep_subject(dtype):
    """The nested block solve with leaves of two rows (so that T = 6 takes two levels and padding), against the
    float64 T x T solve."""
    from geoattn.kernels._semisep import vp_arbitrary_full, vp_arbitrary_linear

    A = torch.randn(4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64) / 4
    return (lambda x: vp_arbitrary_linear(x, A.to(x.dtype), leaf=2)), (lambda x: vp_arbitrary_full(x, A))


def NORM(size, n):  # the Cayley transform and the exponential of a skew matrix: its norm
    return max(1.0, size) * n


def QUADRATIC(size, n):  # correlations and softmax scores are quadratic in a sequence's scale
    return max(1.0, size) ** 2


def LINEAR(size, n):  # a map linear in its input
    return 1.0


SUBJECTS = [
    ("cayley", lambda dtype: (K.cayley, _cayley_reference), "skew", lambda S, Q, dtype: _orthogonal_ok(Q, dtype),
     NORM, True),
    ("exp_skew", lambda dtype: (K.exp_skew, torch.linalg.matrix_exp), "skew",
     lambda S, Q, dtype: _orthogonal_ok(Q, dtype), NORM, True),
    _layer_subject("VolumePreservingAttention", lambda dt: N.VolumePreservingAttention(4, dtype=dt), True, QUADRATIC),
    _layer_subject("VolumePreservingAttention(exp)",
                   lambda dt: N.VolumePreservingAttention(4, activation="exp", dtype=dt), True, QUADRATIC),
    _layer_subject("VolumePreservingAttention(arbitrary)",
                   lambda dt: N.VolumePreservingAttention(4, skew_sym=False, dtype=dt), True, QUADRATIC),
    ("vp_arbitrary_linear(leaf=2)", _semisep_subject, "seq", _norms_kept, QUADRATIC, True),
    _layer_subject("OrthonormalAttention", lambda dt: N.OrthonormalAttention(4, dtype=dt), True, QUADRATIC),
    _layer_subject("LinearSymplecticAttention", lambda dt: N.LinearSymplecticAttention(6, dtype=dt), False, LINEAR),
    _layer_subject("MultiHeadAttention", lambda dt: N.MultiHeadAttention(4, 2, dtype=dt), False, QUADRATIC),
    _layer_subject("Attention", lambda dt: N.Attention(4, dtype=dt), False, QUADRATIC),
]


# --- inputs: (name, make(kind, dtype) -> tensor, finite?)
MAGNITUDES = [1e-8, 1.0, 1e2, 1e4, 1e6]


def _base(kind, dtype, scale=1.0, B=3, T=6):
    return _skew(B, T, scale, dtype) if kind == "skew" else _seq(B, T, 4, scale, dtype)


def _with(kind, dtype, value):
    x = _base(kind, dtype).clone()
    x[1, 0, 1] = value
    if kind == "skew":
        x[1, 1, 0] = -value
    return x


INPUTS = (
    [(f"magnitude {m:g}", (lambda m: lambda kind, dtype: _base(kind, dtype, m))(m), True) for m in MAGNITUDES]
    + [
        ("mixed magnitudes in one batch", lambda kind, dtype: torch.cat(
            [_base(kind, dtype, 1.0, B=2), _base(kind, dtype, 1e5, B=1)]), True),
        ("T = 1", lambda kind, dtype: _base(kind, dtype, T=1), True),
        ("empty batch", lambda kind, dtype: _base(kind, dtype, B=0), True),
        ("unbatched", lambda kind, dtype: _base(kind, dtype)[0], True),
        ("non-contiguous", lambda kind, dtype: _base(kind, dtype).mT.contiguous().mT
         if kind == "seq" else _base(kind, dtype).transpose(-1, -2).neg(), True),
        ("expanded batch", lambda kind, dtype: _base(kind, dtype, B=1).expand(3, -1, -1), True),
        ("nan in one sample", lambda kind, dtype: _with(kind, dtype, float("nan")), False),
        ("inf in one sample", lambda kind, dtype: _with(kind, dtype, float("inf")), False),
    ]
)
DTYPES = [torch.float32, torch.float64]


def _clear(exc: BaseException) -> bool:
    return isinstance(exc, (ValueError, TypeError)) and "xpected" in str(exc)


def run_case(subject, input_case, dtype) -> str:
    name, build, kind, check, growth_of, structured = subject
    _, make, finite = input_case
    fn, ref = build(dtype)
    x = make(kind, dtype)
    try:
        with torch.no_grad():
            y = fn(x)
    except Exception as exc:  # noqa: BLE001 - the classification is the point
        return "clear error" if _clear(exc) else f"obscure: {type(exc).__name__}: {str(exc)[:120]}"
    if y.shape != x.shape or y.dtype != dtype:
        return f"silently wrong: shape {tuple(y.shape)} dtype {y.dtype}"
    if x.numel() == 0:
        return "correct"
    bad = ~torch.isfinite(x).flatten(-2).all(-1)
    with torch.no_grad():
        r = ref(x.double())
    if not finite:
        ok_rows = ~bad
        if not bool(torch.isfinite(y[ok_rows]).all()):
            return "silently wrong: a non-finite input spread to other samples"
        y, r, x = y[ok_rows], r[ok_rows], x[ok_rows]
    if not bool(torch.isfinite(y).all()):
        return "silently wrong: non-finite output for finite input"
    n = x.shape[-2]
    if not check(x, y, dtype):
        return "silently wrong: structure lost"
    size = float(x.double().abs().amax()) if x.numel() else 1.0
    growth = growth_of(size, n)
    if not _close(y, r, dtype, n * x.shape[-1], growth):
        return "silently wrong: differs from the float64 reference"
    if K_TOL * n * x.shape[-1] * EPS[dtype] * growth > 1e-2 and not structured:
        return "unverified"
    return "correct"


CASES = [(s, i, d) for s in SUBJECTS for i in INPUTS for d in DTYPES]


@pytest.mark.parametrize("subject, input_case, dtype", CASES,
                         ids=[f"{s[0]}-{i[0]}-{str(d)[6:]}" for s, i, d in CASES])
def test_adversarial_case(subject, input_case, dtype):
    outcome = run_case(subject, input_case, dtype)
    assert outcome in ("correct", "clear error", "unverified"), outcome


def test_adversarial_summary(capsys):
    counts = collections.Counter(run_case(s, i, d).split(":")[0] for s, i, d in CASES)
    with capsys.disabled():
        print(f"\nadversarial inputs: {len(CASES)} tried, " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    assert counts["correct"] + counts["clear error"] + counts["unverified"] == len(CASES)
    assert counts["correct"] > 4 * (counts["clear error"] + counts["unverified"])  # results, not refusals


def test_harness_catches_a_silently_wrong_kernel():
    """Negative control: a kernel that loses orthogonality at large magnitudes, and one that leaks NaN across
    the batch, are classified as silently wrong; one that raises a bare RuntimeError is obscure."""
    def drifting(S):
        Q = K.cayley(S)
        return Q * (1 + 1e-3 * (S.abs().amax() > 10))

    def leaking(S):
        Q = K.cayley(torch.nan_to_num(S))
        return Q + S.sum() * 0

    def crashing(S):
        raise RuntimeError("boom")

    check = SUBJECTS[0][3]
    big = next(i for i in INPUTS if i[0] == "magnitude 10000")
    nan = [i for i in INPUTS if i[0] == "nan in one sample"][0]
    assert run_case(("drift", lambda dt: (drifting, K.cayley), "skew", check, NORM, True), big,
                    torch.float64).startswith("silently wrong")
    assert run_case(("leak", lambda dt: (leaking, K.cayley), "skew", check, NORM, True), nan,
                    torch.float64).startswith("silently wrong")
    assert run_case(("crash", lambda dt: (crashing, K.cayley), "skew", check, NORM, True), big,
                    torch.float64).startswith("obscure")


@pytest.mark.parametrize("subject", [s for s in SUBJECTS if s[2] == "seq"], ids=lambda s: s[0])
def test_harness_catches_a_one_percent_error_wherever_it_counts_correct(subject):
    """Negative control per layer: its output off by 1 % must never be classified correct (every case the real
    layer passes as correct would be caught; the unverified ones are reported as such, not as correct)."""
    name, build, kind, check, growth, structured = subject

    def perturbed(dtype):
        layer, ref = build(dtype)
        return (lambda x: layer(x) * 1.01), ref

    for input_case in INPUTS:
        for dtype in DTYPES:
            if input_case[0] == "empty batch" or run_case(subject, input_case, dtype) != "correct":
                continue
            outcome = run_case((name, perturbed, kind, check, growth, structured), input_case, dtype)
            assert outcome != "correct", (name, input_case[0], dtype)


# --- devices, transforms and non-floating input: one case per (subject, transform)
def _meta(fn):
    return fn.to("meta") if isinstance(fn, torch.nn.Module) else fn


def run_transform_case(subject, transform: str) -> str:
    name, build, kind, check, growth_of, structured = subject
    fn, ref = build(torch.float64)
    x = _base(kind, torch.float64)
    try:
        with torch.no_grad():
            if transform == "vmap":
                y, expected = torch.func.vmap(fn)(x), fn(x)
            elif transform == "meta":
                y = _meta(fn)(x.to("meta"))
                ok = y.device.type == "meta" and y.shape == x.shape
                return "correct" if ok else f"silently wrong: meta result {y.device} {tuple(y.shape)}"
            else:  # integer input: refused, or computed as the float64 reference of the same numbers
                xi = (x * 10).round().long()
                y, expected = fn(xi), ref(xi.double())
    except Exception as exc:  # noqa: BLE001 - the classification is the point
        return "clear error" if _clear(exc) else f"obscure: {type(exc).__name__}: {str(exc)[:120]}"
    n = x.shape[-2]
    if y.shape != expected.shape or not _close(y, expected, torch.float64, n * x.shape[-1], 1.0):
        return f"silently wrong: {transform} result differs"
    return "correct"


TRANSFORMS = ["vmap", "meta", "integer input"]
TRANSFORM_CASES = [(s, t) for s in SUBJECTS for t in TRANSFORMS]


@pytest.mark.parametrize("subject, transform", TRANSFORM_CASES, ids=[f"{s[0]}-{t}" for s, t in TRANSFORM_CASES])
def test_transform_case(subject, transform):
    outcome = run_transform_case(subject, transform)
    assert outcome in ("correct", "clear error"), outcome


def test_transform_summary(capsys):
    counts = collections.Counter(run_transform_case(s, t).split(":")[0] for s, t in TRANSFORM_CASES)
    with capsys.disabled():
        print(f"\ndevices, transforms, integer input: {len(TRANSFORM_CASES)} tried, "
              + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    assert counts["correct"] + counts["clear error"] == len(TRANSFORM_CASES)


def test_transform_harness_catches_a_batch_coupled_kernel():
    """Negative control: a kernel whose samples see each other gives a different result under vmap."""
    def coupled(S):
        return K.cayley(S) + S.abs().mean() * 0.01  # under vmap the mean is one sample's

    check = SUBJECTS[0][3]
    outcome = run_transform_case(("coupled", lambda dt: (coupled, _cayley_reference), "skew", check, NORM, True),
                                 "vmap")
    assert outcome.startswith("silently wrong")

"""The physical systems the models learn: the rigid body and the implicit midpoint rule.

The rigid-body benchmark of the volume-preserving transformer is stated as
``z' = (A z2 z3, B z1 z3, C z1 z2)`` with ``A = 1, B = 1/2, C = -1/2``,
with trajectories on the unit sphere. The flow is divergence-free for every
``A, B, C``; ``|z|^2`` is conserved only when ``A + B + C = 0``, which the
stated constants violate. Euler's equations, with ``A = (I2 - I3)/(I2 I3)``
and its cyclic shifts, always satisfy it.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatrixSymbol

from .. import algebra as alg
from ..claim import Claim, corrected
from ..proof import identity
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes, same

__all__ = ["CLAIMS", "field"]

SRC = "rigid-body benchmark of the volume-preserving transformer"

a_, b_, c_ = sp.symbols("A B C", real=True)
z1, z2, z3 = sp.symbols("z1 z2 z3", real=True)


def field(A, B, C, z):
    """The rigid body's vector field (A z2 z3, B z1 z3, C z1 z2) at the column ``z``."""
    return sp.Matrix([A * z[1] * z[2], B * z[0] * z[2], C * z[0] * z[1]])


# ---------------------------------------------------------------------------
# rigid_body.divergence_free
# ---------------------------------------------------------------------------


def _divergence_derivation() -> Derivation:
    z = sp.Matrix([z1, z2, z3])
    f = field(a_, b_, c_, z)
    div = sp.Add(*(sp.Derivative(f[i], z[i]) for i in range(3)), evaluate=False)
    return Derivation(
        assumptions=[r"f(z) = (A z_2z_3,\ B z_1z_3,\ C z_1z_2),\ A, B, C\in\mathbb{R}"],
        steps=[
            Step(div, sp.Integer(0), r"\partial f_i/\partial z_i = 0: f_i does not depend on z_i", identity()),
        ],
        remark=r"\nabla\cdot f = 0\text{: the flow preserves volume (Liouville) for every } A, B, C",
        conclusion=sp.Eq(div, 0, evaluate=False),
    )


# ---------------------------------------------------------------------------
# rigid_body.sphere_invariant (as stated) and its corrected form
# ---------------------------------------------------------------------------


def _invariant_identity(constants) -> MatrixIdentity:
    def variables(s):
        out = {"z": alg.general("z", 3, 1)}
        if constants is None:
            out["k"] = alg.general("k", 2, 1)  # A, B free; C = -A - B
        return out

    def residual(size, z, k=None):
        A, B, C = constants if constants is not None else (k[0], k[1], -k[0] - k[1])
        return sp.expand((z.T * field(A, B, C, z))[0, 0])

    name = "z . f(z)" + ("" if constants is None else f" with (A, B, C) = {constants}")
    return MatrixIdentity(name, variables=variables, residual=residual)


def _invariant_derivation() -> Derivation:
    t = sp.Symbol("t", real=True)
    zt = [sp.Function(nm, real=True)(t) for nm in ("z_1", "z_2", "z_3")]
    f = field(a_, b_, c_, zt)
    half_norm = sp.Derivative(sp.Add(*(zi**2 for zi in zt)) / 2, t)
    rate = sp.expand(sum((zt[i] * f[i] for i in range(3)), sp.Integer(0)))
    collected = (a_ + b_ + c_) * zt[0] * zt[1] * zt[2]
    return Derivation(
        assumptions=[r"\dot z = f(z)", r"A + B + C = 0"],
        facts={
            "z' = f(z)": {sp.Derivative(zt[i], t): f[i] for i in range(3)},
            "A + B + C = 0": {c_: -a_ - b_},
        },
        steps=[
            Step(half_norm, rate, r"chain rule: \tfrac{d}{dt}\tfrac12|z|^2 = z^T\dot z, then \dot z = f(z)",
                 identity(facts=("z' = f(z)",))),
            Step(rate, collected, "collect z_1z_2z_3", identity(facts=())),
            Step(collected, 0, "A + B + C = 0", identity(facts=("A + B + C = 0",))),
        ],
        remark=r"|z|^2 \text{ is conserved when } A + B + C = 0 \text{ (and only then, for a flow through a point "
        r"with } z_1z_2z_3\neq0)",
        conclusion=sp.Eq(half_norm, 0, evaluate=False),
    )


HALF = sp.Rational(1, 2)


# ---------------------------------------------------------------------------
# midpoint.quadratic_invariant
# ---------------------------------------------------------------------------


def _midpoint_derivation() -> Derivation:
    m = sp.Symbol("m", integer=True, positive=True)
    z0, z1v, fm, mid = (MatrixSymbol(s, m, 1) for s in ("z_0", "z_1", "f_m", "m"))
    h = sp.Symbol("h", positive=True)
    zero = sp.ZeroMatrix(1, 1)
    lhs = z1v.T * z1v - z0.T * z0
    expanded = z1v.T * z1v + z1v.T * z0 - z0.T * z1v - z0.T * z0
    factored = (z1v - z0).T * (z1v + z0)
    return Derivation(
        assumptions=[r"z_1 = z_0 + h\,f_m,\ m = \tfrac12(z_0 + z_1),\ f_m = f(m),\ m^Tf(m) = 0 \text{ for all } m"],
        facts={
            # z_1 = z_0 + h f_m and z_0 + z_1 = 2m, solved for z_0 and z_1
            "midpoint step": {z0: mid - h * fm / 2, z1v: mid + h * fm / 2},
            "m^T f(m) = 0": {fm.T * mid: zero},
        },
        steps=[
            Step(lhs, expanded, r"add z_1^Tz_0 - z_0^Tz_1 = 0 (a 1x1 matrix equals its transpose)",
                 identity((z1v.T * z0, z0.T * z1v), facts=())),
            Step(expanded, factored, "factor", identity(facts=())),
            Step(factored, 2 * h * fm.T * mid, r"z_1 - z_0 = h f_m,\ z_1 + z_0 = 2m",
                 identity(facts=("midpoint step",))),
            Step(2 * h * fm.T * mid, zero, r"m^Tf(m) = 0 (the field conserves |z|^2)",
                 identity(facts=("m^T f(m) = 0",))),
        ],
        remark=r"|z_1|^2 = |z_0|^2\text{: the implicit midpoint rule keeps every quadratic invariant of such a field}",
        conclusion=sp.Eq(lhs, zero, evaluate=False),
    )


def _midpoint_identity() -> MatrixIdentity:
    # the rigid body with C = -A - B: solve for z1 is implicit, so check the equivalent statement
    # |z1|^2 - |z0|^2 = (z1 - z0).(z1 + z0) with z1 - z0 = h f(m) at an arbitrary midpoint m, z0 = m - h f(m)/2
    def variables(s):
        return {"m": alg.general("m", 3, 1), "k": alg.general("k", 3, 1)}

    def residual(size, m, k):
        A, B, h = k[0], k[1], k[2]
        f = field(A, B, -A - B, m)
        z0, z1 = m - h * f / 2, m + h * f / 2
        return sp.expand((z1.T * z1 - z0.T * z0)[0, 0])

    return MatrixIdentity("|z1|^2 - |z0|^2 for a midpoint step of the rigid body", variables=variables,
                          residual=residual)


_RIGID_BODY_SPHERE_INVARIANT = Claim(
    id="rigid_body.sphere_invariant",
    title="rigid body with A=1, B=1/2, C=-1/2 stays on the sphere",
    statement="The flow of z' = (A z2 z3, B z1 z3, C z1 z2) with A = 1, B = 1/2, C = -1/2 conserves |z|^2, "
    "so trajectories from the unit sphere stay on it.",
    latex=r"A = 1,\ B = \tfrac12,\ C = -\tfrac12:\quad \tfrac{d}{dt}|z|^2 = 0",
    source=SRC,
    expected=Level.REFUTED,
    checker=Policy(identity=_invariant_identity((1, HALF, -HALF)), search=at_sizes({"n": 3}), points=3),
)


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="rigid_body.divergence_free",
        title="rigid-body flow is divergence-free",
        statement="The vector field (A z2 z3, B z1 z3, C z1 z2) has zero divergence, so its flow preserves volume.",
        latex=r"\nabla\cdot(Az_2z_3,\ Bz_1z_3,\ Cz_1z_2) = 0",
        source=SRC,
        expected=Level.PROVED,
        checker=Policy(prove=_divergence_derivation),
    ),
    _RIGID_BODY_SPHERE_INVARIANT,
    corrected(_RIGID_BODY_SPHERE_INVARIANT, Claim(
        id="rigid_body.sphere_invariant.corrected",
        title="rigid body stays on the sphere iff A + B + C = 0",
        statement="The flow conserves |z|^2 when A + B + C = 0, as Euler's equations give for any moments of "
        "inertia (A = (I2 - I3)/(I2 I3) and cyclic); geoattn.systems.RigidBody defaults to I = (2, 1, 2/3), "
        "(A, B, C) = (1/2, -1, 1/2).",
        latex=r"A + B + C = 0 \implies \tfrac{d}{dt}|z|^2 = 2(A + B + C)z_1z_2z_3 = 0",
        expected=Level.PROVED,
        checker=Policy(
            identity=_invariant_identity(None), search=at_sizes({"n": 3}), points=3, prove=_invariant_derivation
        ),
    )),
    Claim(
        id="midpoint.quadratic_invariant",
        title="implicit midpoint keeps |z|^2",
        statement="A step of the implicit midpoint rule z1 = z0 + h f((z0 + z1)/2) keeps |z|^2 when z . f(z) = 0, "
        "so the generated rigid-body trajectories stay on the unit sphere up to the Newton tolerance.",
        latex=r"z_1 = z_0 + hf(\tfrac{z_0 + z_1}2),\ z^Tf(z) \equiv 0 \implies |z_1|^2 = |z_0|^2",
        source="geoattn.systems.RigidBody (implicit midpoint, dt = 0.2)",
        expected=Level.PROVED,
        checker=Policy(identity=_midpoint_identity(), search=at_sizes({"n": 3}), points=3, prove=_midpoint_derivation),
    ),
]

r"""Operations, backends and routes: the one table that says how each kernel call is computed.

An **operation** (:class:`Operation`) is one verified computation, such as ``vp_attention`` or ``cayley``: it binds
and checks its arguments (:attr:`Operation.bind`) and lists its **routes** (:class:`Route`) in order of
preference. A route is a form of the computation (an exact form the ledger verifies: the closed-form Gram solve,
the QR form, the ``T x T`` form, ...) on a **backend** (:class:`Backend`: ``"eager"`` torch operations, ``"native"``
C kernels printed from the verified bindings). Each route says, for the bound arguments, whether it serves and if
not why (:attr:`Route.when`); the first route that serves computes the result. Decisions that a route makes per
sample (a residual check that sends a sample to a pivoted solve, a norm above which a sample takes an
eigendecomposition) stay inside the route, where a per-sample decision belongs, and are named in its
:attr:`Route.per_sample` so that the table shows them.

:func:`explain` returns the route a call takes and, for every other route, why it did not serve, as torch's
``MultiheadAttention`` records why its fast path was not taken. ``with backend("eager"):`` forces a backend: routes
on other backends are passed over, and a call that no route of that backend can serve raises
:class:`~geoattn.errors.BackendError` with the reasons.

Adding an operation or a backend is an addition, not an edit spread over the package:
:func:`register_operation` and :func:`register_backend` put them in :data:`OPERATIONS` and :data:`BACKENDS`, and
:func:`explain`, :func:`backend` and :func:`dispatch` serve them from then on.

Examples
--------
>>> import torch
>>> from geoattn import kernels
>>> x = torch.randn(8, 16, 4)
>>> A = torch.randn(4, 4); A = A - A.T
>>> print(kernels.explain("vp_attention", x, A).route.form)
gram-closed
>>> with kernels.backend("eager"):
...     print(kernels.explain("vp_attention", x, A).route.backend)
eager
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Iterator

from ..errors import BackendError, OptionError

__all__ = ["Backend", "Route", "Operation", "Call", "Explanation", "BACKENDS", "OPERATIONS", "register_backend",
           "register_operation", "backend", "forced_backend", "explain", "dispatch", "route_table"]


class Call:
    """The bound, checked arguments of one call of an operation, with the facts its routes read (sizes, dtype,
    whether the call is traced), as attributes. (A plain class: ``torch.compile`` traces its construction.)"""

    def __init__(self, **facts: Any) -> None:
        for name, value in facts.items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        return "Call(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not hasattr(v, "shape")) + ")"


@dataclasses.dataclass(frozen=True)
class Backend:
    """A way of running kernels: its name, what it is, and whether it can run a call at all.

    Attributes
    ----------
    name : str
        what :func:`backend` and :attr:`Route.backend` call it
    doc : str
        one line: what runs
    check : callable
        ``check(call) -> None | str``: None when the backend can run on the call's device and machine, else why not
        (a route's own :attr:`Route.when` says whether its kernel serves the call's sizes and dtype)
    """

    name: str
    doc: str
    check: Callable[[Call], str | None] = lambda call: None


@dataclasses.dataclass(frozen=True)
class Route:
    """One form of an operation on one backend.

    Attributes
    ----------
    form : str
        the exact form computed (the docs and claims name it)
    backend : str
        the :class:`Backend` that runs it
    when : callable
        ``when(call) -> None | str``: None when the route serves the call, else the reason it does not
    run : callable
        ``run(call) -> result``
    per_sample : str
        what the route decides per sample inside its kernel (empty when nothing)
    claims : tuple of str
        the ledger ids that verify the form
    """

    form: str
    backend: str
    when: Callable[[Call], str | None]
    run: Callable[[Call], Any]
    per_sample: str = ""
    claims: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``form/backend``."""
        return f"{self.form}/{self.backend}"


@dataclasses.dataclass(frozen=True)
class Operation:
    """A verified computation: how its arguments are bound and checked, and its routes in order of preference."""

    name: str
    bind: Callable[..., Call]
    routes: tuple[Route, ...]
    claims: tuple[str, ...] = ()
    doc: str = ""


#: the backends by name
BACKENDS: dict[str, Backend] = {}
#: the operations by name
OPERATIONS: dict[str, Operation] = {}


def register_backend(b: Backend) -> Backend:
    """Add (or replace) a backend in :data:`BACKENDS`; returns it."""
    if not isinstance(b, Backend):
        raise TypeError(f"Expected a Backend. Got {type(b).__name__}.")
    BACKENDS[b.name] = b
    return b


def register_operation(op: Operation) -> Operation:
    """Add (or replace) an operation in :data:`OPERATIONS`; returns it. Its routes must name known backends."""
    if not isinstance(op, Operation):
        raise TypeError(f"Expected an Operation. Got {type(op).__name__}.")
    unknown = sorted({r.backend for r in op.routes} - set(BACKENDS))
    if unknown:
        raise OptionError(f"Expected routes on the backends {tuple(BACKENDS)}. Got routes of {op.name!r} on "
                          f"{tuple(unknown)}.")
    OPERATIONS[op.name] = op
    return op


# The forced backend: a stack, process-wide like torch.backends' flags (a module global, which torch.compile
# reads as a constant of the graph it traces).
_FORCED: list[str] = []


def forced_backend() -> str | None:
    """The backend forced by the innermost :func:`backend` block, or None."""
    return _FORCED[-1] if _FORCED else None


@contextlib.contextmanager
def backend(name: str) -> Iterator[None]:
    """Force every kernel call inside the block onto backend ``name``.

    Routes of other backends are passed over; a call that no route of ``name`` serves raises
    :class:`~geoattn.errors.BackendError` with each route's reason. Blocks nest; the innermost wins.

    Examples
    --------
    >>> import torch
    >>> from geoattn import kernels
    >>> C = torch.randn(16, 3, 3); C = C - C.mT
    >>> with kernels.backend("eager"):
    ...     Q = kernels.cayley(C)          # the torch forms, even where the C kernels build
    """
    if name not in BACKENDS:
        raise OptionError(f"Expected a backend in {tuple(BACKENDS)}. Got {name!r}.")
    _FORCED.append(name)
    try:
        yield
    finally:
        _FORCED.pop()


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The route a call takes (:attr:`route`, None when none serves) and why each other route did not serve."""

    operation: str
    route: Route | None
    rejected: tuple[tuple[Route, str], ...]
    forced: str | None = None

    @property
    def reason(self) -> str:
        """Why the route taken serves (its per-sample decisions), or why nothing serves."""
        if self.route is None:
            return "no route serves: " + "; ".join(f"{r.name}: {why}" for r, why in self.rejected)
        return self.route.per_sample or "serves"

    def table(self) -> str:
        """One line per route of the operation, in order: taken, or why not."""
        lines = [f"{self.operation}" + (f" (backend {self.forced!r} forced)" if self.forced else "")]
        taken = self.route.name if self.route is not None else None
        why = {r.name: w for r, w in self.rejected}
        for r in OPERATIONS[self.operation].routes:
            if r.name == taken:
                status = "taken" + (f"; per sample: {r.per_sample}" if r.per_sample else "")
            else:
                status = why.get(r.name, "not tried: an earlier route serves")
            lines.append(f"{'->' if r.name == taken else '  '} {r.name:<24} {status}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _select(op: Operation, call: Call) -> Explanation:
    forced = forced_backend()
    rejected = []
    for r in op.routes:
        if forced is not None and r.backend != forced:
            rejected.append((r, f"backend {forced!r} forced"))
            continue
        why = BACKENDS[r.backend].check(call) or r.when(call)
        if why is None:
            return Explanation(op.name, r, tuple(rejected), forced)
        rejected.append((r, why))
    return Explanation(op.name, None, tuple(rejected), forced)


def _operation(name: str) -> Operation:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise OptionError(f"Expected an operation in {tuple(OPERATIONS)}. Got {name!r}.") from None


def explain(name: str, *args, **kwargs) -> Explanation:
    """How ``geoattn.kernels.<name>(*args, **kwargs)`` would be computed: the route taken, and why every other
    route did not serve (the arguments are checked as the call checks them; nothing is computed).

    Examples
    --------
    >>> import torch
    >>> from geoattn import kernels
    >>> x = torch.randn(2, 3, 8, dtype=torch.float64)      # d = 8 > T = 3
    >>> A = torch.randn(8, 8, dtype=torch.float64); A = A - A.T
    >>> e = kernels.explain("vp_attention", x, A)
    >>> e.route.form
    'full'
    """
    op = _operation(name)
    return _select(op, op.bind(*args, **kwargs))


def dispatch(name: str, *args, **kwargs) -> Any:
    """Compute operation ``name`` by the first route that serves (:func:`explain` says which)."""
    op = _operation(name)
    call = op.bind(*args, **kwargs)
    e = _select(op, call)
    if e.route is None:
        if e.forced is not None:
            raise BackendError(f"Expected backend {e.forced!r} to serve {name}. Got no route of it that serves: "
                               + "; ".join(f"{r.name}: {why}" for r, why in e.rejected if r.backend == e.forced))
        raise BackendError(f"Expected a route of {name} to serve. Got none: {e.reason}")
    return e.route.run(call)


def route_table(name: str | None = None) -> str:
    """The routes of one operation (or of all), in order: form, backend, per-sample decisions, claims."""
    names = [name] if name is not None else list(OPERATIONS)
    lines = []
    for n in names:
        op = _operation(n)
        lines.append(f"{op.name}: {op.doc}" if op.doc else op.name)
        for i, r in enumerate(op.routes, 1):
            extra = f"; per sample: {r.per_sample}" if r.per_sample else ""
            lines.append(f"  {i}. {r.name:<24} claims {', '.join(r.claims) or '-'}{extra}")
    return "\n".join(lines)

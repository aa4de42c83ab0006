"""The dispatch table: routes read in one place, explain(), forced backends, and new operations and backends added
without edits elsewhere; the package's import graph has no circle."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import torch

import geoattn
import geoattn.kernels as K
from geoattn.errors import BackendError, OptionError, StructureError
from geoattn.kernels import _native_exp, dispatch
from geoattn.kernels.dispatch import Backend, Call, Operation, Route

ROOT = Path(geoattn.__file__).resolve().parent


def skew(d, dtype=torch.float32, scale=1.0):
    a = torch.randn(d, d, dtype=dtype) * scale
    return a - a.mT


# -- the import graph ----------------------------------------------------------------------------------------------


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (at any depth of the file, function bodies included).
    ``from . import name`` of a submodule is an edge to that submodule only, as Python imports it."""
    top = package.name
    mods = {}
    for p in package.rglob("*.py"):
        rel = p.relative_to(package.parent).with_suffix("")
        name = ".".join(rel.parts)
        mods[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        base = m.split(".") if p.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                mod = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else node.module
                subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [mod, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges[m].update(t for t in targets if t in mods and t != m and t.split(".")[0] == top)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_anywhere_in_geoattn():
    graph = import_graph(ROOT)
    assert "geoattn.kernels._op_vp" in graph and graph["geoattn.kernels._op_vp"]  # the analysis sees the modules
    assert cycles(graph) == []


def test_negative_control_a_circle_through_a_function_level_import_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b.g()\n")
    (pkg / "b.py").write_text(textwrap.dedent("""
        def g():
            from .a import f  # a circle hidden in a function body
            return f
    """))
    assert cycles(import_graph(pkg)) == [["pkg.a", "pkg.b"]]


# -- explain() and the tables ------------------------------------------------------------------------------------


def test_every_operation_lists_routes_on_known_backends_and_explain_names_every_route():
    x, A = torch.randn(3, 16, 4), skew(4)
    calls = {"vp_attention": (x, A), "cayley": (A,), "cayley_apply": (skew(16), x), "exp_skew": (A,)}
    assert set(calls) <= set(K.OPERATIONS)
    for name, args in calls.items():
        op = K.OPERATIONS[name]
        assert op.routes and all(r.backend in K.BACKENDS for r in op.routes)
        e = K.explain(name, *args)
        assert e.route is not None
        table = e.table()
        assert all(r.name in table for r in op.routes) and "->" in table
        assert all(why for _, why in e.rejected)
    assert "vp_attention" in K.route_table() and "gram-closed/native" in K.route_table("vp_attention")


def test_vp_attention_reaches_its_kernel_through_the_route_explain_names(monkeypatch):
    """The route explain() reports is the one that runs: each route's run is wrapped and counted."""
    x, A = torch.randn(3, 16, 4), skew(4)
    ran = []
    op = K.OPERATIONS["vp_attention"]
    wrapped = tuple(dataclasses_replace(r, run=(lambda r: lambda c: ran.append(r.name) or r.run(c))(r))
                    for r in op.routes)
    monkeypatch.setitem(dispatch.OPERATIONS, "vp_attention", dataclasses_replace(op, routes=wrapped))
    x8, A8 = torch.randn(3, 16, 8), skew(8)
    for args, kw in [((x, A), {}), ((x.double(), A.double()), {}), ((x[:, :3], A), {}), ((x, A), {"activation": "exp"}),
                     ((x8, A8), {"activation": "exp"})]:
        ran.clear()
        want = K.explain("vp_attention", *args, **kw).route.name
        K.vp_attention(*args, **kw)
        assert ran == [want]
    native = _native_exp.exp_native_status(8)[0]
    assert ran == ["gram-exp/native" if native else "gram-exp/eager"]  # the exponential at d = 8: its Gram form


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def test_forced_backends():
    C = skew(3)
    with K.backend("eager"):
        assert K.explain("cayley", C).route.name == "closed-small/eager"
        e = K.explain("cayley", C)
        assert dict((r.name, w) for r, w in e.rejected)["closed-small/native"] == "backend 'eager' forced"
    with K.backend("native"):
        with pytest.raises(BackendError, match="Expected backend 'native' to serve cayley. Got no route"):
            K.cayley(skew(40))  # no native kernel for T = 40: the reason names the size
        with K.backend("eager"):  # blocks nest; the innermost wins
            K.cayley(skew(40))
    assert dispatch.forced_backend() is None
    with pytest.raises(OptionError, match="Expected a backend in"):
        with K.backend("no-such-backend"):
            pass
    with pytest.raises(OptionError, match="Expected an operation in"):
        K.explain("no_such_op", C)


def test_the_native_route_serves_where_its_kernels_build_and_says_why_not_elsewhere():
    x, A = torch.randn(3, 16, 4), skew(4)
    ok, why = K.native_status(4)
    e = K.explain("vp_attention", x, A)
    if ok:
        assert e.route.name == "gram-closed/native"
    else:
        assert dict((r.name, w) for r, w in e.rejected)["gram-closed/native"] == why
    e = K.explain("vp_attention", x.to("meta"), A.to("meta"))
    assert "device meta" in dict((r.name, w) for r, w in e.rejected)["gram-closed/native"]


# -- a new operation and a new backend are additions ---------------------------------------------------------------


@pytest.fixture
def registry(monkeypatch):
    """Leave the tables as they were."""
    monkeypatch.setattr(dispatch, "BACKENDS", dict(dispatch.BACKENDS))
    monkeypatch.setattr(dispatch, "OPERATIONS", dict(dispatch.OPERATIONS))


def test_a_toy_operation_and_a_toy_backend_appear_in_explain_and_serve(registry):
    """The operation: the symmetric part (A + A^T)/2 of a square matrix, the update matrix of linear symplectic
    attention (ledger lsa.gradient, whose claim the spec names); the backend serves float32 CPU inputs only."""
    from geoattn.kernels._checks import check_square

    seen = []
    dispatch.register_backend(Backend("toy", "a test backend", lambda c: None if c.A.dtype == torch.float32
                                      else f"{c.A.dtype}: the toy backend takes float32"))

    def bind(A):
        check_square("A", A)
        return Call(A=A, device=A.device, traced=False)

    def toy(c):
        seen.append("toy")
        return 0.5 * (c.A + c.A.mT)

    dispatch.register_operation(Operation(
        "toy_symmetric_part", bind,
        (Route("sum", "toy", lambda c: None, toy, claims=("lsa.gradient",)),
         Route("sum", "eager", lambda c: None, lambda c: (c.A + c.A.mT) / 2, claims=("lsa.gradient",))),
        claims=("lsa.gradient",), doc="(A + A^T)/2"))
    A = torch.randn(5, 5)
    e = K.explain("toy_symmetric_part", A)
    assert e.route.name == "sum/toy" and "toy_symmetric_part" in K.route_table()
    assert torch.equal(dispatch.dispatch("toy_symmetric_part", A), 0.5 * (A + A.mT)) and seen == ["toy"]
    e64 = K.explain("toy_symmetric_part", A.double())
    assert e64.route.name == "sum/eager" and "the toy backend takes float32" in e64.rejected[0][1]
    with K.backend("toy"):
        with pytest.raises(BackendError, match="the toy backend takes float32"):
            dispatch.dispatch("toy_symmetric_part", A.double())
    # the claim the spec names is a claim of the ledger
    from geoattn.symbolic import ledger

    assert "lsa.gradient" in {c.id for c in ledger.all_claims()}


def test_a_route_on_an_unknown_backend_is_refused(registry):
    with pytest.raises(OptionError, match="Expected routes on the backends"):
        dispatch.register_operation(Operation("bad", lambda: Call(), (Route("f", "nowhere", lambda c: None,
                                                                            lambda c: None),)))


def test_every_claim_an_operation_or_route_names_is_a_claim_of_the_ledger():
    from geoattn.symbolic import ledger

    known = {c.id for c in ledger.all_claims()}
    named = {(op.name, cid) for op in K.OPERATIONS.values() for cid in op.claims}
    named |= {(f"{op.name}:{r.name}", cid) for op in K.OPERATIONS.values() for r in op.routes for cid in r.claims}
    assert len(named) > 20
    assert [n for n in sorted(named) if n[1] not in known] == []


def test_skew_check_runs_when_only_x_is_traced():
    """Under vmap over x (A a plain tensor) the skew check of A still runs: only a traced A skips it."""
    A = torch.randn(4, 4)  # not skew
    x = torch.randn(3, 16, 4)
    with pytest.raises(StructureError):
        torch.func.vmap(lambda u: K.vp_attention(u, A))(x)
    skew_A = A - A.T
    torch.func.vmap(lambda u: K.vp_attention(u, skew_A))(x)  # a skew A passes

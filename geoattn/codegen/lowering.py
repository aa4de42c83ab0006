r"""The lowering shared by the kernel emitters: matrix bindings to a small scalar program.

A :class:`~geoattn.symbolic.kernel_spec.NativeKernelSpec` lists bindings of ``d x d`` and ``T x d`` matrices
(Note [the closed-form Gram layer] in :mod:`geoattn.symbolic.expressions`). For one ``d`` up to its ``max_dim``,
:func:`lower` evaluates every binding entrywise with SymPy (the interpreter the claims use), shares repeated
subexpressions with :func:`sympy.cse`, and returns a :class:`ScalarProgram`: the inputs by role (token rows,
per-sample and shared ``d x d`` matrices with their structure), and per binding its kind and its statements.
The emitters print that program and nothing else: C for the CPU (:mod:`geoattn.codegen.cprinter`) and Triton
for the GPU (:mod:`geoattn.codegen.tritonprinter`), so both evaluate the same scalar expressions. Each binding is
one of three kinds, read off its shape and its token-sized factors:

* **reduction** (``d x d``, every term :math:`c\,U^T M V` with ``U``, ``V`` token inputs): a sum over the
  tokens of the per-token term, accumulated while the tokens stream by;
* **small** (``d x d``, no token factor): straight-line code, one value per entry;
* **row map** (``T x d``, every term :math:`c\,U M` with ``U`` a token input): one row per token.

Anything else raises :class:`~geoattn.codegen.printer.CodegenError`. A kernel runs reductions, then small
bindings, then row maps, so a reduction may use only inputs and a row map may use anything. A kernel without
token inputs has small bindings only (the Cayley transform of ``T x T`` matrices with ``T <= 3`` and its VJP,
declared with ``T`` renamed ``d``).
"""

from __future__ import annotations

import dataclasses

import sympy as sp
from sympy.matrices.expressions import MatAdd, MatrixSymbol, Transpose
from sympy.printing.c import C99CodePrinter

from ..symbolic.interpreter import evaluate
from ..symbolic.kernel_spec import NativeKernelSpec
from .printer import CodegenError, _split

__all__ = ["ScalarEntries", "KINDS", "LoweredBinding", "ScalarProgram", "binding_kind", "lower", "structured"]

#: the kinds of binding, in the order a kernel runs them
KINDS = ("reduction", "small", "rowmap")
#: the prefix of the shared subexpressions of each kind (``r<binding>_0``, ...)
_CSE_PREFIX = {"reduction": "r", "small": "s", "rowmap": "w"}


def structured(name: str, d: int, structure: str) -> tuple[sp.Matrix, list]:
    """An explicit ``d x d`` matrix of entry symbols with a structure (``"general"``, ``"symmetric"``, ``"skew"``),
    and its stored entries as ``(symbol, (i, j))`` pairs: the entries a kernel reads (for the structured ones the
    lower triangle; the rest is implied)."""
    syms = {}
    m = sp.zeros(d, d)
    if structure not in ("general", "symmetric", "skew"):
        raise CodegenError(f"Expected a structure 'general', 'symmetric' or 'skew'. Got {structure!r}.")
    for i in range(d):
        for j in range(d):
            if structure == "skew" and i == j:
                continue
            # the stored entry: (i, j) itself, or for the structured ones the one in the lower triangle
            r, c = (i, j) if structure == "general" or i >= j else (j, i)
            s = syms.setdefault((r, c), sp.Symbol(f"{name}_{r}_{c}", real=True))
            m[i, j] = -s if structure == "skew" and i < j else s
    return m, [(s, ij) for ij, s in syms.items()]


def binding_kind(name: str, expr, tokens: set) -> str:
    """``"reduction"``, ``"small"`` or ``"rowmap"`` (module docstring) for the binding ``name = expr`` with the
    token inputs ``tokens`` (matrix symbols); raises :class:`CodegenError` on any other shape."""
    terms = [_split(t) for t in (expr.args if isinstance(expr, MatAdd) else (expr,))]
    used = [[m for m in mats if (m.arg if isinstance(m, Transpose) else m) in tokens] for _, mats in terms]
    if not any(used):
        return "small"
    for (_, mats), tok in zip(terms, used):
        first, last = mats[0], mats[-1]
        if expr.shape[0] == expr.shape[1] and len(tok) == 2 and isinstance(first, Transpose) \
                and first.arg in tokens and last in tokens:
            continue
        if expr.shape[0] != expr.shape[1] and len(tok) == 1 and first in tokens:
            continue
        raise CodegenError(f"Expected {name} to be a sum of U^T M V (U, V token inputs) or of U M (U a token "
                           f"input, M d x d). Got {expr}.")
    shapes = {len(t) for t in used}
    if len(shapes) != 1:
        raise CodegenError(f"Expected every term of {name} to have the same token factors. Got {expr}.")
    return "reduction" if shapes == {2} else "rowmap"


@dataclasses.dataclass
class LoweredBinding:
    """One binding, lowered.

    Attributes
    ----------
    name : str
        the binding's name
    kind : str
        ``"reduction"``, ``"small"`` or ``"rowmap"``
    value : sympy.Matrix
        its entries: symbols ``<name>_i_j`` (one per distinct non-constant entry) or numbers; a row map's
        value is one row (one token)
    pairs : list
        ``(symbol, expression)``: each symbol of ``value`` and the scalar expression it stands for
    temps : list
        ``(symbol, expression)``: the shared subexpressions, in the order they are computed
    results : list
        ``(symbol, expression)``: each symbol of ``value`` in terms of the inputs, earlier bindings and ``temps``
        (for a reduction: the per-token term added to the accumulator)
    """

    name: str
    kind: str
    value: sp.Matrix
    pairs: list
    temps: list
    results: list


@dataclasses.dataclass
class ScalarProgram:
    """A kernel at one ``d`` as scalar statements (built by :func:`lower`).

    Attributes
    ----------
    spec : NativeKernelSpec
    d : int
    tokens : dict
        token input name -> its row of entry symbols ``<name>_j`` (one token)
    samples : dict
        per-sample input name -> its stored entries ``(symbol, (i, j))``
    shared : dict
        shared input name -> its stored entries ``(symbol, (i, j))``
    bindings : list of LoweredBinding
        in the spec's order
    """

    spec: NativeKernelSpec
    d: int
    tokens: dict
    samples: dict
    shared: dict
    bindings: list

    def phase(self, kind: str) -> list:
        """The bindings of one kind, in order."""
        return [b for b in self.bindings if b.kind == kind]

    def binding(self, name: str) -> LoweredBinding:
        """The lowered binding called ``name``."""
        for b in self.bindings:
            if b.name == name:
                return b
        raise KeyError(f"Expected a binding in {[b.name for b in self.bindings]}. Got {name!r}.")

    def rowmap_atoms(self) -> set:
        """The entry symbols the row maps read (the small values an emitter must keep until the second pass)."""
        atoms = set()
        for b in self.phase("rowmap"):
            for _, e in b.pairs:
                atoms |= e.free_symbols
        return atoms


def _entries(value: sp.Matrix, var: str) -> tuple[sp.Matrix, list]:
    """Replace the distinct non-constant entries of ``value`` by symbols ``{var}_i_j``; returns the symbol matrix
    and ``(symbol, expression)`` pairs."""
    seen: dict = {}
    pairs = []
    out = sp.zeros(*value.shape)
    for i in range(value.rows):
        for j in range(value.cols):
            e = value[i, j]
            if e.is_Number:
                out[i, j] = e
                continue
            if e not in seen:
                seen[e] = sp.Symbol(f"{var}_{i}_{j}", real=True)
                pairs.append((seen[e], e))
            out[i, j] = seen[e]
    return out, pairs


def lower(spec: NativeKernelSpec, d: int) -> ScalarProgram:
    """The scalar program of ``spec`` at size ``d`` (``1 <= d <= spec.max_dim``; module docstring)."""
    from ..symbolic import expressions as ex

    if not 1 <= d <= spec.max_dim:
        raise CodegenError(f"Expected 1 <= d <= {spec.max_dim} for {spec.name}. Got d = {d}.")
    sizes = {ex.T: 1, ex.d: d}
    env: dict = {}  # MatrixSymbol -> explicit matrix of entry symbols / numbers
    token_syms = {}
    for _, expr in spec.bindings:
        for s in sp.sympify(expr).atoms(MatrixSymbol):
            if s.name in spec.token_inputs:
                token_syms[s.name] = s
    for name in spec.token_inputs:
        token_syms.setdefault(name, MatrixSymbol(name, ex.T, ex.d))
    tokens = {}
    for name in spec.token_inputs:
        row = sp.Matrix(1, d, lambda _, j: sp.Symbol(f"{name}_{j}", real=True))
        env[token_syms[name]] = row
        tokens[name] = list(row)
    samples, shared = {}, {}
    for table, inputs in ((samples, spec.sample_inputs), (shared, spec.shared_inputs)):
        for name, structure in inputs.items():
            m, stored = structured(name, d, structure)
            env[MatrixSymbol(name, ex.d, ex.d)] = m
            env[MatrixSymbol(name, d, d)] = m  # a binding of fixed size (the 4 x 4 exponential) reads it too
            table[name] = stored
    token_set = set(token_syms.values())
    done: dict = {k: [] for k in KINDS}
    bindings = []
    kinds = {name: binding_kind(name, expr, token_set) for name, expr in spec.bindings}
    for name, expr in spec.bindings:
        kind = kinds[name]
        unbound = [str(m) for m in sp.sympify(expr).atoms(MatrixSymbol) if m not in env]
        if unbound:
            raise CodegenError(f"Expected {', '.join(unbound)} in {name} to be an input or an earlier binding. "
                               f"Got an unbound symbol.")
        value = evaluate(expr, env, sizes)
        if kind == "reduction" and any(s.name in done["small"] or s.name in done["rowmap"]
                                       for s in expr.atoms(MatrixSymbol)):
            raise CodegenError(f"Expected the reduction {name} to use only inputs. Got {expr}.")
        sym, pairs = _entries(value, name)
        done[kind].append(name)
        env[MatrixSymbol(name, *(ex.d if s == ex.d else s for s in expr.shape))] = sym
        # canonical order: the same statements every run
        temps, reduced = sp.cse([e for _, e in pairs], symbols=sp.numbered_symbols(f"{_CSE_PREFIX[kind]}{name}_"))
        results = [(s, e) for (s, _), e in zip(pairs, reduced)]
        bindings.append(LoweredBinding(name, kind, sym, pairs, list(temps), results))
    return ScalarProgram(spec, d, tokens, samples, shared, bindings)


class ScalarEntries(C99CodePrinter):
    """The scalar statements of a lowered program as C-like code (SymPy's C99 printer, whose ``+ - * /`` and
    parentheses C and Triton share), with symbols renamed to the kernel's variables and small integer powers as
    products; the C and Triton printers subclass it for their literals and functions. ``target`` names the
    kernel kind in error messages."""

    target = "native"

    def __init__(self, names: dict):
        super().__init__()
        self.names = names

    def _print_Symbol(self, expr) -> str:
        if expr not in self.names:
            raise CodegenError(f"Expected {expr} to be an entry of an input or an earlier binding. "
                               "Got an unbound symbol.")
        return self.names[expr]

    def _print_Pow(self, expr) -> str:
        b, e = expr.base, expr.exp
        if e.is_Integer and 2 <= e <= 4:
            base = self.parenthesize(b, 60)
            return "(" + "*".join([base] * int(e)) + ")"
        if e == -1:
            return f"(1.0/{self.parenthesize(b, 60)})"
        raise CodegenError(f"Expected integer powers 2..4 or -1 in a {self.target} kernel. Got {expr}.")

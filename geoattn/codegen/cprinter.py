r"""A printer from matrix bindings to C: the native CPU kernels.

A :class:`~geoattn.symbolic.kernel_spec.NativeKernelSpec` lists bindings of ``d x d`` and ``T x d`` matrices
(Note [the closed-form Gram layer] in :mod:`geoattn.symbolic.expressions`). For each ``d`` up to its
``max_dim`` this printer evaluates every binding entrywise with SymPy (the interpreter the claims use), shares
repeated subexpressions with :func:`sympy.cse`, and prints one C function with SymPy's C99 printer. Each binding
is one of three kinds, read off its shape and its token-sized factors:

* **reduction** (``d x d``, every term :math:`c\,U^T M V` with ``U``, ``V`` token inputs): a sum over the
  tokens of the per-token term, accumulated while the tokens stream by;
* **small** (``d x d``, no token factor): straight-line code, one value per entry;
* **row map** (``T x d``, every term :math:`c\,U M` with ``U`` a token input): one row per token.

Anything else raises :class:`~geoattn.codegen.printer.CodegenError`. A kernel runs reductions, then small
bindings, then row maps, so a reduction may use only inputs and a row map may use anything. A kernel without
token inputs has small bindings only: the Cayley transform of ``T x T`` matrices with ``T <= 3`` and its VJP,
printed with ``T`` renamed ``d`` and with ``sample_real`` (per-sample arrays in the input's real type).

Note [lanes]
------------
The samples are processed ``LANES`` at a time, and every per-sample value is an array of ``LANES`` doubles
indexed by the innermost loop variable ``l``: the loop bodies are straight-line arithmetic over ``l``, which the
compiler turns into vector instructions (8 doubles per AVX-512 register). Tokens are copied, ``TOKEN_CHUNK`` at
a time, from the batch-first ``(B, T, d)`` input into a tile in that layout (converted to double there); a
sequence of at most ``TOKEN_CHUNK`` tokens is read once for both passes. The last block of a batch whose size is
not a multiple of ``LANES`` repeats its last sample in the unused lanes and stores only the real ones, so every
sample goes through the same operations whatever its batch: no result depends on the rest of the batch.
Everything is computed in double; token outputs are rounded once, to the input's type, when stored.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatAdd, MatrixSymbol, Transpose
from sympy.printing.c import C99CodePrinter

from ..symbolic.interpreter import evaluate
from ..symbolic.kernel_spec import NativeKernelSpec
from .printer import CodegenError, _split

__all__ = ["LANES", "TOKEN_CHUNK", "REAL_TYPES", "REAL_PRELUDE", "c_function_name", "print_native_kernel"]

#: samples per block (Note [lanes])
LANES = 8
#: tokens per tile (Note [lanes])
TOKEN_CHUNK = 32
#: suffix -> C type of the token-sized arrays; a function is printed once, with ``real_t`` and
#: ``GEOATTN_NAME(...)``, and compiled for one of them (``-DGEOATTN_F32`` or ``-DGEOATTN_F64``)
REAL_TYPES = {"f32": "float", "f64": "double"}
#: the C lines that define ``real_t`` and ``GEOATTN_NAME`` from the compiler's ``-DGEOATTN_<REAL>``
REAL_PRELUDE = "\n".join(
    [f"#{'if' if k == 0 else 'elif'} defined(GEOATTN_{sfx.upper()})\ntypedef {c} real_t;\n"
     f"#define GEOATTN_NAME(name) geoattn_##name##_{sfx}" for k, (sfx, c) in enumerate(REAL_TYPES.items())]
    + ["#else\n#error \"compile with -DGEOATTN_F32 or -DGEOATTN_F64\"\n#endif"])


def c_function_name(spec: NativeKernelSpec, d: int, real: str) -> str:
    """The exported name of the C function of ``spec`` at size ``d`` for the real type ``real`` (``"f32"``/``"f64"``)."""
    return f"geoattn_{spec.name}_d{d}_{real}"


class _ScalarC(C99CodePrinter):
    """SymPy's C99 printer with symbols renamed to the kernel's variables and small integer powers as products."""

    def __init__(self, names: dict):
        super().__init__()
        self.names = names

    def _print_Symbol(self, expr) -> str:
        if expr not in self.names:
            raise CodegenError(f"Expected {expr} to be an entry of an input or an earlier binding. Got an unbound symbol.")
        return self.names[expr]

    def _print_Pow(self, expr) -> str:
        b, e = expr.base, expr.exp
        if e.is_Integer and 2 <= e <= 4:
            base = self.parenthesize(b, 60)
            return "(" + "*".join([base] * int(e)) + ")"
        if e == -1:
            return f"(1.0/{self.parenthesize(b, 60)})"
        raise CodegenError(f"Expected integer powers 2..4 or -1 in a native kernel. Got {expr}.")

    def _print_Integer(self, expr) -> str:
        return f"{int(expr)}.0"


def _structured(name: str, d: int, structure: str) -> tuple[sp.Matrix, list]:
    """An explicit ``d x d`` matrix of entry symbols with a structure, and its ``(symbol, (i, j))`` stored entries."""
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


def _kind(name: str, expr, tokens: set) -> str:
    """``"reduction"``, ``"small"`` or ``"rowmap"`` (module docstring); raises on any other shape."""
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


class _Function:
    """The C source of one kernel at one ``d`` (built by :func:`print_native_kernel`)."""

    def __init__(self, spec: NativeKernelSpec, d: int):
        from ..symbolic import expressions as ex

        self.spec, self.d = spec, d
        self.sizes = {ex.T: 1, ex.d: d}
        self.env: dict = {}  # MatrixSymbol -> explicit matrix of entry symbols / numbers
        self.names: dict = {}  # entry symbol -> C code
        self.lane: set = set()  # entry symbols held as lane arrays
        self.decls: list[str] = []
        self.bound: dict = {}  # binding name -> (matrix of entry symbols, (symbol, expression) pairs, kind)
        tokens = {}
        for _, expr in spec.bindings:
            for s in sp.sympify(expr).atoms(MatrixSymbol):
                if s.name in spec.token_inputs:
                    tokens[s.name] = s
        for name in spec.token_inputs:
            tokens.setdefault(name, MatrixSymbol(name, ex.T, ex.d))
        self.tokens = tokens
        for name in spec.token_inputs:
            row = sp.Matrix(1, d, lambda _, j: sp.Symbol(f"{name}_{j}", real=True))
            self.env[tokens[name]] = row
            for j in range(d):
                self.names[row[0, j]] = f"tile_{name}[({j} + {d}*tt)*LANES + l]"
        self.loads: list[str] = []
        for name, structure in spec.sample_inputs.items():
            m, stored = _structured(name, d, structure)
            self.env[MatrixSymbol(name, ex.d, ex.d)] = m
            for s, (i, j) in stored:
                self._lane(s)
                cast = "(double)" if spec.sample_real else ""
                lane = self.names[s].replace("[l]", "")
                self.loads.append(f"{lane}[l] = {cast}{name}[(int64_t)bl*{d * d} + {i * d + j}];")
        self.consts: list[str] = []
        for name, structure in spec.shared_inputs.items():
            m, stored = _structured(name, d, structure)
            self.env[MatrixSymbol(name, ex.d, ex.d)] = m
            for s, (i, j) in stored:
                self.names[s] = str(s)
                self.consts.append(f"const double {s} = {name}[{i * d + j}];")

    def _lane(self, s) -> None:
        self.names[s] = f"{s}[l]"
        self.lane.add(s)
        self.decls.append(f"double {s}[LANES];")

    def _entries(self, name: str, value: sp.Matrix, var: str) -> tuple[sp.Matrix, list]:
        """Replace the distinct non-constant entries of ``value`` by symbols ``{var}_i_j``; returns the symbol
        matrix and ``(symbol, expression)`` pairs."""
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

    def _assign(self, pairs, target, prefix: str) -> list[str]:
        """C statements computing ``pairs`` (symbol, expression) with shared subexpressions as locals;
        ``target(symbol, code)`` is the statement for each result."""
        syms = sp.numbered_symbols(f"{prefix}_")
        temps, reduced = sp.cse([e for _, e in pairs], symbols=syms)  # canonical order: the same source every run
        lines = []
        for t, e in temps:
            self.names[t] = str(t)
            lines.append(f"const double {t} = {_ScalarC(self.names).doprint(e)};")
        for (s, _), e in zip(pairs, reduced):
            lines.append(target(s, _ScalarC(self.names).doprint(e)))
        return lines

    def build(self) -> str:
        from ..symbolic import expressions as ex

        spec, d = self.spec, self.d
        kinds = {}
        for name, expr in spec.bindings:
            kinds[name] = _kind(name, expr, set(self.tokens.values()))
        # which entry symbols are needed outside the small phase: the row maps' and the outputs'
        phase = {"reduction": [], "small": [], "rowmap": []}
        for name, expr in spec.bindings:
            unbound = [str(m) for m in sp.sympify(expr).atoms(MatrixSymbol) if m not in self.env]
            if unbound:
                raise CodegenError(f"Expected {', '.join(unbound)} in {name} to be an input or an earlier binding. "
                                   f"Got an unbound symbol.")
            value = evaluate(expr, self.env, self.sizes)
            kind = kinds[name]
            if kind == "reduction" and any(s.name in phase["small"] or s.name in phase["rowmap"]
                                           for s in expr.atoms(MatrixSymbol)):
                raise CodegenError(f"Expected the reduction {name} to use only inputs. Got {expr}.")
            sym, pairs = self._entries(name, value, name)
            phase[kind].append(name)
            self.env[MatrixSymbol(name, *(ex.d if s == ex.d else s for s in expr.shape))] = sym
            self.bound[name] = (sym, pairs, kind)
        outputs = set(spec.sample_outputs) | set(spec.maxabs_outputs)
        rowmap_atoms = set()
        for name in phase["rowmap"]:
            for _, e in self.bound[name][1]:
                rowmap_atoms |= e.free_symbols
        body: list[str] = []
        # phase 1: reductions over the tokens
        red_lines = []
        for name in phase["reduction"]:
            _, pairs, _ = self.bound[name]
            for s, _ in pairs:
                self._lane(s)
                body.append(f"for (int l = 0; l < LANES; l++) {s}[l] = 0.0;")
            red_lines += self._assign(pairs, lambda s, c: f"{s}[l] += {c};", f"r{name}")
        # phase 2: the small bindings, one loop over the lanes
        small_lines = []
        for name in phase["small"]:
            sym, pairs, _ = self.bound[name]
            keep = name in outputs or any(s in rowmap_atoms for s, _ in pairs)
            for s, _ in pairs:
                if keep:
                    self._lane(s)
                else:
                    self.names[s] = str(s)
            small_lines += self._assign(
                pairs, (lambda s, c: f"{s}[l] = {c};") if keep else (lambda s, c: f"const double {s} = {c};"),
                f"s{name}")
        # phase 3: the row maps, one row per token
        row_lines, stores = [], []
        for name in phase["rowmap"]:
            sym, pairs, _ = self.bound[name]
            self.decls.append(f"double row_{name}[{d}][LANES];")
            for j in range(d):
                self.names.setdefault(sym[0, j], f"row_{name}[{j}][l]")
            row_lines += self._assign(pairs, lambda s, c: f"{self.names[s]} = {c};", f"w{name}")
            for j in range(d):
                e = sym[0, j]
                code = self.names[e] if not e.is_Number else _ScalarC({}).doprint(e)
                stores.append(f"{name}[((int64_t)(b0 + l)*T + t0 + tt)*{d} + {j}] = (real_t)({code});")
        return self._assemble(body, red_lines, small_lines, row_lines, stores, phase)

    def _assemble(self, init, red_lines, small_lines, row_lines, stores, phase) -> str:
        spec, d = self.spec, self.d
        ind = "    "

        def block(lines, depth):
            return [ind * depth + ln for ln in lines]

        params = ["int64_t B", "int64_t T"]
        params += [f"const real_t *restrict {n}" for n in spec.token_inputs]
        sample = "real_t" if spec.sample_real else "double"
        params += [f"const {sample} *restrict {n}" for n in spec.sample_inputs]
        params += [f"const double *restrict {n}" for n in spec.shared_inputs]
        params += [f"real_t *restrict {n}" for n in spec.token_outputs]
        params += [f"{sample} *restrict {n}" for n in spec.sample_outputs]
        params += [f"double *restrict {n}" for n in spec.maxabs_outputs]
        if "*/" in spec.doc:
            raise CodegenError(f"Expected a kernel doc without '*/' (it is printed as a C comment). Got {spec.doc!r}.")
        out = [f"/* {spec.doc} */", f"void GEOATTN_NAME({spec.name}_d{d})({', '.join(params)})", "{"]
        out += block(self.consts, 1)
        out += block([f"double tile_{n}[TOKEN_CHUNK*{d}*LANES];" for n in spec.token_inputs], 1)
        out += block(sorted(set(self.decls), key=self.decls.index), 1)
        if spec.token_inputs:
            out.append(ind + "const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;")
        else:
            out.append(ind + "(void)T;  /* no token inputs */")
        out.append(ind + "for (int64_t b0 = 0; b0 < B; b0 += LANES) {")
        out.append(ind * 2 + "const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;")
        if self.loads:
            out.append(ind * 2 + "for (int l = 0; l < LANES; l++) {")
            out.append(ind * 3 + "const int64_t bl = b0 + (l < nl ? l : nl - 1);")
            out += block(self.loads, 3)
            out.append(ind * 2 + "}")
        out += block(init, 2)
        load = self._tile_load()
        def token_loop(load_lines, lane_lines, after=()):
            """Over the tiles of tokens, then the tokens, then the lanes (``after``: per token, after the lanes)."""
            return ([ind * 2 + "for (int64_t c = 0; c < nchunks; c++) {", *load_lines,
                     ind * 3 + "for (int64_t tt = 0; tt < nt; tt++) {", ind * 4 + "for (int l = 0; l < LANES; l++) {",
                     *block(lane_lines, 5), ind * 4 + "}", *after, ind * 3 + "}", ind * 2 + "}"])

        if phase["reduction"]:
            out += token_loop(block(load, 3), red_lines)
        if small_lines:
            out.append(ind * 2 + "for (int l = 0; l < LANES; l++) {")
            out += block(small_lines, 3)
            out.append(ind * 2 + "}")
        for name in spec.sample_outputs:
            sym = self.bound[name][0]
            out.append(ind * 2 + "for (int l = 0; l < nl; l++) {")
            for i in range(d):
                for j in range(d):
                    e = sym[i, j]
                    code = self.names[e] if not e.is_Number else _ScalarC({}).doprint(e)
                    if spec.sample_real:
                        code = f"(real_t)({code})"
                    out.append(ind * 3 + f"{name}[(int64_t)(b0 + l)*{d * d} + {i * d + j}] = {code};")
            out.append(ind * 2 + "}")
        for name in spec.maxabs_outputs:
            sym, pairs, _ = self.bound[name]
            consts = [abs(float(e)) for e in sym if e.is_Number]  # entries that are numbers count too
            out.append(ind * 2 + "for (int l = 0; l < nl; l++) {")
            out.append(ind * 3 + f"double m = {max(consts, default=0.0)!r}, a;")
            for s, _ in pairs:  # a NaN entry makes the maximum NaN
                out.append(ind * 3 + f"a = fabs({self.names[s]}); if (a > m || a != a) m = a;")
            out.append(ind * 3 + f"{name}[b0 + l] = m;")
            out.append(ind * 2 + "}")
        if phase["rowmap"]:
            reload = block(load, 3)
            if phase["reduction"]:  # one chunk: the tile still holds it
                reload = [ind * 3 + load[0], ind * 3 + "if (nchunks > 1) {", *block(load[1:], 4), ind * 3 + "}"]
            store = [ind * 4 + "for (int l = 0; l < nl; l++) {", *block(stores, 5), ind * 4 + "}"]
            out += token_loop(reload, row_lines, store)
        out.append(ind + "}")
        out.append("}")
        return "\n".join(out) + "\n"

    def _tile_load(self) -> list[str]:
        """Copy tokens ``t0 .. t0 + nt`` of the block's samples into the tiles (first line: ``t0`` and ``nt``)."""
        d = self.d
        lines = ["const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;",
                 "for (int l = 0; l < LANES; l++) {",
                 "    const int64_t bl = b0 + (l < nl ? l : nl - 1);"]
        for n in self.spec.token_inputs:
            lines += [f"    const real_t *src_{n} = {n} + (bl*T + t0)*{d};",
                      f"    for (int64_t tt = 0; tt < nt*{d}; tt++) tile_{n}[tt*LANES + l] = (double)src_{n}[tt];"]
        lines.append("}")
        return lines


def print_native_kernel(spec: NativeKernelSpec, d: int) -> str:
    """The C source of one function: ``spec`` at size ``d`` (``1 <= d <= spec.max_dim``), with token arrays of type
    ``real_t`` and its name through ``GEOATTN_NAME`` (:data:`REAL_PRELUDE` defines both)."""
    if not 1 <= d <= spec.max_dim:
        raise CodegenError(f"Expected 1 <= d <= {spec.max_dim} for {spec.name}. Got d = {d}.")
    return _Function(spec, d).build()

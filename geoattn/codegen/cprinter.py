r"""A printer from matrix bindings to C: the native CPU kernels.

A :class:`~geoattn.symbolic.kernel_spec.NativeKernelSpec` is first lowered, for each ``d`` up to its ``max_dim``,
to a scalar program (:func:`geoattn.codegen.lowering.lower`: every binding evaluated entrywise, its shared
subexpressions found, and sorted into reductions over the tokens, small ``d x d`` bindings and row maps); this
module prints that program as one C function with SymPy's C99 printer. The Triton printer
(:mod:`geoattn.codegen.tritonprinter`) prints the same program for the GPU. A kernel without token inputs has
small bindings only: the Cayley transform of ``T x T`` matrices with ``T <= 3`` and its VJP, printed with ``T``
renamed ``d`` and with ``sample_real`` (per-sample arrays in the input's real type).

Note [lanes]
------------
The samples are processed ``LANES`` at a time, and every per-sample value is an array of ``LANES`` doubles
indexed by the innermost loop variable ``l``: the loop bodies are straight-line arithmetic over ``l``, which the
compiler turns into vector instructions (one register of doubles: 8 with AVX-512, 4 with AVX2, Note [vector width]).
Tokens are copied, ``TOKEN_CHUNK`` at
a time, from the batch-first ``(B, T, d)`` input into a tile in that layout (converted to double there); a
sequence of at most ``TOKEN_CHUNK`` tokens is read once for both passes. The copy runs over the tile's entries
with the lanes innermost (a gather of one entry of ``LANES`` samples, a whole vector stored): about 1.8 times as
fast as one sample at a time with strided stores (one run of the copy alone, one thread, 65,536 tokens: d = 8,
T = 16: 0.17 -> 0.10 ms; d = 16, T = 64: 0.34 -> 0.17 ms per token input; an 8 x 8 transpose by shuffles was
slower than the gather, 0.12 and 0.22 ms). The last block of a batch whose size is
not a multiple of ``LANES`` repeats its last sample in the unused lanes and stores only the real ones, so every
sample goes through the same operations whatever its batch: no result depends on the rest of the batch.
Everything is computed in double; token outputs are rounded once, to the input's type, when stored.

Note [register sums]
--------------------
A reduction's running sums (one per lane for each entry of its bindings) are swept in groups of
``REGISTER_SUMS``: each group is loaded into vector locals, one pass over the tile's tokens adds to them, and they
are stored back; the next group makes its own pass over the same tile, still in the first-level cache. Without the
groups the compiler kept every sum of a ``d = 8`` pass in memory (most of its hot loop's instructions were stack
loads and stores); the order of the additions per sum is unchanged, so the results are bit-identical.

Note [vector width]
-------------------
GCC keeps a vector type wider than the target's registers in memory: with ``vector_size(64)`` on an AVX2 machine
(no AVX-512) every accumulator of a hot loop was a stack slot, each multiply-add a load, an add and a store
(``vfmadd213pd 384(%rsp), ...``, even for four accumulators). The kernels written for 64-byte vectors ran 3 to 50
times slower there than on an AVX-512 machine (one thread, float32, 65,536 tokens: the Gram pass of d = 8, T = 16
2.4 ms against 0.22). The kernels therefore take their vector width from :data:`VECTOR_PRELUDE`:
``GEOATTN_VBYTES`` is the width of one register of the target the compiler was told (64 bytes with AVX-512, 32
with AVX, 16 otherwise) and ``GEOATTN_VREGS`` the number of such registers (32 with AVX-512, 16 otherwise), which
the register blocking is sized from. A lane's arithmetic does not depend on how many lanes a vector holds, so the
results are the same, bit for bit, at every width the machine holds in registers (``tests/test_vector_width.py``);
a width wider than the registers, emulated through memory, may contract multiply-adds differently (the symplectic
backward differed there by a few units in the last place). One exception is stated in that test: the float64 LU
stage's pivoted recomputation at two lanes a vector (16 bytes) differs from the wider widths in the last bits
(within ``8 d eps``; its fast form is bit-identical at every width); the cause was not found. A second one was
found on an AVX-512 machine: the exponential stage at d = 8 with 64-byte vectors differs from its 16- and 32-byte
builds in the last bits (within ``8 d eps``), and the three are bit-identical once ``fp-contract=off`` replaces the
files' ``fp-contract=fast``: GCC fuses a different set of multiply-adds into FMAs at that width, so "a lane's
arithmetic" holds only up to which products are fused.
"""

from __future__ import annotations

from ..symbolic.kernel_spec import NativeKernelSpec
from .lowering import KINDS, ScalarEntries, binding_kind, lower
from .printer import CodegenError

#: the kind of a binding (kept under its former name for the tests of the sorting)
_kind = binding_kind

__all__ = ["LANES", "TOKEN_CHUNK", "REAL_TYPES", "REAL_PRELUDE", "VECTOR_PRELUDE", "c_function_name",
           "print_native_kernel"]

#: samples per block, a C expression: one vector register of doubles, 8 with AVX-512 and 4 with AVX2 (Note [lanes],
#: Note [vector width])
LANES = "(GEOATTN_VBYTES / 8)"
#: tokens per tile (Note [lanes])
TOKEN_CHUNK = 32
#: sums of a reduction kept in vector registers during one pass over a tile (Note [register sums]) with 32 vector
#: registers (AVX-512)
REGISTER_SUMS = 16
#: registers of the target -> sums per group: half of them, the rest hold the tokens' entries and the temporaries
REGISTER_SUMS_AT = {32: REGISTER_SUMS, 16: 8}
#: the block-scope C type of one value in every lane: a GCC/Clang vector of ``LANES`` doubles that may alias the
#: lane arrays and needs only their 8-byte alignment
LANES_TYPE = ("typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), "
              "may_alias));")
#: suffix -> C type of the token-sized arrays; a function is printed once, with ``real_t`` and
#: ``GEOATTN_NAME(...)``, and compiled for one of them (``-DGEOATTN_F32`` or ``-DGEOATTN_F64``)
REAL_TYPES = {"f32": "float", "f64": "double"}
#: the C lines that define ``GEOATTN_VBYTES`` (bytes of one vector register of the target) and ``GEOATTN_VREGS``
#: (how many there are) from the compiler's predefined macros, unless defined before (Note [vector width])
VECTOR_PRELUDE = """/* one vector register of the target: GCC keeps a wider vector type in memory (Note [vector width]);
   a definition given before this one (the tests' other widths) is kept */
#if defined(GEOATTN_VBYTES)
#elif defined(__AVX512F__)
#define GEOATTN_VBYTES 64
#define GEOATTN_VREGS 32
#elif defined(__AVX__)
#define GEOATTN_VBYTES 32
#define GEOATTN_VREGS 16
#else
#define GEOATTN_VBYTES 16
#define GEOATTN_VREGS 16
#endif"""
#: the C lines that define ``real_t`` and ``GEOATTN_NAME`` from the compiler's ``-DGEOATTN_<REAL>``, then
#: :data:`VECTOR_PRELUDE`
REAL_PRELUDE = "\n".join(
    [f"#{'if' if k == 0 else 'elif'} defined(GEOATTN_{sfx.upper()})\ntypedef {c} real_t;\n"
     f"#define GEOATTN_NAME(name) geoattn_##name##_{sfx}" for k, (sfx, c) in enumerate(REAL_TYPES.items())]
    + ["#else\n#error \"compile with -DGEOATTN_F32 or -DGEOATTN_F64\"\n#endif", VECTOR_PRELUDE])


def c_function_name(spec: NativeKernelSpec, d: int, real: str) -> str:
    """The exported name of the C function of ``spec`` at size ``d`` for the real type ``real`` (``"f32"``/``"f64"``)."""
    return f"geoattn_{spec.name}_d{d}_{real}"


class _ScalarC(ScalarEntries):
    """The shared scalar printer (:class:`~geoattn.codegen.lowering.ScalarEntries`) with C's literals."""

    def _print_Integer(self, expr) -> str:
        return f"{int(expr)}.0"


class _Function:
    """The C source of one kernel at one ``d``, printed from its :class:`~geoattn.codegen.lowering.ScalarProgram`
    (built by :func:`print_native_kernel`)."""

    def __init__(self, spec: NativeKernelSpec, d: int):
        self.spec, self.d = spec, d
        self.program = lower(spec, d)
        self.names: dict = {}  # entry symbol -> C code
        self.decls: list[str] = []
        for name, row in self.program.tokens.items():
            for j, s in enumerate(row):
                self.names[s] = f"tile_{name}[({j} + {d}*tt)*LANES + l]"
        self.loads: list[str] = []
        for name, stored in self.program.samples.items():
            for s, (i, j) in stored:
                self._lane(s)
                cast = "(double)" if spec.sample_real else ""
                lane = self.names[s].replace("[l]", "")
                self.loads.append(f"{lane}[l] = {cast}{name}[(int64_t)bl*{d * d} + {i * d + j}];")
        self.consts: list[str] = []
        for name, stored in self.program.shared.items():
            for s, (i, j) in stored:
                self.names[s] = str(s)
                self.consts.append(f"const double {s} = {name}[{i * d + j}];")

    def _lane(self, s) -> None:
        self.names[s] = f"{s}[l]"
        self.decls.append(f"double {s}[LANES];")

    def _assign(self, b, target) -> list[str]:
        """C statements computing the lowered binding ``b``, its shared subexpressions as locals;
        ``target(symbol, code)`` is the statement for each result."""
        lines = []
        for t, e in b.temps:
            self.names[t] = str(t)
            lines.append(f"const double {t} = {_ScalarC(self.names).doprint(e)};")
        for s, e in b.results:
            lines.append(target(s, _ScalarC(self.names).doprint(e)))
        return lines

    def build(self) -> str:
        prog, spec, d = self.program, self.spec, self.d
        phase = {k: [b.name for b in prog.phase(k)] for k in KINDS}
        outputs = set(spec.sample_outputs) | set(spec.maxabs_outputs)
        rowmap_atoms = prog.rowmap_atoms()
        body: list[str] = []
        # phase 1: reductions over the tokens, in groups of accumulators held in registers (Note [register sums])
        for b in prog.phase("reduction"):
            for s, _ in b.pairs:
                self._lane(s)
                body.append(f"for (int l = 0; l < LANES; l++) {s}[l] = 0.0;")
        red_lines = self._reduction_groups(prog.phase("reduction"))
        # phase 2: the small bindings, one loop over the lanes
        small_lines = []
        for b in prog.phase("small"):
            keep = b.name in outputs or any(s in rowmap_atoms for s, _ in b.pairs)
            for s, _ in b.pairs:
                if keep:
                    self._lane(s)
                else:
                    self.names[s] = str(s)
            small_lines += self._assign(
                b, (lambda s, c: f"{s}[l] = {c};") if keep else (lambda s, c: f"const double {s} = {c};"))
        # phase 3: the row maps, one row per token
        row_lines, stores = [], []
        for b in prog.phase("rowmap"):
            name, sym = b.name, b.value
            self.decls.append(f"double row_{name}[{d}][LANES];")
            for j in range(d):
                self.names.setdefault(sym[0, j], f"row_{name}[{j}][l]")
            row_lines += self._assign(b, lambda s, c: f"{self.names[s]} = {c};")
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
        if self.program.phase("reduction"):
            out.append(ind + LANES_TYPE)
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
            out += [ind * 2 + "for (int64_t c = 0; c < nchunks; c++) {", *block(load, 3), *block(red_lines, 3),
                    ind * 2 + "}"]
        if small_lines:
            out.append(ind * 2 + "for (int l = 0; l < LANES; l++) {")
            out += block(small_lines, 3)
            out.append(ind * 2 + "}")
        for name in spec.sample_outputs:
            sym = self.program.binding(name).value
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
            b = self.program.binding(name)
            sym, pairs = b.value, b.pairs
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

    def _reduction_groups(self, bindings) -> list[str]:
        """The reductions' statements for one tile: per group of at most :data:`REGISTER_SUMS` sums (of
        :data:`REGISTER_SUMS_AT` the target's registers), the sums loaded into vector locals, one pass over the tile's
        tokens, the sums stored back (Note [register sums])."""
        results, temps = [], []
        for b in bindings:
            temps += b.temps
            results += b.results
        vnames = dict(self.names)
        loads = {}  # token entry symbol -> (its vector local, the pointer expression of its row)
        for name, row in self.program.tokens.items():
            for j, sym in enumerate(row):
                loads[sym] = f"v_{name}_{j}", f"tile_{name} + ({j} + {self.d}*tt)*LANES"
                vnames[sym] = loads[sym][0]
        for t, _ in temps:
            vnames[t] = str(t)
        lines = []
        for k, (regs, size) in enumerate(REGISTER_SUMS_AT.items()):
            lines.append(f"#if GEOATTN_VREGS >= {regs}" if k == 0 else "#else")
            lines += self._reduction_group_lines(results, temps, vnames, loads, size)
        return lines + ["#endif"]

    @staticmethod
    def _reduction_group_lines(results, temps, vnames, loads, size: int) -> list[str]:
        lines = []
        for g in range(0, len(results), size):
            group = results[g:g + size]
            codes = [_ScalarC(vnames).doprint(e) for _, e in group]
            used = set().union(*(e.free_symbols for _, e in group), *(e.free_symbols for _, e in temps))
            lines.append("{")
            lines += [f"    geoattn_lanes_t acc{k} = *(const geoattn_lanes_t *){s};" for k, (s, _) in enumerate(group)]
            lines.append("    for (int64_t tt = 0; tt < nt; tt++) {")
            lines += [f"        const geoattn_lanes_t {v} = *(const geoattn_lanes_t *)({ptr});"
                      for sym, (v, ptr) in loads.items() if sym in used]
            lines += [f"        const geoattn_lanes_t {t} = {_ScalarC(vnames).doprint(e)};" for t, e in temps]
            lines += [f"        acc{k} = acc{k} + {c};" for k, c in enumerate(codes)]
            lines.append("    }")
            lines += [f"    *(geoattn_lanes_t *){s} = acc{k};" for k, (s, _) in enumerate(group)]
            lines.append("}")
        return lines

    def _tile_load(self) -> list[str]:
        """Copy tokens ``t0 .. t0 + nt`` of the block's samples into the tiles (first line: ``t0`` and ``nt``)."""
        d = self.d
        lines = ["const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;"]
        names = self.spec.token_inputs
        lines += [f"const real_t *src_{n}[LANES];" for n in names]
        lines += ["for (int l = 0; l < LANES; l++) {",
                  "    const int64_t bl = b0 + (l < nl ? l : nl - 1);"]
        lines += [f"    src_{n}[l] = {n} + (bl*T + t0)*{d};" for n in names]
        lines.append("}")
        for n in names:  # lanes innermost: one gather per entry, not one strided store per value (Note [lanes])
            lines += [f"for (int64_t tt = 0; tt < nt*{d}; tt++)",
                      f"    for (int l = 0; l < LANES; l++) tile_{n}[tt*LANES + l] = (double)src_{n}[l][tt];"]
        return lines


def print_native_kernel(spec: NativeKernelSpec, d: int) -> str:
    """The C source of one function: ``spec`` at size ``d`` (``1 <= d <= spec.max_dim``), with token arrays of type
    ``real_t`` and its name through ``GEOATTN_NAME`` (:data:`REAL_PRELUDE` defines both)."""
    return _Function(spec, d).build()

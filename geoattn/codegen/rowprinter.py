r"""A printer of the Gram kernels' token passes that vectorises across a token's row: the row form.

At ``d = 8`` and ``d = 16`` a token row :math:`x_t` is 8 or 16 contiguous values, a whole number of vectors of
doubles (8, 4 or 2 doubles a vector by the machine's width, Note [vector width] in
:mod:`geoattn.codegen.cprinter`). A sample's ``T x d`` tokens are processed together, one sample after the other,
with no copy into lanes (the lane printer's tile gather, Note [lanes] in :mod:`geoattn.codegen.cprinter`):

* a reduction ``S = a.T*b`` of two token inputs is :math:`S_{i,:} \mathrel{+}= a_{t,i}\,b_{t,:}` per token: one
  broadcast multiply-add per row of ``S``, the rows held in vector accumulators, at most :data:`ROW_REGISTERS_AT`
  vectors per sweep over the sample's tokens (its tokens are in the first-level cache from the
  second sweep on);
* a row map ``z = a*S`` or ``z = a*S.T``, or a sum of such terms, is :math:`z_t = \sum_i a_{t,i} S_{i,:}` (with
  the rows of :math:`S^T` for ``S.T``, transposed once per sample), rounded to the output's type when stored.

Note [row sums]
---------------
Every sum is in double, in the order of the tokens, from ``0.0``. The printed function is compiled with fused
multiply-adds (``#pragma GCC optimize("fp-contract=fast")``), the reductions included: for float32 tokens each product
of two entries is exact in double, so a fused and an unfused step round alike and ``Gram`` and ``Pbar`` are
bit-identical to the lane printer's sums (tested); for float64 tokens they may differ from those in the last bits
(one rounding fewer per step). The row maps sum their ``d`` terms in the order of ``i`` with fused multiply-adds (GCC's ``fp-contract``, as in the
``d x d`` stage), then round once to the output type: the same accuracy as the lane printer's, which sums in the
order of SymPy's printed expression, but not always the same last bit. A sample's results depend on its own tokens
alone, so no split of the batch changes them and a NaN sample touches no other.

Note [two tokens a step]
------------------------
The row maps were bound by their loads: each token reads every row of ``S`` (``d`` rows, ``d / vw`` vectors each at ``vw`` doubles a vector)
for ``d`` multiply-adds. They take :data:`ROW_UNROLL` tokens a step, so each row of ``S`` is read once for two
tokens' multiply-adds, and an odd last token alone. Each token's sum is the same sequence of operations as one
token at a time, so the outputs are bit-identical to the one-token loop's.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatrixSymbol, Transpose

from ..errors import CodegenError
from ..symbolic.kernel_spec import NativeKernelSpec

__all__ = ["ROW_DIMS", "ROW_REGISTERS_AT", "ROW_CHUNK", "ROW_UNROLL", "print_row_kernel",
           "row_terms"]

#: the widths the row form is printed for: whole vectors of doubles per row at every vector width
ROW_DIMS = (8, 16)
#: doubles per vector -> vectors accumulated per sweep over a sample's tokens: half of the target's registers
#: (AVX-512's 32 of eight doubles; 16 of four with AVX2, of two without), the rest hold the token rows and the
#: broadcasts (Note [vector width] in :mod:`geoattn.codegen.cprinter`)
ROW_REGISTERS_AT = {8: 16, 4: 8, 2: 8}
#: doubles per vector -> the C condition on ``GEOATTN_VBYTES`` under which the body of that width is compiled
WIDTH_CONDITIONS = {8: "GEOATTN_VBYTES >= 64", 4: "GEOATTN_VBYTES >= 32", 2: None}
#: tokens per chunk: a chunk's rows are converted to double once, into a buffer of ``ROW_CHUNK*d`` doubles per
#: token input (4 KiB at d = 16), read by every sweep from the first-level cache
ROW_CHUNK = 32
#: tokens per step of the row maps' loop (Note [two tokens a step])
ROW_UNROLL = 2
#: the most output vectors of the row maps held for one step of :data:`ROW_UNROLL` tokens; a row of more vectors
#: (d = 16 at two doubles per vector) takes one token a step
ROW_MAP_REGISTERS = 8


def _name(e, allowed, what: str) -> str:
    if isinstance(e, MatrixSymbol) and e.name in allowed:
        return e.name
    raise CodegenError(f"Expected {what} (one of {tuple(allowed)}). Got {sp.sstr(e)}.")


def row_terms(e, spec: NativeKernelSpec) -> list[tuple[str, str, bool]]:
    """The terms ``(token input, per-sample matrix, transposed)`` of a row map ``a*S``, ``a*S.T`` or a sum of them.

    Parameters
    ----------
    e : sympy matrix expression
        the binding's expression.
    spec : NativeKernelSpec
        the kernel, naming its token and per-sample inputs.

    Returns
    -------
    list of (str, str, bool)

    Raises
    ------
    CodegenError
        for any other expression (a coefficient, a product of three factors, a per-sample matrix that is not a
        ``"general"`` input).
    """
    terms = e.args if isinstance(e, MatAdd) else (e,)
    out = []
    for term in terms:
        if not isinstance(term, MatMul) or len(term.args) != 2:
            raise CodegenError(f"Expected a row map a*S or a*S.T. Got {sp.sstr(term)}.")
        a, S = term.args
        general = [k for k, v in spec.sample_inputs.items() if v == "general"]
        tr = isinstance(S, Transpose)
        out.append((_name(a, spec.token_inputs, "a token input"),
                    _name(S.arg if tr else S, general, "a general per-sample matrix"), tr))
    return out


def _reduction(e, spec: NativeKernelSpec) -> tuple[str, str] | None:
    """``(a, b)`` for a binding ``a.T*b`` of two token inputs, else None."""
    if isinstance(e, MatMul) and len(e.args) == 2 and isinstance(e.args[0], Transpose):
        return (_name(e.args[0].arg, spec.token_inputs, "a token input"),
                _name(e.args[1], spec.token_inputs, "a token input"))
    return None


def _check(spec: NativeKernelSpec, d: int) -> None:
    if d not in ROW_DIMS or d > spec.max_dim:
        raise CodegenError(f"Expected d in {ROW_DIMS} and at most {spec.max_dim} for {spec.name}. Got d={d}.")
    if spec.shared_inputs or spec.maxabs_outputs or spec.sample_real:
        raise CodegenError(f"Expected a kernel of token inputs, general per-sample inputs, token and sample outputs. "
                           f"Got {spec.name} with shared inputs {tuple(spec.shared_inputs)}, maxabs outputs "
                           f"{spec.maxabs_outputs}, sample_real={spec.sample_real}.")
    if not spec.token_inputs:
        raise CodegenError(f"Expected at least one token input. Got none in {spec.name}.")
    if "*/" in spec.doc:
        raise CodegenError(f"Expected a kernel doc without '*/' (it is printed as a C comment). Got {spec.doc!r}.")
    for name, e in spec.bindings:
        red = _reduction(e, spec)
        if red is not None and name not in spec.sample_outputs:
            raise CodegenError(f"Expected the reduction {name} among the sample outputs {spec.sample_outputs}. "
                               f"Got it elsewhere.")
        if red is None:
            row_terms(e, spec)
            if name not in spec.token_outputs:
                raise CodegenError(f"Expected the row map {name} among the token outputs {spec.token_outputs}. "
                                   f"Got it elsewhere.")
    stored = [n for n, _ in spec.bindings]
    missing = [n for n in (*spec.sample_outputs, *spec.token_outputs) if n not in stored]
    if missing:
        raise CodegenError(f"Expected a binding for every output. Got none for {missing}.")


def _types(vw: int) -> list[str]:
    """The vector types of a body printed for ``vw`` doubles per vector."""
    return [f"typedef double row_t __attribute__((vector_size({vw}*sizeof(double))));",
            f"typedef double row_u __attribute__((vector_size({vw}*sizeof(double)), aligned(8), may_alias));",
            f"typedef real_t real_u __attribute__((vector_size({vw}*sizeof(real_t)), aligned(sizeof(real_t)), "
            "may_alias));"]


def _row(name: str, d: int, h: int, vw: int) -> str:
    """The C expression of vector ``h`` of token row ``t`` of the chunk of the token input ``name`` (in double)."""
    return f"(*(const row_u *)({name}_b + t*{d} + {vw * h}))"


def _reductions(spec: NativeKernelSpec, d: int, vw: int) -> list[str]:
    """One chunk's sweeps of the reductions: per group of rows, the rows' sums loaded from the outputs, one pass
    over the chunk's tokens (a broadcast entry of ``a`` times the row of ``b``), the sums stored back."""
    rows = [(name, i, h, a, b) for name, e in spec.bindings if (r := _reduction(e, spec)) for a, b in [r]
            for i in range(d) for h in range(d // vw)]
    lines, regs = [], ROW_REGISTERS_AT[vw]
    for g in range(0, len(rows), regs):
        group = rows[g:g + regs]
        lines.append("{")
        lines += [f"    row_t acc{k} = *(const row_u *)({name}_s + {i * d + vw * h});"
                  for k, (name, i, h, _, _) in enumerate(group)]
        lines.append("    for (int64_t t = 0; t < nt; t++) {")
        lines += [f"        acc{k} = acc{k} + {a}_b[t*{d} + {i}]*{_row(b, d, h, vw)};"
                  for k, (_, i, h, a, b) in enumerate(group)]
        lines.append("    }")
        lines += [f"    *(row_u *)({name}_s + {i * d + vw * h}) = acc{k};"
                  for k, (name, i, h, _, _) in enumerate(group)]
        lines.append("}")
    return lines


def _rowmap_step(name: str, parts: list, nh: int, d: int, units: int, vw: int) -> list[str]:
    """The lines of row map ``name`` for ``units`` consecutive tokens ``t, t + 1, ...``: each term's row of the
    per-sample matrix is read once for all of them (Note [two tokens a step]); every token's sum is the same
    sequence of operations whatever ``units`` is."""
    tok = [("t" if units == 1 else f"(t + {u})", u) for u in range(units)]
    lines = [f"row_t o_{name}_{h}_{u} = {a}_b[{t}*{d} + {i}]*{row};" for h, a, i, row in parts[:nh] for t, u in tok]
    lines += [f"o_{name}_{h}_{u} = o_{name}_{h}_{u} + {a}_b[{t}*{d} + {i}]*{row};"
              for h, a, i, row in parts[nh:] for t, u in tok]
    return lines + [f"*(real_u *)({name}_s + (t0 + {t})*{d} + {vw * h}) = __builtin_convertvector(o_{name}_{h}_{u}, "
                    f"real_u);" for t, u in tok for h in range(nh)]


def _rowmaps(spec: NativeKernelSpec, d: int, vw: int) -> tuple[list[str], list[str]]:
    """The per-sample preparation (the transposed inputs) and one chunk's loop over its tokens for the row maps:
    :data:`ROW_UNROLL` tokens a step (one where a step's outputs would exceed :data:`ROW_MAP_REGISTERS` vectors),
    then the remaining tokens one at a time."""
    prep, step, rest, transposed = [], [], [], []
    units = ROW_UNROLL if ROW_UNROLL * (d // vw) <= ROW_MAP_REGISTERS else 1
    for name, e in spec.bindings:
        if _reduction(e, spec) is not None:
            continue
        terms = row_terms(e, spec)
        for S in (S for _, S, tr in terms if tr and S not in transposed):
            transposed.append(S)
        nh = d // vw  # every term's broadcast entry serves the row's vectors one after the other
        parts = [(h, a, i, f"(*(const row_u *)({S + 'T' if tr else S + '_s'} + {i * d + vw * h}))")
                 for a, S, tr in terms for i in range(d) for h in range(nh)]
        step += _rowmap_step(name, parts, nh, d, units, vw)
        rest += _rowmap_step(name, parts, nh, d, 1, vw)
    for S in transposed:
        prep.append(f"double {S}T[{d * d}] __attribute__((aligned(64)));")
        prep.append(f"for (int i = 0; i < {d}; i++) for (int j = 0; j < {d}; j++) {S}T[j*{d} + i] = {S}_s[i*{d} + j];")
    return prep, ["int64_t t = 0;", f"for (; t + {units - 1} < nt; t += {units}) {{",
                  *["    " + ln for ln in step], "}", "for (; t < nt; t++) {", *["    " + ln for ln in rest], "}"]


def _chunk(spec: NativeKernelSpec, d: int) -> list[str]:
    """The chunk's token rows in double: the input itself for double tokens, else converted into a buffer."""
    lines = ["const int64_t nt = T - t0 < ROW_CHUNK ? T - t0 : ROW_CHUNK;", "#if defined(GEOATTN_F64)"]
    lines += [f"const double *restrict {n}_b = {n}_s + t0*{d};" for n in spec.token_inputs]
    lines.append("#else")
    for n in spec.token_inputs:
        lines += [f"for (int64_t k = 0; k < nt*{d}; k++) {n}_buf[k] = (double){n}_s[t0*{d} + k];",
                  f"const double *restrict {n}_b = {n}_buf;"]
    return lines + ["#endif"]


def print_row_kernel(spec: NativeKernelSpec, d: int) -> str:
    """The C source of one token pass in the row form (module docstring): ``spec`` at ``d`` in :data:`ROW_DIMS`,
    with the lane printer's name and parameters (:func:`geoattn.codegen.cprinter.print_native_kernel`), so the
    drivers call either; one function per vector width of :data:`ROW_REGISTERS_AT`, each under its condition on
    ``GEOATTN_VBYTES`` (:data:`WIDTH_CONDITIONS`, Note [vector width] in :mod:`geoattn.codegen.cprinter`).

    Parameters
    ----------
    spec : NativeKernelSpec
        reductions ``name = a.T*b`` of token inputs (sample outputs) and row maps ``name = a*S``, ``a*S.T`` or sums
        of them (token outputs), ``S`` a general per-sample input.
    d : int
        the width, one of :data:`ROW_DIMS`.

    Returns
    -------
    str
        the C function, with ``real_t``, ``GEOATTN_NAME`` and ``GEOATTN_VBYTES`` of
        :data:`geoattn.codegen.cprinter.REAL_PRELUDE`.

    Raises
    ------
    CodegenError
        for a binding of any other shape, a ``d`` outside :data:`ROW_DIMS`, or arguments the row form does not take.
    """
    _check(spec, d)
    widths = list(ROW_REGISTERS_AT)
    out = []
    for k, vw in enumerate(widths):
        cond = WIDTH_CONDITIONS[vw]
        out.append(f"#if {cond}" if k == 0 else f"#elif {cond}" if cond else "#else")
        out.append(_print_width(spec, d, vw))
    return "\n".join(out) + "#endif\n"


def _print_width(spec: NativeKernelSpec, d: int, vw: int) -> str:
    """The function of :func:`print_row_kernel` for ``vw`` doubles per vector."""
    params = ["int64_t B", "int64_t T"]
    params += [f"const real_t *restrict {n}" for n in spec.token_inputs]
    params += [f"const double *restrict {n}" for n in spec.sample_inputs]
    params += [f"real_t *restrict {n}" for n in spec.token_outputs]
    params += [f"double *restrict {n}" for n in spec.sample_outputs]
    ind = "    "
    maps = any(_reduction(e, spec) is None for _, e in spec.bindings)
    out = [f"/* {spec.doc} Printed in the row form, {vw} doubles per vector. */", "#ifndef ROW_CHUNK", f"#define ROW_CHUNK {ROW_CHUNK}",
           "#endif"]
    out += ["#if defined(__GNUC__) && !defined(__clang__)", "#pragma GCC push_options",
                '#pragma GCC optimize ("fp-contract=fast")', "#endif"]
    out += [f"void GEOATTN_NAME({spec.name}_d{d})({', '.join(params)})", "{"]
    out += [ind + t for t in _types(vw)[:2 + bool(spec.token_outputs)]]
    out += ["#if !defined(GEOATTN_F64)"] + [ind + f"double {n}_buf[ROW_CHUNK*{d}] __attribute__((aligned(64)));"
                                          for n in spec.token_inputs] + ["#endif"]
    out.append(ind + "for (int64_t b = 0; b < B; b++) {")
    out += [ind * 2 + f"const real_t *restrict {n}_s = {n} + b*T*{d};" for n in spec.token_inputs]
    out += [ind * 2 + f"const double *restrict {n}_s = {n} + b*{d * d};" for n in spec.sample_inputs]
    out += [ind * 2 + f"real_t *restrict {n}_s = {n} + b*T*{d};" for n in spec.token_outputs]
    out += [ind * 2 + f"double *restrict {n}_s = {n} + b*{d * d};" for n in spec.sample_outputs]
    out += [ind * 2 + f"for (int k = 0; k < {d * d}; k++) {n}_s[k] = 0.0;" for n in spec.sample_outputs]
    prep, loop = _rowmaps(spec, d, vw) if maps else ([], [])
    out += [ind * 2 + ln for ln in prep]
    out.append(ind * 2 + "for (int64_t t0 = 0; t0 < T; t0 += ROW_CHUNK) {")
    out += [(ind * 3 if not ln.startswith("#") else "") + ln for ln in _chunk(spec, d)]
    out += [ind * 3 + ln for ln in _reductions(spec, d, vw) + loop]
    out.append(ind * 2 + "}")
    out += [ind + "}", "}"]
    out += ["#if defined(__GNUC__) && !defined(__clang__)", "#pragma GCC pop_options", "#endif"]
    return "\n".join(out) + "\n"

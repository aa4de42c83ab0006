r"""A printer from matrix bindings to Triton: the GPU kernels.

It prints the scalar program of :func:`geoattn.codegen.lowering.lower`, the same the C printer
(:mod:`geoattn.codegen.cprinter`) prints, as one ``@triton.jit`` function per kernel and ``d``.

Note [Triton lanes]
-------------------
One program handles ``BLOCK`` samples (a ``constexpr`` the caller picks), one lane each: every per-sample value
is a ``(BLOCK,)`` block of float64 values, so the straight-line ``d x d`` arithmetic runs on all lanes at once
and stays in registers. A reduction over the tokens is a loop over them that loads one row per lane and adds
the per-token term to its accumulators; a row map is a second loop that loads the rows again, computes the
output row and stores it rounded once to the output's type. A batch whose size is not a multiple of ``BLOCK``
masks the lanes past its end: they load zeros, which no stored value depends on, so a sample's result never
depends on the rest of its batch (a NaN in one sample reaches no other lane). Every value is computed in float64
whatever the storage (float32, float16 or bfloat16 tokens; the residual check of Note [closed-form residual check]
in :mod:`geoattn.kernels._gram` reads a float64 residual). Numbers are printed so that every constant is exact:
integers, and fractions as a float64 one divided by the denominator (a Python float literal would be rounded to
float32 by Triton).
"""

from __future__ import annotations

import sympy as sp

from ..symbolic.kernel_spec import NativeKernelSpec
from .lowering import ScalarEntries, lower
from .printer import CodegenError

__all__ = ["triton_function_name", "print_triton_kernel", "SUPPORTED_FUNCTIONS"]

#: the SymPy functions a kernel may call, each computed in float64 on its float64 argument: Triton's ``tl.sin`` and
#: ``tl.cos`` of float64 values compile to libdevice's double-precision code on NVIDIA GPUs (no ``.approx``
#: instruction), ``sinc`` (unnormalised, ``sin(t)/t``) to a guarded quotient; every other function is refused
SUPPORTED_FUNCTIONS = {"sin": "tl.sin", "cos": "tl.cos", "sinc": "sinc"}

_IND = "    "
#: a float64 1 per lane: constants multiplied by it are rounded in float64, not in float32
_ONE = "_one = tl.full((BLOCK,), 1.0, tl.float64)"


def triton_function_name(spec: NativeKernelSpec, d: int) -> str:
    """The name of the ``@triton.jit`` function of ``spec`` at size ``d``."""
    return f"{spec.name}_d{d}"


class _ScalarTriton(ScalarEntries):
    """The shared scalar printer (:class:`~geoattn.codegen.lowering.ScalarEntries`) with every constant exact in
    float64."""

    target = "Triton"

    def _print_Integer(self, expr) -> str:
        if abs(int(expr)) >= 2**24:
            raise CodegenError(f"Expected integers below 2**24 (exact in float32) in a Triton kernel. Got {expr}.")
        return f"{int(expr)}.0"

    def _print_Rational(self, expr) -> str:
        p, q = int(expr.p), int(expr.q)
        if max(abs(p), q) >= 2**24:
            raise CodegenError(f"Expected fractions of integers below 2**24 in a Triton kernel. Got {expr}.")
        if q & (q - 1) == 0:  # a power of two: the quotient of the literals is exact in float32
            return f"({p}.0/{q}.0)"
        return f"(_one*{p}.0/{q}.0)"  # _one: a float64 1, so the quotient is rounded in float64

    def _print_Float(self, expr) -> str:
        raise CodegenError(f"Expected exact numbers in a Triton kernel. Got the float {expr}.")

    def _print(self, expr, **kwargs) -> str:
        # every function goes through _print_Function, also those SymPy's C printer knows (cos, exp, ...)
        if isinstance(expr, sp.Piecewise):
            return self._print_Piecewise(expr)
        if isinstance(expr, sp.Function):
            return self._print_Function(expr)
        return super()._print(expr, **kwargs)

    def _print_Pow(self, expr) -> str:
        if expr.exp == sp.Rational(1, 2):  # sqrt.rn.f64 on the GPU: correctly rounded
            return f"tl.sqrt({self._print(expr.base)})"
        return super()._print_Pow(expr)

    def _print_Piecewise(self, expr) -> str:
        # a select per lane (tl.where): every branch is computed on every lane and the condition picks one, so a
        # branch need not be finite where it is not picked (a series below a switch point, a quotient above it)
        *pieces, (last, otherwise) = expr.args
        if otherwise is not sp.true:
            raise CodegenError(f"Expected a Piecewise whose last branch holds otherwise (True) in a Triton kernel. "
                               f"Got the condition {otherwise} in {expr}.")
        out = self._print(last)
        for value, cond in reversed(pieces):
            out = f"tl.where({self._condition(cond)}, {self._print(value)}, {out})"
        return out

    def _condition(self, cond) -> str:
        ops = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">", sp.GreaterThan: ">="}
        if type(cond) not in ops:
            raise CodegenError(f"Expected a condition a < b, a <= b, a > b or a >= b of scalars in a Triton kernel's "
                               f"Piecewise. Got {cond}.")
        return f"({self._print(cond.lhs)} {ops[type(cond)]} {self._print(cond.rhs)})"

    def _print_Function(self, expr) -> str:
        name = type(expr).__name__
        if name not in SUPPORTED_FUNCTIONS or len(expr.args) != 1:
            raise CodegenError(f"Expected + - * / integer powers, sqrt and the functions {sorted(SUPPORTED_FUNCTIONS)} "
                               f"of one argument in a Triton kernel. Got {expr}.")
        arg = self._print(expr.args[0])
        if name == "sinc":  # sin(t)/t, 1 at t = 0; the quotient never divides by zero (no NaN in a dropped branch)
            return f"tl.where({arg} == 0.0, 1.0, tl.sin({arg})/tl.where({arg} == 0.0, 1.0, {arg}))"
        return f"{SUPPORTED_FUNCTIONS[name]}({arg})"


class _Kernel:
    """The Triton source of one kernel at one ``d`` (built by :func:`print_triton_kernel`)."""

    def __init__(self, spec: NativeKernelSpec, d: int):
        self.spec, self.d = spec, d
        self.program = lower(spec, d)
        self.names: dict = {}
        for row in self.program.tokens.values():
            for s in row:
                self.names[s] = str(s)
        for table in (self.program.samples, self.program.shared):
            for stored in table.values():
                for s, _ in stored:
                    self.names[s] = str(s)

    def _code(self, e) -> str:
        return _ScalarTriton(self.names).doprint(e)

    def _value(self, e) -> str:
        """A ``(BLOCK,)`` float64 block of the entry ``e`` (a symbol of the program or a number)."""
        return f"(_one*{self._code(e)})" if e.is_Number else self.names[e]

    def _assign(self, b, target) -> list[str]:
        lines = []
        for t, e in b.temps:
            self.names[t] = str(t)
            lines.append(f"{t} = {self._code(e)}")
        for s, e in b.results:
            lines.append(target(s, self._code(e)))
        return lines

    def _token_loads(self) -> list[str]:
        d = self.d
        return [f"{s} = tl.load({n}_ptr + (_b*T + _t)*{d} + {j}, mask=_live, other=0.0).to(tl.float64)"
                for n, row in self.program.tokens.items() for j, s in enumerate(row)]

    def build(self) -> str:
        prog, spec, d = self.program, self.spec, self.d
        params = [f"{n}_ptr" for n in spec.parameters()]
        out = ["@triton.jit", f"def {triton_function_name(spec, d)}(B, T, {', '.join(params)}, BLOCK: tl.constexpr):"]
        body = [f"# {line}" for line in _wrap(spec.doc)]
        body += [f"# from: {n} = {_sstr(e)}" for n, e in spec.bindings]
        body += [f"# verified by: {', '.join(spec.claims) or '-'}"]
        body += ["_b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)",
                 "_live = _b < B",
                 _ONE]
        for name, stored in prog.shared.items():
            body += [f"{s} = tl.load({name}_ptr + {i * d + j}).to(tl.float64)" for s, (i, j) in stored]
        for name, stored in prog.samples.items():
            body += [f"{s} = tl.load({name}_ptr + _b*{d * d} + {i * d + j}, mask=_live, other=0.0).to(tl.float64)"
                     for s, (i, j) in stored]
        reductions = prog.phase("reduction")
        if reductions:
            loop = self._token_loads()
            for b in reductions:
                # tl.full, not tl.zeros: tl.zeros is itself a jit function, which the interpreter runs only when it
                # was imported with the interpreter on
                body += [f"{s} = tl.full((BLOCK,), 0.0, tl.float64)" for s, _ in b.pairs]
                for s, _ in b.pairs:
                    self.names[s] = str(s)
                loop += self._assign(b, lambda s, c: f"{s} += {c}")
            body += ["for _t in range(0, T):", *(_IND + ln for ln in loop)]
        for b in prog.phase("small"):
            for s, _ in b.pairs:
                self.names[s] = str(s)
            body += self._assign(b, lambda s, c: f"{s} = {c}")
        for name in spec.sample_outputs:
            value = prog.binding(name).value
            cast = f".to({name}_ptr.dtype.element_ty)" if spec.sample_real else ""
            body += [f"tl.store({name}_ptr + _b*{d * d} + {i * d + j}, {self._value(value[i, j])}{cast}, mask=_live)"
                     for i in range(d) for j in range(d)]
        for name in spec.maxabs_outputs:
            b = prog.binding(name)
            consts = [abs(float(e)) for e in b.value if e.is_Number]
            top = max(consts, default=0.0)
            if top != int(top):
                raise CodegenError(f"Expected integer constant entries in the maxabs output {name}. Got {top}.")
            body.append(f"_m = _one*{float(top)!r}")
            for s, _ in b.pairs:  # a NaN entry makes the maximum NaN
                body += [f"_a = tl.abs({s})", "_m = tl.where((_a > _m) | (_a != _a), _a, _m)"]
            body.append(f"tl.store({name}_ptr + _b, _m, mask=_live)")
        rowmaps = prog.phase("rowmap")
        if rowmaps:
            loop = self._token_loads()
            for b in rowmaps:
                for s, _ in b.pairs:
                    self.names[s] = str(s)
                loop += self._assign(b, lambda s, c: f"{s} = {c}")
                loop += [f"tl.store({b.name}_ptr + (_b*T + _t)*{d} + {j}, "
                         f"{self._value(b.value[0, j])}.to({b.name}_ptr.dtype.element_ty), mask=_live)"
                         for j in range(d)]
            body += ["for _t in range(0, T):", *(_IND + ln for ln in loop)]
        if not any("_one" in ln for ln in body if ln != _ONE):
            body.remove(_ONE)  # no constant needs it
        return "\n".join(out + [_IND + ln for ln in body]) + "\n"


def _sstr(e) -> str:
    import sympy as sp

    return sp.sstr(e)


def _wrap(text: str, width: int = 100) -> list[str]:
    """``text`` in lines of at most ``width`` characters (words kept whole)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def print_triton_kernel(spec: NativeKernelSpec, d: int) -> str:
    """The Python source of one ``@triton.jit`` function: ``spec`` at size ``d`` (``1 <= d <= spec.max_dim``),
    called as ``f[grid](B, T, *arrays, BLOCK=...)`` with the arrays of ``spec.parameters()`` and
    ``grid = (cdiv(B, BLOCK),)`` (Note [Triton lanes])."""
    return _Kernel(spec, d).build()

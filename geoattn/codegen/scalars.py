"""Elementwise torch code of the scalar coefficients of the printed kernels, and the helpers they call.

:class:`ScalarPrinter` prints a scalar SymPy expression (numbers, sums, products, powers, ``sqrt``, ``exp``,
``sin``, ``cos``, ``sinc``, traces) over tensors named in an environment; the torch printers of
:mod:`geoattn.codegen.printer` and :mod:`geoattn.codegen.soa` call it for every batched coefficient.
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.precedence import PRECEDENCE, precedence
from sympy.printing.printer import Printer

from ..errors import CodegenError

__all__ = ["ScalarPrinter", "SCALAR_HELPERS", "SCALAR_HELPER_NAMES", "number_literal", "wrap"]

#: helpers the scalar coefficients call (printed once into the generated module, always)
SCALAR_HELPER_NAMES = ("sin_over",)
SCALAR_HELPERS = '''def sin_over(x):
    """sin(x)/x, 1 at x = 0, for real x. Not torch.sinc(x / pi): its argument is rounded twice, so its error grows
    with |x| (about |x| eps: at |x| = 1e3 in float32, a rotation built from it is orthogonal to 2e-4 only)."""
    zero = x == 0
    safe = torch.where(zero, torch.ones_like(x), x)
    return torch.where(zero, torch.ones_like(x), torch.sin(safe) / safe)
'''


class ScalarPrinter(Printer):
    """Elementwise torch code of a scalar SymPy expression (a SymPy Printer): symbols from ``env`` (their tensors'
    code), numbers, +, *, 1/x, x**n, sqrt, exp, sin, cos, sinc, and Tr(X) in a batched coefficient; parentheses by SymPy's
    precedence."""

    printmethod = "_torchscalar"

    def __init__(self, env: dict, trace=None):
        super().__init__()
        self.env = env
        self.trace = trace  # Trace(X) -> code, for batched scalars (Note [batched scalars])

    def doprint(self, e) -> str:
        return self._print(sp.sympify(e))

    def _print(self, expr, **kwargs) -> str:
        if expr in self.env:
            return self.env[expr]
        return super()._print(expr, **kwargs)

    def parenthesize(self, item, level: int) -> str:
        code = self._print(item)
        return f"({code})" if precedence(item) <= level and item not in self.env else code

    def emptyPrinter(self, e) -> str:
        raise CodegenError(f"Expected a supported scalar (numbers, I, +, *, 1/x, x**n, sqrt, exp, sin, cos, sinc, and Tr(X) in a "
                           f"batched coefficient). Got {e!r}.")

    def _print_ImaginaryUnit(self, e) -> str:
        return "1j"

    def _print_Number(self, e) -> str:
        return number_literal(e)

    def _print_Trace(self, e) -> str:
        if self.trace is None:
            return self.emptyPrinter(e)
        return self.trace(e.arg)

    def _print_Add(self, e) -> str:
        text = ""
        for k, a in enumerate(e.args):
            c, _ = a.as_coeff_Mul()
            if c.is_negative:
                term = self.parenthesize(-a, PRECEDENCE["Add"])
                text += f" - {term}" if k else f"-{term}"
            else:
                term = self._print(a)
                text += f" + {term}" if k else term
        return text

    def _print_Mul(self, e) -> str:
        coeff = sp.Integer(1)
        rest = []
        for a in e.args:
            if a.is_Number or a == sp.I:
                coeff *= a
            else:
                rest.append(a)
        den = [a.base for a in rest if a.is_Pow and a.exp == -1]
        num = [a for a in rest if not (a.is_Pow and a.exp == -1)]
        over = "".join(f" / {self.parenthesize(b, PRECEDENCE['Mul'])}" for b in den)
        body = " * ".join(self.parenthesize(a, PRECEDENCE["Mul"]) for a in num)
        if coeff == 1:
            return body + over if body else "1" + over
        if coeff == -1:
            return f"-{body}{over}" if len(num) == 1 else f"-({body or '1'}{over})"
        re_, im_ = coeff.as_real_imag()
        re_code, im_code = number_literal(re_), number_literal(im_)
        lit = re_code if im_ == 0 else (f"{im_code}j" if re_ == 0 else f"({re_code}+{im_code}j)")
        return (f"{lit} * {body}" if body else lit) + over

    def _print_Pow(self, e) -> str:
        if e.exp == -1:
            return f"1 / {self.parenthesize(e.base, PRECEDENCE['Pow'])}"
        if e.exp.is_Integer and e.exp > 1:
            return f"{self.parenthesize(e.base, PRECEDENCE['Pow'])} ** {int(e.exp)}"
        if e.exp == sp.Rational(1, 2):
            return f"torch.sqrt({self._print(e.base)})"
        return self.emptyPrinter(e)

    def _print_exp(self, e) -> str:
        return f"torch.exp({self._print(e.args[0])})"

    def _print_sinc(self, e) -> str:
        # sympy's sinc is sin(x)/x; torch.sinc is sin(pi x)/(pi x), whose rounding of pi x grows with |x|
        return f"sin_over({self._print(e.args[0])})"

    def _print_sin(self, e) -> str:
        return f"torch.sin({self._print(e.args[0])})"

    def _print_cos(self, e) -> str:
        return f"torch.cos({self._print(e.args[0])})"


def number_literal(c) -> str:
    """A SymPy number as a literal: an integer exactly, any other value as the repr of the nearest float."""
    c = sp.nsimplify(c)
    return str(int(c)) if c.is_Integer else repr(float(c))


def wrap(code: str) -> str:
    """The printed text of an expression, in parentheses unless it is an atom."""
    if code.isidentifier() or _balanced_call(code):
        return code
    return f"({code})"


def _balanced_call(code: str) -> bool:
    """True for ``name(...)``/``name.attr`` forms that need no parentheses."""
    if not code or not (code[0].isalpha() or code[0] == "_"):
        return False
    depth = 0
    for ch in code:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and ch in " +-*/@":
            return False
    return depth == 0

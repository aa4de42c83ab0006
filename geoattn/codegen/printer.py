"""A printer from SymPy matrix expressions to batched PyTorch source.

SymPy's own ``sympy.printing.pytorch`` is not usable for kernels: it prints
``Transpose`` wrongly for batched tensors, uses ``inv`` and knows nothing of
leading batch dimensions. This printer handles the small set of nodes the
kernels use and prints

* ``X.T`` as ``X.mT`` (``Adjoint`` as ``.mH``), products as ``@``;
* ``P X^{-1} Q`` as ``P @ torch.linalg.solve(X, Q)`` or, with nothing to the
  right, ``torch.linalg.solve(X, P, left=False)`` -- never an inverse;
* ``Identity(n)`` as a local ``eye`` built with the dtype and device of an
  input, and used by broadcasting;
* ``DiagMatrix(v)`` inside a product as a column scaling;
* repeated subexpressions once, as local temporaries;
* ``X**2`` as ``X @ X``;
* with ``accumulate=True``, a bound sum as in-place accumulation into its
  first product (``t = P @ Q; t.add_(R, alpha=c); t.diagonal(...).add_(c0)``):
  one allocation instead of one per term (see Note [accumulated sums]).

Note [factoring sums]
---------------------
Matrix calculus returns ``(1/2) A q + (1/2) A^T q``. Printed naively that is
two batched products; :func:`factor_sums` pulls common left or right factors
out of sums first (``((1/2) A + (1/2) A^T) q``), so the unbatched weight is
combined once and applied with a single batched product.
"""

from __future__ import annotations

from collections import Counter

import sympy as sp
from sympy.printing.precedence import PRECEDENCE, precedence
from sympy.printing.printer import Printer
from sympy.matrices.expressions import (
    DiagMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatPow,
    MatrixExpr,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)


__all__ = ["factor_sums", "common_scalar", "TorchKernelPrinter", "SoAKernelPrinter", "SOA_HELPERS", "SOA_HELPER_NAMES", "SCALAR_HELPERS",
           "SCALAR_HELPER_NAMES", "CodegenError"]


# Note [accumulated sums]
# -----------------------
# The Taylor kernels are sums of a product and three or four scaled matrices.
# Printed as one expression, each ``c * X`` and each ``+`` allocates a batch of
# matrices; for the batch sizes of the layers these allocations (and the page
# faults of fresh memory) cost more than the products. In accumulate mode a
# bound sum starts from a freshly computed term and adds the others in place,
# multiples of the identity only on the diagonal. The first term is always a
# new tensor, never an argument: a product, a scaled matrix, or (when the sum
# starts with a transposed argument) a contiguous clone of it. A single product
# with a coefficient is printed as the product followed by an in-place scale;
# a single factor is never scaled in place (it may be an argument).


class CodegenError(ValueError):
    """An expression the printer does not support (e.g. a bare inverse)."""


def _split(term):
    """``coeff, [factors]`` of a product term."""
    if isinstance(term, MatMul):
        coeff, mats = term.as_coeff_matrices()
        return coeff, list(mats)
    if isinstance(term, MatrixExpr):
        return sp.Integer(1), [term]
    raise CodegenError(f"Expected a matrix term of a sum. Got {term!r}.")


def factor_sums(expr):
    """Pull common leading/trailing matrix factors out of every sum (bottom-up)."""
    if not isinstance(expr, sp.Basic) or not expr.args:
        return expr
    if isinstance(expr, (MatrixSymbol, Identity, ZeroMatrix)) or getattr(expr, "codegen_atom", False):
        return expr
    new_args = [factor_sums(a) for a in expr.args]
    expr = expr.func(*new_args) if new_args != list(expr.args) else expr
    if not isinstance(expr, MatAdd):
        return expr
    parts = [_split(t) for t in expr.args]
    if any(len(fs) < 2 for _, fs in parts):
        return expr
    last = parts[0][1][-1]
    if all(fs[-1] == last for _, fs in parts):
        inner = MatAdd(*[MatMul(c, *fs[:-1]) if c != 1 else MatMul(*fs[:-1]) for c, fs in parts]).doit()
        return MatMul(factor_sums(inner), last)
    first = parts[0][1][0]
    if all(fs[0] == first for _, fs in parts):
        inner = MatAdd(*[MatMul(c, *fs[1:]) if c != 1 else MatMul(*fs[1:]) for c, fs in parts]).doit()
        return MatMul(first, factor_sums(inner))
    return expr


def common_scalar(expr):
    """``c (X + Y)`` for a sum whose terms all carry the coefficient ``c`` (bottom-up)."""
    if not isinstance(expr, sp.Basic) or not expr.args or getattr(expr, "codegen_atom", False):
        return expr
    new_args = [common_scalar(a) for a in expr.args]
    if new_args != list(expr.args):
        expr = expr.func(*new_args) if not isinstance(expr, MatMul) else MatMul(*new_args)
    if not isinstance(expr, MatAdd):
        return expr
    parts = [_split(t) for t in expr.args]
    c0 = parts[0][0]
    if c0 == 1 or any(c != c0 for c, _ in parts):
        return expr
    inner = MatAdd(*[fs[0] if len(fs) == 1 else MatMul(*fs) for _, fs in parts])
    return MatMul(c0, inner)


class TorchKernelPrinter(Printer):
    """Print the outputs of one kernel as the body of a torch function (a SymPy :class:`~sympy.printing.printer.Printer`)."""

    #: the tensor layout of the printed kernels: ``"batch"`` (batch-first, ``(..., m, n)``) or ``"soa"`` (``(m, n, *batch)``)
    layout = "batch"

    def __init__(self, names: dict, dims: dict, like: str, accumulate: bool = False):
        super().__init__()
        self.accumulate = accumulate
        self.names = dict(names)  # MatrixSymbol -> python name
        self.dims = dims  # size symbol -> (argument name, axis or None for an int argument)
        self.like = like  # argument whose dtype/device new tensors use
        self.lines: list[str] = []
        self.temps: dict = {}
        self.counts: Counter = Counter()
        self.needs_eye: dict = {}  # size -> local name, in order of first use

    # -- subexpression sharing -------------------------------------------------
    def _count(self, expr):
        if not isinstance(expr, MatrixExpr) or isinstance(expr, (MatrixSymbol, Identity, ZeroMatrix)):
            return
        self.counts[expr] += 1
        if self.counts[expr] == 1:
            for a in expr.args:
                self._count(a)

    def bind(self, name: str, expr) -> None:
        """Emit ``name = <expr>``; ``name`` can be used by later outputs."""
        if self.accumulate and isinstance(expr, MatAdd):
            self._bind_accumulated(name, expr)
            return
        if self.accumulate and isinstance(expr, MatMul) and expr.as_coeff_matrices()[0] != 1 \
                and len(expr.as_coeff_matrices()[1]) > 1:  # a fresh product, never an argument or a view
            coeff, mats = expr.as_coeff_matrices()
            self.lines.append(f"{name} = {self._print_factors(list(mats))}")
            self.lines.append(f"{name}.mul_({_num(coeff)})")
            return
        code = self._print(expr)
        self.lines.append(f"{name} = {code}")

    def _bind_accumulated(self, name: str, expr) -> None:
        parts = [_split(t) for t in expr.args]

        def fresh(part):
            coeff, mats = part
            return len(mats) > 1 or (coeff != 1 and not isinstance(mats[0], Identity))

        first = next((k for k, p in enumerate(parts) if fresh(p) and len(p[1]) > 1), None)
        if first is None:
            first = next((k for k, p in enumerate(parts) if fresh(p)), None)
        if first is None:
            # a transposed argument: accumulate into a contiguous copy of it
            first = next((k for k, p in enumerate(parts) if p[0] == 1 and isinstance(p[1][0], Transpose)), None)
            if first is None:
                raise CodegenError(f"Expected a product, a scaled or a transposed matrix to accumulate into. Got {expr}.")
            self.lines.append(f"{name} = {self._print(parts.pop(first)[1][0])}.clone(memory_format=torch.contiguous_format)")
        else:
            coeff, mats = parts.pop(first)
            self.lines.append(f"{name} = {self._print(MatMul(coeff, *mats) if coeff != 1 else MatMul(*mats).doit())}")
        for coeff, mats in parts:
            if len(mats) == 1 and isinstance(mats[0], Identity):
                self.lines.append(f"{name}.diagonal(dim1=-2, dim2=-1).add_({_num(coeff)})")
                continue
            body = self._print(MatMul(*mats).doit() if len(mats) > 1 else mats[0])
            if coeff == 1:
                self.lines.append(f"{name}.add_({body})")
            elif coeff == -1:
                self.lines.append(f"{name}.sub_({body})")
            else:
                self.lines.append(f"{name}.add_({body}, alpha={_num(coeff)})")

    def prepare(self, exprs) -> None:
        """Count subexpressions of all outputs; those seen twice become temporaries."""
        for e in exprs:
            self._count(e)

    def _temp(self, expr, code: str) -> str:
        if self.counts[expr] > 1 and not code.isidentifier():
            if expr not in self.temps:
                name = f"t{len(self.temps)}"
                self.lines.append(f"{name} = {code}")
                self.temps[expr] = name
            return self.temps[expr]
        return code

    # -- printing --------------------------------------------------------------
    # Note [node protocol]: this is a SymPy Printer. A node prints through its own ``_torchcode(printer)``
    # when it has one (the custom nodes of geoattn.symbolic.nodes: the method lives beside their ``_latex``
    # and ``explicit``), otherwise through the first ``_print_<Class>`` along its class's MRO (SymPy's
    # dispatch); what neither covers reaches ``emptyPrinter``, which raises. Nodes this printer does not
    # support where they stand alone are declared by a ``_print_<Class>`` that raises, so an unsupported
    # node fails with a reason, never with a wrong kernel. ``_print`` adds only the sharing of repeated
    # matrix subexpressions as temporaries.
    printmethod = "_torchcode"

    def _print(self, expr, **kwargs) -> str:
        if isinstance(expr, MatrixExpr) and expr in self.temps:
            return self.temps[expr]
        code = super()._print(expr, **kwargs)
        return self._temp(expr, code) if isinstance(expr, MatrixExpr) else code

    def emptyPrinter(self, expr) -> str:
        raise CodegenError(f"Expected a supported matrix node. Got {type(expr).__name__}: {expr}.")

    # -- the interface the nodes' _torchcode uses --------------------------------
    def print_arg(self, expr) -> str:
        """The code of a sub-expression (bound to a temporary when it is a matrix)."""
        return self._print(expr)

    @staticmethod
    def wrap(code: str) -> str:
        """``code`` in parentheses unless it is a name or a call."""
        return _wrap(code)

    def scalar(self, expr, env: dict) -> str:
        """Elementwise code of a scalar SymPy expression whose symbols ``env`` maps to tensors' code."""
        return self._scalar(expr, env)

    # -- SymPy's nodes -------------------------------------------------------------
    def _print_MatrixSymbol(self, expr) -> str:
        if expr not in self.names:
            raise CodegenError(f"Expected {expr} to be an argument or an earlier output. Got an unbound symbol.")
        return self.names[expr]

    def _print_Identity(self, expr) -> str:
        return self._eye_name(expr.shape[0])

    def _print_Transpose(self, expr) -> str:
        return f"{_wrap(self._print(expr.arg))}.mT"

    def _print_Adjoint(self, expr) -> str:
        return f"{_wrap(self._print(expr.arg))}.mH"

    def _print_MatPow(self, expr) -> str:
        if expr.exp != 2:
            raise CodegenError(f"Expected only squares among matrix powers (bind higher powers). Got {expr}.")
        base = _wrap(self._print(expr.base))
        return f"{base} @ {base}"

    def _print_HadamardProduct(self, expr) -> str:
        return " * ".join(_wrap(self._print(a)) for a in expr.args)

    def _print_KroneckerProduct(self, expr) -> str:
        # batched Kronecker product: (..., m, n) x (..., p, q) -> (..., m p, n q)
        out = self._print(expr.args[0])
        for b in expr.args[1:]:
            out = (
                f"({_wrap(out)}.unsqueeze(-1).unsqueeze(-3) * {_wrap(self._print(b))}.unsqueeze(-2).unsqueeze(-4))"
                ".flatten(-4, -3).flatten(-2, -1)"
            )
        return out

    # -- declared unsupported where they stand alone ------------------------------
    def _print_ZeroMatrix(self, expr) -> str:
        raise CodegenError(f"Expected no zero matrix (simplify it away). Got {expr}.")

    def _print_Inverse(self, expr) -> str:  # before MatPow in the MRO
        raise CodegenError(f"Expected an inverse inside a product (printed as a solve). Got a bare inverse {expr}.")

    def _print_DiagMatrix(self, expr) -> str:
        raise CodegenError(f"Expected DiagMatrix inside a product (a column scaling). Got it alone: {expr}.")

    def _eye_name(self, size) -> str:
        """``eye`` for the first identity size used, ``eye_<size>`` for others (fixed once printed)."""
        if size not in self.needs_eye:
            self.needs_eye[size] = "eye" if not self.needs_eye else f"eye_{sp.sstr(size)}"
        return self.needs_eye[size]

    def coefficient(self, coeff) -> str:
        """A scalar factor, ready to multiply: a number, or (Note [batched scalars]) an expression of traces of
        matrices in parentheses."""
        if coeff.is_Number:
            return _num(coeff)
        return _wrap(_ScalarPrinter({}, trace=self._trace).doprint(coeff))

    # Note [batched scalars]
    # A coefficient that is not a number, such as 2 / (1 - Tr(C^2)/2), is one value per matrix of the batch:
    # ``Trace(X)`` prints as the diagonal sum of X kept as a (..., 1, 1) tensor, so the coefficient
    # broadcasts over the matrix it scales. Only traces, numbers, +, * and 1/x may appear in it.
    def _trace(self, arg) -> str:
        return f"{_wrap(self._print(arg))}.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None]"

    def _print_MatAdd(self, expr) -> str:
        out = []
        for term in expr.args:
            coeff, mats = _split(term)
            body = self._print(MatMul(*mats).doit() if len(mats) > 1 else mats[0])
            if coeff == 1:
                out.append(("+", body))
            elif coeff == -1:
                out.append(("-", body))
            elif coeff.as_coeff_Mul()[0].is_negative:
                out.append(("-", f"{self.coefficient(-coeff)} * {_wrap(body)}"))
            else:
                out.append(("+", f"{self.coefficient(coeff)} * {_wrap(body)}"))
        out.sort(key=lambda t: t[0] != "+")  # positive terms first, for readability
        text = out[0][1] if out[0][0] == "+" else f"-{_wrap(out[0][1])}"
        for sign, body in out[1:]:
            text += f" {sign} {body}"
        return text

    def _print_MatMul(self, expr) -> str:
        coeff, mats = expr.as_coeff_matrices()
        code = self._print_factors(list(mats))
        if coeff == 1:
            return code
        if coeff == -1:
            return f"-{_wrap(code)}"
        return f"{self.coefficient(coeff)} * {_wrap(code)}"

    def _print_factors(self, mats) -> str:
        # a solve for the first inverse; recursion handles the rest
        for k, m in enumerate(mats):
            if isinstance(m, Inverse):
                left, right = mats[:k], mats[k + 1 :]
                a = self._print(m.arg)
                if right:
                    rhs = self._print_factors(right)
                    solved = f"torch.linalg.solve({a}, {rhs})"
                    return solved if not left else f"{_wrap(self._print_factors(left))} @ {solved}"
                lhs = self._print_factors(left)
                return f"torch.linalg.solve({a}, {lhs}, left=False)"
        out = None
        for m in mats:
            if isinstance(m, DiagMatrix):
                if out is None:
                    raise CodegenError(f"Expected a factor before DiagMatrix (it scales columns). Got it first in {mats}.")
                out = f"{_wrap(out)} * {_wrap(self._print(m.args[0]))}.unsqueeze(-2)"
                continue
            code = self._print(m)
            out = code if out is None else f"{_wrap(out)} @ {_wrap(code)}"
        return out

    def _scalar(self, expr, env: dict) -> str:
        """Elementwise scalar expression with symbols replaced by tensor code."""
        return _ScalarPrinter(env).doprint(expr)

    def eye_lines(self) -> list[str]:
        """The lines that build the identity matrices the printed outputs used."""
        lines = []
        for size in self.needs_eye:
            if getattr(size, "is_Integer", False):  # a literal size (a fixed-size kernel)
                lines.append(f"{self.needs_eye[size]} = {self._eye_code(str(int(size)))}")
                continue
            if size not in self.dims:
                raise CodegenError(f"Expected an argument giving the size {size} in dims. Got {sorted(map(str, self.dims))}.")
            arg, axis = self.dims[size]
            n = arg if axis is None else f"{arg}.shape[{axis}]"
            lines.append(f"{self.needs_eye[size]} = {self._eye_code(n)}")
        return lines

    def _eye_code(self, n: str) -> str:
        """The code of an ``n x n`` identity (``n`` is code too)."""
        return f"torch.eye({n}, dtype={self.like}.dtype, device={self.like}.device)"


# Note [structure-of-arrays layout]
# ---------------------------------
# For a batch of small matrices (d <= 4) a batched product is dominated by the per-matrix overhead of the
# batched GEMM (about 0.2 us per 4 x 4 product on one CPU thread, 0.8 ms for 4096 of them), and a batched
# LAPACK solve costs more. In the structure-of-arrays layout a d x d matrix is a tensor of shape
# (d, d, *batch): the batch is the innermost, contiguous dimension, a product is d multiply-adds of whole
# (d, 1, *batch) x (1, d, *batch) slices, a transpose is a view, a trace is d - 1 additions and a number per
# matrix (shape (*batch)) broadcasts against (d, d, *batch) as it stands. A weight shared by the batch is
# passed as (d, d, 1). Inverses are not printed in this layout (a closed form is bound instead).

#: helpers the scalar coefficients call (printed once into the generated module, always)
SCALAR_HELPER_NAMES = ("sin_over",)
SCALAR_HELPERS = '''def sin_over(x):
    """sin(x)/x, 1 at x = 0, for real x. Not torch.sinc(x / pi): its argument is rounded twice, so its error grows
    with |x| (about |x| eps: at |x| = 1e3 in float32, a rotation built from it is orthogonal to 2e-4 only)."""
    zero = x == 0
    safe = torch.where(zero, torch.ones_like(x), x)
    return torch.where(zero, torch.ones_like(x), torch.sin(safe) / safe)
'''

#: helpers the structure-of-arrays kernels call (printed once into the generated module, public there: the
#: runtime uses the same products)
SOA_HELPER_NAMES = ("soa_mm", "soa_tr", "soa_tr_mm", "soa_eye")
SOA_HELPERS = '''def soa_mm(a, b):
    """Product of (n, m, *batch) and (m, p, *batch) matrices in the structure-of-arrays layout (the same
    multiply-adds for every batch size, so a sample's result never depends on its batch)."""
    out = a[:, 0:1] * b[0:1]
    for k in range(1, a.shape[1]):
        out.addcmul_(a[:, k:k + 1], b[k:k + 1])
    return out


def soa_tr(a):
    """Trace of (n, n, *batch) matrices: shape (*batch)."""
    out = a[0, 0].clone()
    for k in range(1, a.shape[0]):
        out += a[k, k]
    return out


def soa_tr_mm(a, b):
    """Tr(a b) of (n, n, *batch) matrices without the product: the sum of a * b^T."""
    return (a * b.transpose(0, 1)).flatten(0, 1).sum(0)


def soa_eye(n, like):
    """The n x n identity shaped to broadcast against (n, n, *batch) matrices like ``like``."""
    return torch.eye(n, dtype=like.dtype, device=like.device).view(n, n, *([1] * (like.dim() - 2)))
'''


class SoAKernelPrinter(TorchKernelPrinter):
    """Print a kernel in the structure-of-arrays layout (Note [structure-of-arrays layout]): products as
    ``soa_mm``, transposes as ``.transpose(0, 1)`` views, traces as ``soa_tr``; inverses, diagonal scalings
    and squares of sums are declared unsupported."""

    layout = "soa"

    def __init__(self, names: dict, dims: dict, like: str, accumulate: bool = False):
        if accumulate:
            raise CodegenError("Expected accumulate=False in the structure-of-arrays layout (in-place accumulation "
                               "is written for the batch-first layout). Got accumulate=True.")
        super().__init__(names, dims, like)

    def _print_Transpose(self, expr) -> str:
        return f"{_wrap(self._print(expr.arg))}.transpose(0, 1)"

    def _print_Adjoint(self, expr) -> str:
        raise CodegenError(f"Expected real matrices in the structure-of-arrays layout. Got {expr}.")

    def _print_KroneckerProduct(self, expr) -> str:
        raise CodegenError(f"Expected no Kronecker product in the structure-of-arrays layout. Got {expr}.")

    def _print_MatPow(self, expr) -> str:
        if expr.exp != 2:
            raise CodegenError(f"Expected only squares among matrix powers (bind higher powers). Got {expr}.")
        base = self._print(expr.base)
        if not base.isidentifier():
            raise CodegenError(f"Expected the base of a square to be bound to a name. Got {expr.base}.")
        return f"soa_mm({base}, {base})"

    def _print_factors(self, mats) -> str:
        out = None
        for m in mats:
            if isinstance(m, (Inverse, DiagMatrix)):
                raise CodegenError(f"Expected no {type(m).__name__} in the structure-of-arrays layout (bind a closed "
                                   f"form). Got {m}.")
            code = self._print(m)
            out = code if out is None else f"soa_mm({out}, {code})"
        return out

    def _trace(self, arg) -> str:
        if isinstance(arg, MatMul) and arg.as_coeff_matrices()[0] == 1 and len(arg.args) == 2:
            a, b = arg.args
            return f"soa_tr_mm({self._print(a)}, {self._print(b)})"
        if isinstance(arg, MatPow) and arg.exp == 2:
            base = self._print(arg.base)
            return f"soa_tr_mm({base}, {base})"
        return f"soa_tr({self._print(arg)})"

    def _eye_code(self, n: str) -> str:
        return f"soa_eye({n}, {self.like})"


class _ScalarPrinter(Printer):
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
        return _num(e)

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
        lit = _num(re_) if im_ == 0 else (f"{_num(im_)}j" if re_ == 0 else f"({_num(re_)}+{_num(im_)}j)")
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


def _num(c) -> str:
    c = sp.nsimplify(c)
    return str(int(c)) if c.is_Integer else repr(float(c))


def _wrap(code: str) -> str:
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

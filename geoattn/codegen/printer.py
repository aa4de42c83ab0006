"""A printer from SymPy matrix expressions to batched PyTorch source.

SymPy's own ``sympy.printing.pytorch`` is not usable for kernels: it prints
``Transpose`` wrongly for batched tensors, uses ``inv`` and knows nothing of
leading batch dimensions. This printer handles the small set of nodes the
kernels use and prints

* ``X.T`` as ``X.mT`` (``Adjoint`` as ``.mH``), products as ``@``;
* ``P X^{-1} Q`` as ``P @ solve(X, Q)`` or, with nothing to the right,
  ``solve(X, P, left=False)`` -- never an inverse; ``solve`` is
  :func:`geoattn.kernels._lapack.solve`, ``torch.linalg.solve`` with every
  system of a batch at the same alignment (Note [aligned batches]);
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
from sympy.printing.printer import Printer
from sympy.matrices.expressions import (
    DiagMatrix,
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatrixExpr,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from ..errors import CodegenError
from .scalars import ScalarPrinter, number_literal, wrap

__all__ = ["factor_sums", "common_scalar", "TorchKernelPrinter", "CodegenError"]


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
            self.lines.append(f"{name}.mul_({number_literal(coeff)})")
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
                self.lines.append(f"{name}.diagonal(dim1=-2, dim2=-1).add_({number_literal(coeff)})")
                continue
            body = self._print(MatMul(*mats).doit() if len(mats) > 1 else mats[0])
            if coeff == 1:
                self.lines.append(f"{name}.add_({body})")
            elif coeff == -1:
                self.lines.append(f"{name}.sub_({body})")
            else:
                self.lines.append(f"{name}.add_({body}, alpha={number_literal(coeff)})")

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
        return wrap(code)

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
        return f"{wrap(self._print(expr.arg))}.mT"

    def _print_Adjoint(self, expr) -> str:
        return f"{wrap(self._print(expr.arg))}.mH"

    def _print_MatPow(self, expr) -> str:
        if expr.exp != 2:
            raise CodegenError(f"Expected only squares among matrix powers (bind higher powers). Got {expr}.")
        base = wrap(self._print(expr.base))
        return f"{base} @ {base}"

    def _print_HadamardProduct(self, expr) -> str:
        return " * ".join(wrap(self._print(a)) for a in expr.args)

    def _print_KroneckerProduct(self, expr) -> str:
        # batched Kronecker product: (..., m, n) x (..., p, q) -> (..., m p, n q)
        out = self._print(expr.args[0])
        for b in expr.args[1:]:
            out = (
                f"({wrap(out)}.unsqueeze(-1).unsqueeze(-3) * {wrap(self._print(b))}.unsqueeze(-2).unsqueeze(-4))"
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
            return number_literal(coeff)
        return wrap(ScalarPrinter({}, trace=self._trace).doprint(coeff))

    # Note [batched scalars]
    # A coefficient that is not a number, such as 2 / (1 - Tr(C^2)/2), is one value per matrix of the batch:
    # ``Trace(X)`` prints as the diagonal sum of X kept as a (..., 1, 1) tensor, so the coefficient
    # broadcasts over the matrix it scales. Only traces, numbers, +, * and 1/x may appear in it.
    def _trace(self, arg) -> str:
        return f"{wrap(self._print(arg))}.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None]"

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
                out.append(("-", f"{self.coefficient(-coeff)} * {wrap(body)}"))
            else:
                out.append(("+", f"{self.coefficient(coeff)} * {wrap(body)}"))
        out.sort(key=lambda t: t[0] != "+")  # positive terms first, for readability
        text = out[0][1] if out[0][0] == "+" else f"-{wrap(out[0][1])}"
        for sign, body in out[1:]:
            text += f" {sign} {body}"
        return text

    def _print_MatMul(self, expr) -> str:
        coeff, mats = expr.as_coeff_matrices()
        code = self._print_factors(list(mats))
        if coeff == 1:
            return code
        if coeff == -1:
            return f"-{wrap(code)}"
        return f"{self.coefficient(coeff)} * {wrap(code)}"

    def _print_factors(self, mats) -> str:
        # a solve for the first inverse; recursion handles the rest
        for k, m in enumerate(mats):
            if isinstance(m, Inverse):
                left, right = mats[:k], mats[k + 1 :]
                a = self._print(m.arg)
                if right:
                    rhs = self._print_factors(right)
                    solved = f"solve({a}, {rhs})"
                    return solved if not left else f"{wrap(self._print_factors(left))} @ {solved}"
                lhs = self._print_factors(left)
                return f"solve({a}, {lhs}, left=False)"
        out = None
        for m in mats:
            if isinstance(m, DiagMatrix):
                if out is None:
                    raise CodegenError(f"Expected a factor before DiagMatrix (it scales columns). Got it first in {mats}.")
                out = f"{wrap(out)} * {wrap(self._print(m.args[0]))}.unsqueeze(-2)"
                continue
            code = self._print(m)
            out = code if out is None else f"{wrap(out)} @ {wrap(code)}"
        return out

    def _scalar(self, expr, env: dict) -> str:
        """Elementwise scalar expression with symbols replaced by tensor code."""
        return ScalarPrinter(env).doprint(expr)

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

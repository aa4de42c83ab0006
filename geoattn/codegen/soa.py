"""The structure-of-arrays kernel printer: ``d x d`` matrices as ``(d, d, *batch)`` tensors.

See Note [structure-of-arrays layout].
"""

from __future__ import annotations

from sympy.matrices.expressions import DiagMatrix, Inverse, MatMul, MatPow

from ..errors import CodegenError
from .printer import TorchKernelPrinter
from .scalars import wrap

__all__ = ["SoAKernelPrinter", "SOA_HELPERS", "SOA_HELPER_NAMES"]

# Note [structure-of-arrays layout]
# ---------------------------------
# For a batch of small matrices (d <= 4) a batched product is dominated by the per-matrix overhead of the
# batched GEMM (about 0.2 us per 4 x 4 product on one CPU thread, 0.8 ms for 4096 of them), and a batched
# LAPACK solve costs more. In the structure-of-arrays layout a d x d matrix is a tensor of shape
# (d, d, *batch): the batch is the innermost, contiguous dimension, a product is d multiply-adds of whole
# (d, 1, *batch) x (1, d, *batch) slices, a transpose is a view, a trace is d - 1 additions and a number per
# matrix (shape (*batch)) broadcasts against (d, d, *batch) as it stands. A weight shared by the batch is
# passed as (d, d, 1). Inverses are not printed in this layout (a closed form is bound instead).

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
        return f"{wrap(self._print(expr.arg))}.transpose(0, 1)"

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

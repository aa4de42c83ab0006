"""Code generation: batched PyTorch source from the verified SymPy expressions.

``generate_module()`` prints every kernel of
:data:`geoattn.symbolic.kernel_table.KERNELS`; ``write()`` updates
``geoattn/kernels/_generated.py`` and ``check()`` compares it with a fresh
generation (``geoattn codegen`` and ``geoattn codegen --check``).
"""

from .generate import check, generate_kernel, generate_module, target_path, write
from .printer import CodegenError, TorchKernelPrinter, factor_sums

__all__ = [
    "CodegenError",
    "TorchKernelPrinter",
    "check",
    "factor_sums",
    "generate_kernel",
    "generate_module",
    "target_path",
    "write",
]

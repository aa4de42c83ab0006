"""Code generation: batched PyTorch source and native C kernels from the verified SymPy expressions.

``generate_module()`` prints every kernel of
:data:`geoattn.symbolic.kernel_table.KERNELS`; ``generate_native_module()``
prints every native kernel of :data:`~geoattn.symbolic.kernel_table.NATIVE_KERNELS`
as C (:mod:`geoattn.codegen.cprinter`); ``write()`` updates
``geoattn/kernels/_generated.py``, ``geoattn/kernels/_native_gram.c`` and the ledger's
claim ids ``geoattn/_ledger_ids.py`` (``generate_ledger_ids_module()``), and
``check()`` compares all three with a fresh generation (``geoattn codegen`` and
``geoattn codegen --check``).
"""

from .cprinter import print_native_kernel
from .generate import (
    check,
    generate_kernel,
    generate_ledger_ids_module,
    generate_module,
    generate_native_module,
    ledger_ids_target_path,
    native_target_path,
    target_path,
    write,
)
from .printer import CodegenError, TorchKernelPrinter, factor_sums

__all__ = [
    "CodegenError",
    "TorchKernelPrinter",
    "check",
    "factor_sums",
    "generate_kernel",
    "generate_ledger_ids_module",
    "generate_module",
    "generate_native_module",
    "ledger_ids_target_path",
    "native_target_path",
    "print_native_kernel",
    "target_path",
    "write",
]

"""Code generation: batched PyTorch source and native C kernels from the verified SymPy expressions.

``generate_module()`` prints every kernel of
:data:`geoattn.symbolic.kernel_table.KERNELS`; ``generate_native_module()``
prints every native kernel of :data:`~geoattn.symbolic.kernel_table.NATIVE_KERNELS`
as C (:mod:`geoattn.codegen.cprinter`) and ``generate_triton_module()`` the same
kernels as Triton (:mod:`geoattn.codegen.tritonprinter`), both from one lowering
(:mod:`geoattn.codegen.lowering`); ``write()`` updates
``geoattn/kernels/_generated.py``, ``geoattn/kernels/_native_gram.c``,
``geoattn/kernels/_triton_<kernel>.py`` (one module per kernel) and the ledger's claim ids ``geoattn/_ledger_ids.py``
(``generate_ledger_ids_module()``), and
``check()`` compares all four with a fresh generation (``geoattn codegen`` and
``geoattn codegen --check``).
"""

from .cprinter import print_native_kernel
from .tritonprinter import print_triton_kernel
from .generate import (
    check,
    generate_kernel,
    generate_ledger_ids_module,
    generate_module,
    generate_native_module,
    ledger_ids_target_path,
    generate_triton_module,
    native_target_path,
    target_path,
    triton_target_path,
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
    "generate_triton_module",
    "native_target_path",
    "print_native_kernel",
    "print_triton_kernel",
    "target_path",
    "triton_target_path",
    "write",
]

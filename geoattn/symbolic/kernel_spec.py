"""The description of one generated kernel (keyword-built)."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy.matrices.expressions import MatrixSymbol

__all__ = ["KernelSpec"]


@dataclass(kw_only=True)
class KernelSpec:
    """One generated kernel: ``outputs`` as expressions of ``inputs``.

    ``inputs`` maps argument names to matrix symbols (a ``k x 1`` symbol is
    passed as a tensor of shape ``(..., k)``); ``dims`` says how to read each
    size symbol off the arguments (e.g. ``{T: ("C", -1)}``); ``claims`` are the
    ledger ids that verify the outputs.
    """

    name: str
    doc: str
    inputs: dict[str, MatrixSymbol]
    outputs: list[tuple[str, object]]
    dims: dict
    claims: list[str] = field(default_factory=list)
    complex_inputs: tuple[str, ...] = ()
    size_args: tuple[str, ...] = ()
    #: print sums as in-place accumulations into the first (freshly computed) term
    accumulate: bool = False
    #: the outputs returned (default: all, in order)
    returns: tuple[str, ...] = ()
    #: ``"batch-first"`` (matrices ``(*batch, m, n)``) or ``"soa"`` (``(m, n, *batch)``; Note [structure-of-arrays
    #: layout] in :mod:`geoattn.codegen.printer`)
    layout: str = "batch-first"

    def source_text(self) -> str:
        """One line naming the kernel, its inputs and its output expressions (hashed into the generated header)."""
        outs = "; ".join(f"{n} = {sp.sstr(e)}" for n, e in self.outputs)
        layout = "" if self.layout == "batch-first" else f" [{self.layout}]"
        return f"{self.name}({', '.join(self.inputs)}){layout}: {outs}"

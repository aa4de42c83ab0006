"""The description of one generated kernel (keyword-built)."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy.matrices.expressions import MatrixSymbol

__all__ = ["Spec", "KernelSpec", "NativeKernelSpec"]


@dataclass(kw_only=True)
class Spec:
    """What every generated kernel states: its ``name`` and ``doc``, its ``bindings`` (``(name, expression)`` pairs,
    each expression of the inputs and of the earlier bindings) and the ledger ``claims`` that verify them. The
    printers differ only in how arguments are laid out: :class:`KernelSpec` (torch) and :class:`NativeKernelSpec`
    (C and Triton)."""

    name: str
    doc: str
    bindings: list[tuple[str, object]]
    claims: list[str] = field(default_factory=list)

    def binding_text(self) -> str:
        """The bindings as one line, ``name = expression; ...`` (part of :meth:`source_text`)."""
        return "; ".join(f"{n} = {sp.sstr(e)}" for n, e in self.bindings)


@dataclass(kw_only=True)
class KernelSpec(Spec):
    """One generated torch kernel: ``bindings`` as expressions of ``inputs``.

    ``inputs`` maps argument names to matrix symbols (a ``k x 1`` symbol is
    passed as a tensor of shape ``(..., k)``); ``dims`` says how to read each
    size symbol off the arguments (e.g. ``{T: ("C", -1)}``); ``claims`` are the
    ledger ids that verify the outputs.
    """

    inputs: dict[str, MatrixSymbol]
    dims: dict
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
        layout = "" if self.layout == "batch-first" else f" [{self.layout}]"
        return f"{self.name}({', '.join(self.inputs)}){layout}: {self.binding_text()}"


@dataclass(kw_only=True)
class NativeKernelSpec(Spec):
    """One native (C) kernel: ``bindings`` evaluated entrywise at ``d = 1 .. max_dim`` and printed as C by
    :mod:`geoattn.codegen.cprinter`.

    Arguments, in the order of the C function's parameters after ``B`` and ``T``:

    * ``token_inputs``: ``T x d`` matrices per sample, stored ``(B, T, d)`` in the input's real type;
    * ``sample_inputs``: ``d x d`` matrices per sample, stored ``(B, d, d)`` in double, with their structure;
    * ``shared_inputs``: ``d x d`` matrices shared by the batch, stored ``(d, d)`` in double, with their
      structure;
    * ``token_outputs`` (``(B, T, d)``, real type), ``sample_outputs`` (``(B, d, d)``, double) and
      ``maxabs_outputs`` (``(B,)``, double: the largest absolute entry of the binding, ``NaN`` when one is).

    A structure is ``"general"``, ``"symmetric"`` (only the lower triangle is read) or ``"skew"`` (only the strict
    lower triangle is read): the kernel assumes the rest, so the caller must pass such matrices.

    With ``sample_real`` the sample inputs and outputs are stored in the input's real type instead of double (a
    kernel over per-sample matrices alone, such as the ``T x T`` Cayley transform with ``T`` renamed ``d``).
    Every kernel computes in double whatever the storage.
    """

    token_inputs: tuple[str, ...]
    sample_inputs: dict[str, str] = field(default_factory=dict)
    shared_inputs: dict[str, str] = field(default_factory=dict)
    token_outputs: tuple[str, ...] = ()
    sample_outputs: tuple[str, ...] = ()
    maxabs_outputs: tuple[str, ...] = ()
    max_dim: int = 4
    sample_real: bool = False

    def parameters(self) -> tuple[str, ...]:
        """The names of the C function's array parameters, in order."""
        return (*self.token_inputs, *self.sample_inputs, *self.shared_inputs, *self.token_outputs,
                *self.sample_outputs, *self.maxabs_outputs)

    def source_text(self) -> str:
        """One line naming the kernel, its arguments and its bindings (hashed into the generated header)."""
        real = ", real samples" if self.sample_real else ""
        return f"{self.name}({', '.join(self.parameters())}) [native, d <= {self.max_dim}{real}]: {self.binding_text()}"

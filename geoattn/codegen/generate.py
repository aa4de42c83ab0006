"""Generate ``geoattn/kernels/_generated.py`` from :mod:`geoattn.symbolic.expressions`."""

from __future__ import annotations

import difflib
import os

import sympy as sp

from ..symbolic.kernel_spec import KernelSpec
from ..symbolic.kernel_table import KERNELS, NATIVE_KERNELS, expressions_hash, native_hash
from ..symbolic.native_table import TRITON_KERNELS, triton_hash
from .gram_exp_c import generate_gram_exp_module, target_name as gram_exp_target_name
from .gram_exp_wide_c import generate_gram_exp_wide_module, target_name as gram_exp_wide_target_name
from .gram_lu_c import generate_gram_lu_module, target_name as gram_lu_target_name
from .gram_lu_big_c import generate_gram_lu_big_module, target_name as gram_lu_big_target_name
from .cayley_solve_c import generate_cayley_solve_module, target_name as cayley_solve_target_name
from .symattn_c import generate_symattn_module, target_name as symattn_target_name
from .exp_action_c import generate_exp_action_module, target_name as exp_action_target_name
from .gram_exp_triton import TARGET as EXP_TRITON_TARGET, generate_triton_exp_module
from .gram_lu_triton import TARGET as LU_TRITON_TARGET, generate_triton_lu_module
from .cprinter import LANES, REAL_PRELUDE, REAL_TYPES, TOKEN_CHUNK, c_function_name, print_native_kernel
from .printer import TorchKernelPrinter, common_scalar, factor_sums
from .scalars import SCALAR_HELPER_NAMES, SCALAR_HELPERS
from .soa import SOA_HELPER_NAMES, SOA_HELPERS, SoAKernelPrinter
from .tritonprinter import print_triton_kernel, triton_function_name

__all__ = ["generate_kernel", "generate_module", "runtime_tables", "generate_native_module", "generate_triton_module",
           "generate_ledger_ids_module", "target_path", "native_target_path", "triton_target_path",
           "ledger_ids_target_path", "write", "check"]

PRINTER_VERSION = 5

HEADER = '''"""Torch kernels generated from the verified SymPy expressions.

DO NOT EDIT: this file is written by ``geoattn codegen`` from
``geoattn/symbolic/expressions.py``; ``geoattn codegen --check`` fails when it is
stale. Every function is batched over leading dimensions and builds identity
matrices with the dtype and device of its inputs.

expressions-sha256: {hash}
printer-version: {version}

Sources (kernel: expression  [ledger claims]):
{sources}
"""

import torch

from ._lapack import solve

__all__ = [{names}, "N_OUTPUTS", "NATIVE_FUNCTIONS", "SYMATTN_ACTIVATIONS"]
'''


def generate_kernel(spec: KernelSpec) -> str:
    """The source of one kernel function (docstring naming its expressions and claims)."""
    names = {sym: name for name, sym in spec.inputs.items()}
    outputs = [(name, common_scalar(factor_sums(expr))) for name, expr in spec.bindings]
    like = next(n for n in spec.inputs if n not in spec.complex_inputs)  # real input: dtype/device of eye
    if spec.layout not in ("batch-first", "soa"):
        raise ValueError(f"Expected layout 'batch-first' or 'soa'. Got {spec.layout!r}.")
    cls = SoAKernelPrinter if spec.layout == "soa" else TorchKernelPrinter
    printer = cls(names, spec.dims, like, accumulate=spec.accumulate)
    printer.prepare([e for _, e in outputs])
    for name, expr in outputs:
        printer.bind(name, expr)
        # later outputs may refer to this one by a symbol of the same name
        printer.names[sp.MatrixSymbol(name, *expr.shape)] = name
    body = printer.eye_lines() + printer.lines
    returned = spec.returns or tuple(n for n, _ in spec.bindings)
    ret = ", ".join(returned)
    src_lines = [f"    {n} = {sp.sstr(e)}" for n, e in spec.bindings]
    doc = [f'    """{spec.doc}', "", "    Generated from:", *src_lines]
    if spec.claims:
        doc.append(f"    Verified by: {', '.join(spec.claims)}")
    doc.append('    """')
    args = ", ".join(list(spec.inputs) + list(spec.size_args))
    lines = [f"def {spec.name}({args}):", *doc, *(f"    {ln}" for ln in body), f"    return {ret}"]
    return "\n".join(lines) + "\n"


def generate_module() -> str:
    """The whole generated module: header with sources and hash, then every kernel."""
    sources = "\n".join(
        f"  {k.name}: " + "; ".join(f"{n} = {sp.sstr(e)}" for n, e in k.bindings) + f"  [{', '.join(k.claims)}]"
        for k in KERNELS
    )
    header = HEADER.format(
        hash=expressions_hash(),
        version=PRINTER_VERSION,
        sources=sources,
        names=", ".join([f'"{k.name}"' for k in KERNELS]
                        + [f'"{n}"' for n in SOA_HELPER_NAMES if any(k.layout == "soa" for k in KERNELS)]
                        + [f'"{n}"' for n in SCALAR_HELPER_NAMES]),
    )
    counts = "".join(f'    "{k.name}": {len(k.returns or k.bindings)},\n' for k in KERNELS)
    table = f"#: how many tensors each kernel returns (read by the autograd wrappers)\nN_OUTPUTS = {{\n{counts}}}\n"
    table += "\n" + runtime_tables()
    helpers = "\n\n" + SCALAR_HELPERS + ("\n\n" + SOA_HELPERS if any(k.layout == "soa" for k in KERNELS) else "")
    return header + helpers + "\n\n" + "\n\n".join(generate_kernel(k) for k in KERNELS) + "\n\n" + table


def runtime_tables() -> str:
    """The facts the runtime reads from the kernel tables, printed as constants (no hand copies in the runtime):
    the native C functions and the largest size each is printed for, and the potentials of symplectic
    attention."""
    from ..symbolic.symattn import ACTIVATIONS

    functions = "".join(f'    "{k.name}": {k.max_dim},\n' for k in NATIVE_KERNELS)
    acts = "".join(f'    "{name}": {value!r},\n' for name, value in ACTIVATIONS.items())
    return (f"#: the native C functions (geoattn_<name>_d<d>_<real>) and the largest d each is printed for\n"
            f"NATIVE_FUNCTIONS = {{\n{functions}}}\n"
            f"#: the potentials of symplectic attention: name -> (normalised over, one softmax)\n"
            f"SYMATTN_ACTIVATIONS = {{\n{acts}}}\n")


NATIVE_HEADER = """/* Native CPU kernels generated from the verified SymPy bindings.

   DO NOT EDIT: this file is written by `geoattn codegen` from geoattn/symbolic/expressions.py
   (Note [the closed-form Gram layer]; Note [Cayley of small skew matrices] in geoattn.kernels._functions);
   `geoattn codegen --check` fails when it is stale. It is compiled at first use by geoattn.kernels._native
   (plain C99, no Python or torch headers), one library per d and real type (-DGEOATTN_D=<d> -DGEOATTN_F32 or
   -DGEOATTN_F64), and called through ctypes; every function is batched over B samples, of T tokens where it
   has token inputs (Note [lanes] in geoattn.codegen.cprinter).

   bindings-sha256: {hash}
   printer-version: {version}

   Sources (kernel: bindings  [ledger claims]):
{sources}
*/

#include <math.h>
#include <stdint.h>

#define LANES {lanes}
#define TOKEN_CHUNK {chunk}

{prelude}
"""


def generate_native_module() -> str:
    """The C source of every native kernel at every ``d`` and real type, with a header naming its sources."""
    sources = "\n".join(
        f"     {k.name}: " + "; ".join(f"{n} = {sp.sstr(e)}" for n, e in k.bindings) + f"  [{', '.join(k.claims)}]"
        for k in NATIVE_KERNELS
    )
    header = NATIVE_HEADER.format(hash=native_hash(), version=PRINTER_VERSION, sources=sources, lanes=LANES,
                                  chunk=TOKEN_CHUNK, prelude=REAL_PRELUDE)
    # one group per d, compiled on its own for one real type when first needed (GEOATTN_D, GEOATTN_<REAL>)
    functions = []
    for d in range(1, max(k.max_dim for k in NATIVE_KERNELS) + 1):
        group = [print_native_kernel(k, d) for k in NATIVE_KERNELS if d <= k.max_dim]
        functions.append(f"#if GEOATTN_D == {d}\n\n" + "\n".join(group) + f"\n#endif  /* d = {d} */\n")
    index = "\n".join(f"   {c_function_name(k, d, real)}" for k in NATIVE_KERNELS for d in range(1, k.max_dim + 1)
                      for real in REAL_TYPES)
    return header + f"\n/* functions:\n{index}\n*/\n\n" + "\n".join(functions)


LEDGER_IDS_HEADER = '''"""The claim ids of the ledger, with their families and recorded verdicts, for runtime checks.

DO NOT EDIT: this file is written by ``geoattn codegen`` from :mod:`geoattn.symbolic.ledger`;
``geoattn codegen --check`` fails when it is stale. :mod:`geoattn.testing` reads it to validate the
ledger ids a module cites, without importing SymPy.
"""

__all__ = ["CLAIMS", "CLAIM_IDS", "FAMILIES"]

#: claim id -> (family, recorded verdict), in ledger order
CLAIMS = {{
{rows}}}

#: every claim id of the ledger
CLAIM_IDS = frozenset(CLAIMS)

#: the family names, in ledger order
FAMILIES = (
{families})
'''


def generate_ledger_ids_module() -> str:
    """The source of ``geoattn/_ledger_ids.py``: every claim id of the ledger with its family and recorded verdict."""
    from ..symbolic.ledger import all_claims, families

    rows = "".join(f'    "{c.id}": ("{c.family}", "{c.expected.value}"),\n' for c in all_claims())
    names = "".join(f'    "{f}",\n' for f in families())
    return LEDGER_IDS_HEADER.format(rows=rows, families=names)


def ledger_ids_target_path() -> str:
    """``geoattn/_ledger_ids.py`` in this checkout."""
    return os.path.normpath(os.path.join(os.path.dirname(target_path()), "..", "_ledger_ids.py"))


TRITON_HEADER = '''"""A Triton kernel generated from the verified SymPy bindings: one native kernel at one width.

DO NOT EDIT: this file is written by ``geoattn codegen`` from ``geoattn/symbolic/expressions.py`` (the bindings of
``geoattn.symbolic.kernel_table.NATIVE_KERNELS``, which the C kernels of ``_native_gram.c`` are printed from too);
``geoattn codegen --check`` fails when it is stale. It is imported by ``geoattn.kernels._triton`` only where
``triton`` is installed. Every kernel is printed from one scalar program (``geoattn.codegen.lowering``): one
program per ``BLOCK`` samples, one lane per sample, loops over the tokens for the reductions and the row maps,
every value in float64 (Note [Triton lanes] in ``geoattn.codegen.tritonprinter``).

bindings-sha256: {hash}
printer-version: {version}

Sources (kernel: bindings  [ledger claims]):
{sources}
"""

import triton
import triton.language as tl

__all__ = [{names}]
'''


def generate_triton_module(name: str, d: int) -> str:
    """The Python source of one native kernel's Triton kernel at width ``d``, with a header naming its sources:
    one generated module per job (the Gram layer's forward at ``d = 3``, its backward at ``d = 4``, the Cayley
    transform of ``2 x 2`` matrices, ...), each one ``@triton.jit`` program."""
    specs = [k for k in (*NATIVE_KERNELS, *TRITON_KERNELS) if k.name == name]
    if not specs:
        raise ValueError(f"Expected a native or Triton kernel name in "
                         f"{[k.name for k in (*NATIVE_KERNELS, *TRITON_KERNELS)]}. Got {name!r}.")
    k = specs[0]
    widths = _triton_widths(k)
    if d not in widths:
        span = f"1..{k.max_dim}" if len(widths) > 1 else f"{k.max_dim}"
        raise ValueError(f"Expected d in {span} for {name}. Got {d!r}.")
    sources = f"  {k.name}: " + "; ".join(f"{n} = {sp.sstr(e)}" for n, e in k.bindings) + f"  [{', '.join(k.claims)}]"
    digest = triton_hash() if k in TRITON_KERNELS else native_hash()
    header = TRITON_HEADER.format(hash=digest, version=PRINTER_VERSION, sources=sources,
                                  names=f'"{triton_function_name(k, d)}"')
    return header + "\n\n" + print_triton_kernel(k, d)


def triton_target_path(name: str, d: int, folder: str | None = None) -> str:
    """``geoattn/kernels/_triton_<name>_d<d>.py`` in this checkout (or in ``folder``): the Triton kernel of one
    native kernel at one width."""
    return os.path.join(folder or os.path.dirname(target_path()), f"_triton_{name}_d{d}.py")


def _triton_widths(spec) -> range:
    """The widths a kernel is printed at: every ``d`` up to ``max_dim`` for a native kernel, ``max_dim`` alone for a
    Triton-only one (``TRITON_KERNELS``: bindings of fixed size, smaller inputs padded by the caller)."""
    return range(spec.max_dim, spec.max_dim + 1) if spec in TRITON_KERNELS else range(1, spec.max_dim + 1)


def _triton_outputs(folder: str | None):
    """The Triton modules: one per kernel and width (the Triton-only kernels at their one width), the Gram form's
    LU kernels and the exponential's Gram kernels, one module each for every width
    (:mod:`geoattn.codegen.gram_lu_triton`, :mod:`geoattn.codegen.gram_exp_triton`)."""
    lu_dir = folder or os.path.dirname(target_path())
    return ([(triton_target_path(k.name, d, folder), (lambda name=k.name, d=d: generate_triton_module(name, d)))
             for k in (*NATIVE_KERNELS, *TRITON_KERNELS) for d in _triton_widths(k)]
            + [(os.path.join(lu_dir, LU_TRITON_TARGET), generate_triton_lu_module),
               (os.path.join(lu_dir, EXP_TRITON_TARGET), generate_triton_exp_module)])


def native_target_path() -> str:
    """``geoattn/kernels/_native_gram.c`` in this checkout."""
    return os.path.join(os.path.dirname(target_path()), "_native_gram.c")


def target_path() -> str:
    """``geoattn/kernels/_generated.py`` in this checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "kernels", "_generated.py"))


def write(path: str | None = None, native_path: str | None = None, triton_dir: str | None = None,
          ledger_path: str | None = None) -> str:
    """Write the generated module to ``path`` (default :func:`target_path`), the native kernels' C source to
    ``native_path`` (default :func:`native_target_path`), the Triton kernels, one module per native kernel, into
    ``triton_dir`` (default: beside the generated module; :func:`triton_target_path`) and the ledger's ids to
    ``ledger_path`` (default :func:`ledger_ids_target_path`); ``False`` leaves a file out. Returns the module's
    path."""
    path = path or target_path()
    for target, text in _outputs(path, native_path, triton_dir, ledger_path):
        tmp = f"{target}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, target)  # atomic: a reader (the native kernels' compiler) never sees a partial file
    return path


def _outputs(path, native_path, triton_dir, ledger_path):
    """``(target, text)`` of each generated file; a file (or folder) given as ``False`` is left out."""
    out = [(path, generate_module)]
    if native_path is not False:
        native = native_path or native_target_path()
        out.append((native, generate_native_module))
        out.append((os.path.join(os.path.dirname(native), gram_lu_target_name()), generate_gram_lu_module))
        out.append((os.path.join(os.path.dirname(native), gram_lu_big_target_name()), generate_gram_lu_big_module))
        out.append((os.path.join(os.path.dirname(native), cayley_solve_target_name()), generate_cayley_solve_module))
        out.append((os.path.join(os.path.dirname(native), gram_exp_target_name()), generate_gram_exp_module))
        out.append((os.path.join(os.path.dirname(native), symattn_target_name()), generate_symattn_module))
        out.append((os.path.join(os.path.dirname(native), exp_action_target_name()), generate_exp_action_module))
        out.append((os.path.join(os.path.dirname(native), gram_exp_wide_target_name()), generate_gram_exp_wide_module))
    if triton_dir is not False:
        out += _triton_outputs(triton_dir)
    if ledger_path is not False:
        out.append((ledger_path or ledger_ids_target_path(), generate_ledger_ids_module))
    return [(target, make()) for target, make in out]


def _diff(path: str, want: str) -> str:
    try:
        with open(path) as fh:
            have = fh.read()
    except FileNotFoundError:
        return f"{path} does not exist\n"
    if have == want:
        return ""
    return "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True), path, "generated"))


def check(path: str | None = None, native_path: str | None = None,
          triton_dir: str | None = None, ledger_path: str | None = None) -> tuple[bool, str]:
    """``(fresh, diff)``: whether the generated module at ``path``, the C source at ``native_path``, the Triton
    modules in ``triton_dir`` and the ledger's ids at ``ledger_path`` equal what would be generated."""
    diff = "".join(_diff(target, text) for target, text in _outputs(path or target_path(), native_path, triton_dir,
                                                                    ledger_path))
    return not diff, diff

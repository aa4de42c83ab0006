"""Claims of one's own: load the ``CLAIMS`` a Python file or module declares (``geoattn prove --claims PATH``).

A file of claims is an ordinary Python module with a list ``CLAIMS`` of :class:`~geoattn.symbolic.claim.Claim`
values, checked by the same engine, rules and report as the ledger's (see the docs guide "Write your own
claim" and ``examples/my_claims.py``).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
import sys
from types import ModuleType

from ..errors import UserClaimsError
from .claim import Claim

__all__ = ["UserClaimsError", "load_claims"]


def _module(target: str) -> ModuleType:
    """The module at path ``target`` (a ``.py`` file) or named ``target`` (a dotted module name)."""
    if os.path.isfile(target):
        stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(target))[0])
        name = f"geoattn_user_claims.{stem}"
        spec = importlib.util.spec_from_file_location(name, os.path.abspath(target))
        if spec is None or spec.loader is None:
            raise UserClaimsError(f"Expected a Python file of claims. Got {target!r}, which Python cannot load.")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        try:
            spec.loader.exec_module(module)
        except Exception:
            sys.modules.pop(name, None)
            raise
        return module
    if target.endswith(".py") or os.sep in target or not re.fullmatch(r"[A-Za-z_][\w.]*", target):
        raise UserClaimsError(f"Expected an existing Python file or an importable module name. Got {target!r}.")
    try:
        return importlib.import_module(target)
    except ImportError as exc:
        raise UserClaimsError(f"Expected an importable module name. Got {target!r} ({exc}).") from None


def load_claims(target: str, *, check_ledger: bool = True) -> list[Claim]:
    """The claims that the file or module ``target`` declares in its list ``CLAIMS``.

    Parameters
    ----------
    target : str
        a path to a ``.py`` file, or a dotted module name on ``sys.path``.
    check_ledger : bool
        refuse ids that the built-in ledger already uses (default ``True``).

    Returns
    -------
    list of Claim
        the claims in declaration order; a claim that names no ``family`` is filed under the module's
        last name (``my_claims`` for ``examples/my_claims.py``).

    Raises
    ------
    UserClaimsError
        when ``CLAIMS`` is missing or not a list of claims, an id repeats or is a ledger id, or a claim
        names no source.

    Examples
    --------
    >>> claims = load_claims("examples/my_claims.py")  # doctest: +SKIP
    >>> [c.id for c in claims]  # doctest: +SKIP
    ['mine.cayley_symmetric', 'mine.vp_symmetric', 'mine.vp_symmetric.exp', 'mine.exp_orthogonal']
    """
    module = _module(target)
    declared = getattr(module, "CLAIMS", None)
    if not isinstance(declared, (list, tuple)) or not declared:
        raise UserClaimsError(f"Expected {target!r} to declare CLAIMS, a nonempty list of Claim values. "
                              f"Got {type(declared).__name__ if declared is not None else 'no CLAIMS'}.")
    bad = [type(c).__name__ for c in declared if not isinstance(c, Claim)]
    if bad:
        raise UserClaimsError(f"Expected every entry of CLAIMS in {target!r} to be a Claim. Got {', '.join(bad)}.")
    family = module.__name__.rsplit(".", 1)[-1]
    seen: set[str] = set()
    out = []
    for claim in declared:
        if claim.id in seen:
            raise UserClaimsError(f"Expected unique claim ids in {target!r}. Got {claim.id!r} twice.")
        seen.add(claim.id)
        if not claim.source:
            raise UserClaimsError(f"Expected claim {claim.id!r} to name its source. Got none.")
        out.append(claim if claim.family else dataclasses.replace(claim, family=family))
    if check_ledger:
        from .ledger import _ledger

        taken = sorted(seen & set(_ledger()[0]))
        if taken:
            raise UserClaimsError(f"Expected claim ids that the ledger does not use. Got {', '.join(taken)}, "
                                  "which are ledger ids.")
    return out

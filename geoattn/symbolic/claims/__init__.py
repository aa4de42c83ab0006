"""The claim families of the ledger: one table, in ledger order, of the modules that declare each family's claims.

Every family module exports ``CLAIMS``, a plain list of :class:`~geoattn.symbolic.claim.Claim` values;
the family of a claim is the one this table files its module under (:mod:`geoattn.symbolic.ledger`
sets it). Helper modules (``_common``, ``_derivations``, ``_exp_exact``, ``_symattn_exact``, ``_free_algebra``,
``_lowrank_*``, ``vp_flow``) declare no claims; a test requires every module with ``CLAIMS`` to appear here
exactly once.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    cayley,
    exp_action,
    exp_so4_vjp,
    exponential,
    kernels,
    kernels_spectral,
    linear_symplectic,
    lowrank,
    models,
    multihead,
    symattn,
    systems,
    taylor,
    vectorisation,
    volume_preserving,
    vp_gram,
    vp_linear,
    vp_lower,
    vp_map,
)

__all__ = ["FAMILIES"]

#: family -> the modules that declare its claims, in ledger order
FAMILIES: dict[str, tuple[ModuleType, ...]] = {
    "cayley": (cayley,),
    "vectorisation": (vectorisation,),
    "volume_preserving": (volume_preserving, vp_linear, vp_map),
    "exponential": (exponential,),
    "linear_symplectic": (linear_symplectic,),
    "multihead": (multihead,),
    "kernels": (kernels, kernels_spectral, taylor, lowrank, vp_gram, vp_lower, exp_action,
                exp_so4_vjp),
    "models": (models,),
    "systems": (systems,),
    "symattn": (symattn,),
}

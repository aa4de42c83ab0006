"""The ledger: every claim of :data:`geoattn.symbolic.claims.FAMILIES`, looked up by id or by family.

The table is built once, on first use (importing :mod:`geoattn.symbolic` does not load the claims).
Imports point one way: this module imports the claims, which import :mod:`geoattn.symbolic.claim`;
no claims module imports this one. The ledger holds copies of the declared claims with their
``family`` filled in from the table (a declared claim names none).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from . import lemmas
from .claim import Claim, UnknownClaimError

__all__ = ["get_claim", "all_claims", "families", "declared_in"]


@lru_cache(maxsize=1)
def _ledger() -> tuple[dict[str, Claim], tuple[str, ...]]:
    return _build()[:2]


@lru_cache(maxsize=1)
def _build() -> tuple[dict[str, Claim], tuple[str, ...], dict[str, str]]:
    from .claims import FAMILIES

    table: dict[str, Claim] = {}
    where: dict[str, str] = {}
    for family, modules in FAMILIES.items():
        for module in modules:
            for claim in module.CLAIMS:
                where[claim.id] = module.__name__
                if claim.family:
                    raise ValueError(f"Expected claim {claim.id!r} of module {module.__name__} to declare no family "
                                     f"(the table files it under {family!r}). Got {claim.family!r}.")
                if claim.id in table:
                    raise ValueError(f"Expected unique claim ids. Got {claim.id!r} twice.")
                table[claim.id] = dataclasses.replace(claim, family=family)
    for claim in table.values():
        if not claim.source:
            raise ValueError(f"Expected claim {claim.id!r} to name its source. Got none.")
        if claim.corrects is not None:
            original = table.get(claim.corrects)
            if original is None or claim.source != f"corrected form of {claim.corrects}":
                raise ValueError(f"Expected {claim.id!r} to correct a claim of the ledger, with source 'corrected "
                                 f"form of {claim.corrects}'. Got corrects={claim.corrects!r}, source={claim.source!r}.")
    return table, tuple(FAMILIES), where


def get_claim(claim_id: str) -> Claim:
    """The claim with id ``claim_id`` (:class:`~geoattn.symbolic.claim.UnknownClaimError` if none)."""
    table, _ = _ledger()
    try:
        return table[claim_id]
    except KeyError:
        raise UnknownClaimError(claim_id, table) from None


def declared_in(claim_id: str) -> str:
    """The module that declares claim ``claim_id`` (an id's family prefix does not always name it: ``cayley.vjp``
    is declared with the kernels' claims), e.g. ``'geoattn.symbolic.claims.kernels'``; ``geoattn prove --where ID``
    prints its file."""
    get_claim(claim_id)  # UnknownClaimError for an unknown id
    return _build()[2][claim_id]


def all_claims(family: str | None = None) -> list[Claim]:
    """Every claim in ledger order (family by family, each family in declaration order), or one family's."""
    table, names = _ledger()
    if family is not None and family not in names:
        raise ValueError(f"Expected family in {list(names)}. Got {family!r}.")
    return [c for c in table.values() if family is None or c.family == family]


def families() -> list[str]:
    """The family names in ledger order."""
    return list(_ledger()[1])


lemmas.use_ledger(lambda: _ledger()[0])  # ``ledger:<id>`` citations resolve against this table

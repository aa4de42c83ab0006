"""Sphinx directives that render claims of the geoattn ledger from the verified code.

``claim`` renders one claim by id: statement, verdict and evidence, the derivation steps as
LaTeX, the counterexample of a refuted claim, and the generated source of the kernels the claim
verifies. Its ``:verdict:`` option is what the page asserts; the build fails when the verdict
computed during the build differs. ``claim-ledger`` renders every claim in one table.
"""

from __future__ import annotations

import re

import inspect

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

_VERDICTS: dict = {}


def verdict_of(claim_id: str):
    """Check a claim once per build (cached)."""
    from geoattn import symbolic

    if claim_id not in _VERDICTS:
        _VERDICTS[claim_id] = symbolic.check(symbolic.get_claim(claim_id))
    return _VERDICTS[claim_id]


def _para(*children) -> nodes.paragraph:
    p = nodes.paragraph()
    for c in children:
        p += nodes.Text(c) if isinstance(c, str) else c
    return p


_ID = re.compile(r"^\(?[a-z_]+(\.[a-z_0-9]+)+\)?[,;:.]?$")  # a ledger id such as vec.right_multiplication
_MATHY = re.compile(r"[\\^_{}=+<>]|^[A-Z]$|^[A-Z]?\(.*\)[A-Za-z]*$|^[0-9]+$")


def _mixed(rule: str) -> list:
    """A step's rule as text with its TeX fragments typeset: tokens with TeX markup become math."""
    out, run, kind = [], [], None

    def flush():
        if run:
            txt = " ".join(run)
            out.append(nodes.math(txt, txt) if kind == "math" else nodes.Text(txt))
            out.append(nodes.Text(" "))

    for tok in rule.split():
        k = "text" if _ID.match(tok) or not _MATHY.search(tok) else "math"
        if k != kind:
            flush()
            run, kind = [], k
        run.append(tok)
    flush()
    return out[:-1] if out else out


def _kernel_sources(claim_id: str) -> list[tuple[str, str]]:
    from geoattn.kernels import _generated as gen
    from geoattn.symbolic import kernel_table as kt

    return [(k.name, inspect.getsource(getattr(gen, k.name))) for k in kt.KERNELS if claim_id in k.claims]


class ClaimDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"verdict": directives.unchanged_required, "no-source": directives.flag}

    def run(self):
        from geoattn import symbolic
        from geoattn.symbolic import evidence, report

        claim_id = self.arguments[0]
        try:
            claim = symbolic.get_claim(claim_id)
        except KeyError as exc:
            raise ExtensionError(f"claim directive: {exc}") from None
        asserted = self.options.get("verdict")
        if asserted is None:
            raise ExtensionError(f"claim {claim_id}: expected a :verdict: option stating what the page asserts")
        verdict = verdict_of(claim_id)
        if verdict.level.value != asserted:
            raise ExtensionError(
                f"claim {claim_id}: the page asserts verdict {asserted!r}, the checker computed "
                f"{verdict.level.value!r} ({self.get_location()})"
            )
        box = nodes.admonition(classes=["geoattn-claim", f"verdict-{verdict.level.value}"])
        box += nodes.title(text=f"{claim.id}: {claim.title}")
        box += _para(claim.statement)
        box += nodes.math_block(claim.latex, claim.latex, nowrap=False, number=None)
        box += _para(nodes.strong(text=f"Verdict: {verdict.level.value}. "), report.evidence_summary(verdict))
        box += _para(f"Source: {claim.source}.")
        derivation = verdict.derivation
        if derivation is not None:
            if derivation.assumptions:
                box += _para("Assumptions:")
                for a in derivation.assumptions:
                    box += nodes.math_block(a, a, nowrap=False, number=None)
            steps = nodes.enumerated_list()
            for step in derivation.steps:
                item = nodes.list_item()
                item += nodes.math_block(step.latex(), step.latex(), nowrap=False, number=None)
                mark = "verified by SymPy" if step.verified else "stated lemma"
                item += _para(*_mixed(step.rule), nodes.emphasis(text=f" ({mark})"))
                steps += item
            box += _para("Derivation:")
            box += steps
            box += nodes.math_block(derivation.conclusion, derivation.conclusion, nowrap=False, number=None)
        cx = verdict.counterexample
        if cx is not None:
            box += _para(nodes.strong(text="Counterexample: "), cx.summary())
            for name, value in cx.values.items():
                latex = f"{name} = {evidence._latex(value)}"
                box += nodes.math_block(latex, latex, nowrap=False, number=None)
        if "no-source" not in self.options:
            for name, src in _kernel_sources(claim_id):
                box += _para("Generated kernel ", nodes.literal(text=name), ":")
                box += nodes.literal_block(src, src, language="python")
        return [box]


class ClaimLedgerDirective(SphinxDirective):
    """Every claim: id, source, verdict, evidence, and the corrected claim of each refuted one."""

    def run(self):
        from geoattn import symbolic
        from geoattn.symbolic import report

        claims = symbolic.all_claims()
        corrected = {}
        for c in claims:
            if c.source.startswith("corrected form of "):
                corrected.setdefault(c.source.removeprefix("corrected form of ").strip(), []).append(c.id)
        table = nodes.table(classes=["geoattn-ledger"])
        group = nodes.tgroup(cols=5)
        table += group
        for width in (22, 30, 10, 38, 20):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        body = nodes.tbody()
        group += body

        def row(cells, parent):
            r = nodes.row()
            for cell in cells:
                entry = nodes.entry()
                entry += cell if isinstance(cell, nodes.Node) else _para(cell)
                r += entry
            parent += r

        row(["claim", "statement", "verdict", "evidence", "source / correction"], head)
        for c in claims:
            v = verdict_of(c.id)
            evidence = report.evidence_summary(v)
            if v.counterexample is not None:
                evidence += " Counterexample: " + v.counterexample.summary()
            fix = c.source
            if c.id in corrected:
                fix += "; corrected: " + ", ".join(corrected[c.id])
            row([_para(nodes.literal(text=c.id)), c.statement, v.level.value, evidence, fix], body)
        return [table]


def setup(app):
    app.add_directive("claim", ClaimDirective)
    app.add_directive("claim-ledger", ClaimLedgerDirective)
    return {"version": "0.1", "parallel_read_safe": False}

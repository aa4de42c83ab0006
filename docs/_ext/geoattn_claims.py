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


_MARKED_MATH = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$")


def rule_nodes(rule: str) -> list:
    r"""A derivation step's rule (its justification) as text, with only its ``$...$`` parts typeset.

    Parameters
    ----------
    rule : str
        The rule text, e.g. ``"transpose reverses products; $A^T = -A$"``. Prose and ASCII formulas
        (``C_ij``, ``matrix_softmax``) outside dollar signs stay plain text: nothing unmarked is set as math,
        so an identifier's underscore never becomes a subscript. ``\$`` is a literal dollar sign.

    Returns
    -------
    list of docutils nodes
        ``Text`` and ``math`` nodes in the order of the rule.
    """
    out, pos = [], 0
    for m in _MARKED_MATH.finditer(rule):
        if m.start() > pos:
            out.append(nodes.Text(rule[pos:m.start()].replace("\\$", "$")))
        out.append(nodes.math(m.group(1), m.group(1)))
        pos = m.end()
    if pos < len(rule):
        out.append(nodes.Text(rule[pos:].replace("\\$", "$")))
    return out


def _verdict_badge(level: str, text: str | None = None) -> nodes.strong:
    return nodes.strong(text=text or level, classes=["geoattn-verdict", f"verdict-{level}"])


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
        box += _para(_verdict_badge(verdict.level.value, f"Verdict: {verdict.level.value}."), " ",
                     report.evidence_summary(verdict))
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
                item += _para(*rule_nodes(step.rule), nodes.emphasis(text=f" ({mark})"))
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
    """Every claim in one compact table: id and family, verdict, typeset statement; the rest collapsed.

    Each row carries the classes ``claim-row``, ``family-<family>`` and ``verdict-<level>``, which the
    page's filter (``_static/geoattn-ledger.js``) and the browser check read. The collapsed details hold
    the statement in words, the evidence (with the counterexample of a refuted claim), the source and
    the ids of the corrected forms.
    """

    def run(self):
        from geoattn import symbolic
        from geoattn.symbolic import report

        claims = symbolic.all_claims()
        corrected = {}
        for c in claims:
            if c.source.startswith("corrected form of "):
                corrected.setdefault(c.source.removeprefix("corrected form of ").strip(), []).append(c.id)
        table = nodes.table(classes=["geoattn-ledger"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (30, 13, 57):
            group += nodes.colspec(colwidth=width)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        header = nodes.row()
        for title in ("claim", "verdict", "statement"):
            header += nodes.entry("", _para(title))
        head += header
        for c in claims:
            v = verdict_of(c.id)
            level = v.level.value
            r = nodes.row(classes=["claim-row", f"family-{c.family}", f"verdict-{level}"])
            r += nodes.entry("", _para(nodes.literal(text=c.id, classes=["geoattn-claim-id"])),
                             _para(nodes.inline(text=c.family.replace("_", " "), classes=["geoattn-family"])))
            r += nodes.entry("", _para(_verdict_badge(level)))
            statement = nodes.container("", _para(nodes.math(c.latex, c.latex)), classes=["geoattn-statement"])
            r += nodes.entry("", statement, *self._details(c, v, report, corrected.get(c.id, [])))
            body += r
        return [table]

    @staticmethod
    def _details(claim, verdict, report, fixes: list[str]) -> list:
        evidence = report.evidence_summary(verdict)
        if verdict.counterexample is not None:
            evidence += ". Counterexample: " + verdict.counterexample.summary()
        source = claim.source + ("; corrected form: " + ", ".join(fixes) if fixes else "")
        return [nodes.raw("", "<details><summary>details</summary>", format="html"),
                _para(claim.statement),
                _para(nodes.strong(text="Evidence: "), evidence),
                _para(nodes.strong(text="Source: "), source),
                nodes.raw("", "</details>", format="html")]


def setup(app):
    app.add_directive("claim", ClaimDirective)
    app.add_directive("claim-ledger", ClaimLedgerDirective)
    return {"version": "0.1", "parallel_read_safe": False}

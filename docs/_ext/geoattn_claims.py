"""Sphinx directives that render claims of the geoattn ledger from the verified code.

``claim`` renders one claim by id: statement, verdict and evidence, the derivation steps as
LaTeX, the counterexample of a refuted claim, and the generated source of the kernels the claim
verifies. Its ``:verdict:`` option is what the page asserts; the build fails when the verdict
computed during the build differs. With ``:claims: PATH`` (a Python file relative to the page's
folder, declaring ``CLAIMS``) the claim is one of that file's rather than the ledger's: the guide
"Write your own claim" checks its examples this way. ``claim-ledger`` renders every claim in one table.
"""

from __future__ import annotations

import inspect
import os

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from geoattn_rules import escape_text_underscores, rule_segments

_VERDICTS: dict = {}


def verdict_of(claim_id: str, path: str | None = None):
    """Check a claim once per build (cached): a ledger claim, or one declared in the file ``path``."""
    from geoattn import symbolic

    key = claim_id if path is None else (path, claim_id)
    if key not in _VERDICTS:
        _VERDICTS[key] = symbolic.check(_claim(claim_id, path))
    return _VERDICTS[key]


def _claim(claim_id: str, path: str | None):
    """The ledger's claim ``claim_id``, or the one the file ``path`` declares (ExtensionError if none)."""
    from geoattn import symbolic

    if path is None:
        try:
            return symbolic.get_claim(claim_id)
        except KeyError as exc:
            raise ExtensionError(f"claim directive: {exc}") from None
    try:
        declared = {c.id: c for c in symbolic.load_claims(path)}
    except ValueError as exc:
        raise ExtensionError(f"claim directive: {exc}") from None
    if claim_id not in declared:
        raise ExtensionError(f"claim directive: Expected a claim id declared in {path} ({', '.join(declared)}). "
                             f"Got {claim_id!r}.")
    return declared[claim_id]


def _para(*children) -> nodes.paragraph:
    p = nodes.paragraph()
    for c in children:
        p += nodes.Text(c) if isinstance(c, str) else c
    return p


def rule_nodes(rule: str) -> list:
    """A derivation step's rule as docutils nodes: prose as text, formulas as math, identifiers as code.

    The split is :func:`geoattn_rules.rule_segments`'s: ``$...$`` parts when the rule marks any, otherwise
    runs of non-words; prose never becomes math and an identifier's underscore never a subscript.
    """
    make = {"text": nodes.Text, "math": lambda s: nodes.math(s, s), "code": lambda s: nodes.literal(text=s)}
    return [make[kind](part) for kind, part in rule_segments(rule)]


def _math_block(tex: str) -> nodes.math_block:
    tex = escape_text_underscores(tex)
    return nodes.math_block(tex, tex, nowrap=False, number=None)


def _verdict_badge(level: str, text: str | None = None) -> nodes.strong:
    return nodes.strong(text=text or level, classes=["geoattn-verdict", f"verdict-{level}"])


def _kernel_sources(claim_id: str) -> list[tuple[str, str]]:
    from geoattn.kernels import _generated as gen
    from geoattn.symbolic import kernel_table as kt

    return [(k.name, inspect.getsource(getattr(gen, k.name))) for k in kt.KERNELS if claim_id in k.claims]


class ClaimDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"verdict": directives.unchanged_required, "no-source": directives.flag,
                   "claims": directives.unchanged_required}

    def run(self):
        import sympy

        from geoattn.symbolic import report

        claim_id = self.arguments[0]
        path = self.options.get("claims")
        if path is not None:
            page_dir = os.path.dirname(self.env.doc2path(self.env.docname))
            path = os.path.normpath(os.path.join(page_dir, path))
            self.env.note_dependency(path)
        claim = _claim(claim_id, path)
        asserted = self.options.get("verdict")
        if asserted is None:
            raise ExtensionError(f"claim {claim_id}: expected a :verdict: option stating what the page asserts")
        verdict = verdict_of(claim_id, path)
        if verdict.level.value != asserted:
            raise ExtensionError(
                f"claim {claim_id}: the page asserts verdict {asserted!r}, the checker computed "
                f"{verdict.level.value!r} ({self.get_location()})"
            )
        box = nodes.admonition(classes=["geoattn-claim", f"verdict-{verdict.level.value}"])
        box += nodes.title(text=f"{claim.id}: {claim.title}")
        box += _para(claim.statement)
        box += _math_block(claim.latex)
        box += _para(_verdict_badge(verdict.level.value, f"Verdict: {verdict.level.value}."), " ",
                     report.evidence_summary(verdict))
        box += _para(f"Source: {claim.source}.")
        derivation = verdict.derivation
        if derivation is not None:
            if derivation.assumptions:
                box += _para("Assumptions:")
                for a in derivation.assumptions:
                    box += _math_block(a)
            steps = nodes.enumerated_list()
            for step in derivation.steps:
                item = nodes.list_item()
                item += _math_block(step.latex())
                mark = "verified by SymPy" if step.verified else f"stated lemma {step.lemma}"
                item += _para(*rule_nodes(step.rule), nodes.emphasis(text=f" ({mark})"))
                steps += item
            box += _para("Derivation:")
            box += steps
            box += _math_block(derivation.conclusion_latex())
        cx = verdict.counterexample
        if cx is not None:
            box += _para(nodes.strong(text="Counterexample: "), cx.summary())
            for name, value in cx.values.items():
                latex = f"{name} = {value if isinstance(value, str) else sympy.latex(value)}"
                box += _math_block(latex)
        if "no-source" not in self.options and path is None:
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
            tex = escape_text_underscores(c.latex)
            statement = nodes.container("", _para(nodes.math(tex, tex)), classes=["geoattn-statement"])
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

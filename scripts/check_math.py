"""Check the TeX source of every formula on the built site, and the text around it, for known defects.

    python scripts/check_math.py docs/_build/html [--self-test]

MathJax typesets almost anything, so a formula can render and still be wrong. For every math node
(``span.math`` / ``div.math``) of every page this requires:

* no prose inside math: two or more words in a row outside ``\\text{}``-like groups (MathJax sets
  them as one italic run, "soI+Aisinvertible");
* no ledger id inside math outside ``\\text{}`` (``vp.map_volume_preserving.skew`` sets as a product with
  subscripts); the ids are read from the ledger;
* no nested math delimiters (``\\(`` inside a formula) and no control characters;

and of the visible text outside code: no TeX command whose backslash was eaten by a Python string
(``frac12``, ``heta``: a ``\\t`` became a TAB), and no control characters.

``--self-test`` first writes a page with one instance of each defect and requires every one to be
caught (the check's negative control).
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

MATH = re.compile(r'<(span|div) class="math[^"]*"[^>]*>(.*?)</\1>', re.S)
CODE = re.compile(r"<(pre|code)\b.*?</\1>", re.S)
TAG = re.compile(r"<[^>]+>")
TEXT_GROUP = re.compile(r"\\(?:text|textrm|textit|texttt|mathrm|mathit|mathtt|operatorname|mbox|mathsf)\s*\{[^{}]*\}")
COMMAND = re.compile(r"\\[A-Za-z]+")
#: two words in a row, one of them lower-case (prose); ``QR Gy^T`` (a product of matrices) is no prose
PROSE = re.compile(r"(?<![A-Za-z])(?:[a-z]{2,}\s+[A-Za-z]{2,}|[A-Za-z]{2,}\s+[a-z]{2,})(?![A-Za-z])")
def _ledger_ids() -> re.Pattern:
    """Every claim id of the ledger, longest first (``cayley.orthogonal`` as well as ``vp.map_volume_preserving``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from geoattn.symbolic import all_claims

    ids = sorted((c.id for c in all_claims()), key=len, reverse=True)
    return re.compile(r"(?<![\\A-Za-z_.])(?:" + "|".join(re.escape(i) for i in ids) + r")(?![A-Za-z_])")


LEDGER_ID = _ledger_ids()
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: an accent or a fraction with nothing after it: its argument was cut off (MathJax: "Missing argument")
ORPHAN = re.compile(r"\\(?:dot|ddot|hat|bar|tilde|vec|frac|tfrac|sqrt|mathrm|mathbb|text)\s*$")
EATEN = re.compile(r"(?<![\\A-Za-z])(?:frac\d|frac\{|heta\b|imes\b|ightarrow\b|mathbb\{)")


def formula_problems(tex: str) -> list[str]:
    """The defects of one formula's TeX source (delimiters included)."""
    problems = []
    body = tex.strip()
    for left, right in (("\\(", "\\)"), ("\\[", "\\]")):
        if body.startswith(left) and body.endswith(right):
            body = body[len(left):-len(right)]
            break
    if "\\(" in body or "\\)" in body:
        problems.append(f"nested math delimiters in {tex[:60]!r}")
    if CONTROL.search(tex):
        problems.append(f"control character in {tex[:60]!r}")
    if ORPHAN.search(body):
        problems.append(f"a command without its argument at the end of {tex[:60]!r}")
    plain = COMMAND.sub(" ", TEXT_GROUP.sub(" ", body))
    m = PROSE.search(plain)
    if m:
        problems.append(f"prose inside math: {m.group(0)!r} in {tex[:60]!r}")
    m = LEDGER_ID.search(TEXT_GROUP.sub(" ", body))
    if m:
        problems.append(f"ledger id inside math: {m.group(0)!r} in {tex[:60]!r}")
    return problems


def page_problems(source: str) -> list[str]:
    """The defects of one HTML page: every formula, and the visible text outside math and code."""
    problems = []
    for m in MATH.finditer(source):
        problems += formula_problems(html.unescape(TAG.sub("", m.group(2))))
    text = html.unescape(TAG.sub(" ", MATH.sub(" ", CODE.sub(" ", source))))
    text = re.sub(r"<script\b.*?</script>|<style\b.*?</style>", " ", text, flags=re.S)
    m = EATEN.search(text)
    if m:
        problems.append(f"TeX command without its backslash in the text: {text[max(0, m.start() - 30):m.end() + 20]!r}")
    if CONTROL.search(text):
        problems.append("control character in the text")
    return problems


#: one formula or text per defect class; each must be caught
BROKEN = {
    "prose": r'<span class="math notranslate nohighlight">\(so I + A is invertible for every A\)</span>',
    "ledger id": r'<span class="math notranslate nohighlight">\(\text{see } vp.map_volume_preserving.skew\)</span>',
    "ledger id without underscore": r'<span class="math notranslate nohighlight">\(Q^TQ = I (cayley.orthogonal)\)</span>',
    "nested": r'<span class="math notranslate nohighlight">\(\(lsa_update\)\)</span>',
    "eaten backslash": "<p>the weight \\tfrac12 of \x09heta</p>".replace("\\tfrac", "\tfrac"),
    "control": '<span class="math notranslate nohighlight">\\(x\x07\\)</span>',
    "argument cut off": r'<span class="math notranslate nohighlight">\(D G[\dot\)</span>',
}


def self_test() -> list[str]:
    """The defect classes the check misses (empty when it catches every one)."""
    missed = [name for name, snippet in BROKEN.items() if not page_problems(f"<html><body>{snippet}</body></html>")]
    clean = r'<p>text</p><span class="math notranslate nohighlight">\(\mathrm{Tr}(QAQ^T) = \tfrac12 \theta\)</span>'
    if page_problems(clean):
        missed.append("clean page flagged")
    return missed


def main(argv=None) -> int:
    """Check every page of the built site (after the self-test with ``--self-test``); 1 if any page fails."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="the built site, e.g. docs/_build/html")
    ap.add_argument("--self-test", action="store_true", help="first require every defect class to be caught")
    args = ap.parse_args(argv)
    if args.self_test:
        missed = self_test()
        if missed:
            print(f"math check: negative controls NOT caught: {missed}", file=sys.stderr)
            return 1
        print(f"math check: negative controls caught ({', '.join(BROKEN)})")
    root = Path(args.root)
    pages = sorted(p for p in root.rglob("*.html") if "_sources" not in p.parts and "_modules" not in p.parts)
    failures = 0
    for page in pages:
        problems = page_problems(page.read_text(encoding="utf-8"))
        if problems:
            failures += 1
            shown = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
            print(f"FAIL {page.relative_to(root)}: {shown}")
    print(f"math check: {len(pages)} pages, {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

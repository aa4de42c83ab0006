r"""Load every built page in headless Chromium with the network blocked and check what a reader sees.

    python scripts/browser_check.py docs/_build/html [--screenshots DIR] [--self-test]

Every page is loaded in a 1,280 px wide window. For every page, after MathJax has finished:

* ``math``: every math node (Sphinx's ``span.math`` / ``div.math``) holds a MathJax rendering, no MathJax error
  node exists, and no raw ``\frac`` / ``\mathbb`` is left in the visible text outside code blocks;
* ``underscore``: no identifier with an underscore in the TeX of a formula outside a text group
  (``\mathrm{matrix_softmax}`` sets *matri*, a subscript *s* and *oftmax*; ``C_ij`` sets :math:`C_i j`), and
  no backslash glyph in typeset math (``\texttt{matrix\_softmax}`` where text-mode macros are not loaded);
* ``overflow-page``: the page does not scroll sideways (``scrollWidth > clientWidth`` of the document);
* ``overflow-block``: no block, element or text run of the content column reaches past its container's box
  without a scroller of its own in between (a wide table or formula may scroll inside its own box; a block
  pulled out by a negative margin may reach out by that margin);
* ``verdict`` (the ledger page): every claim of the ledger has a row whose id, verdict and statement box lie
  inside the window and inside every box that clips them, and whose verdict is a known level;
* ``network``: no request left the machine (every http(s) request is blocked and reported).

Screenshots of the ledger, API, Cayley, symplectic attention, benchmarks and experiments pages are saved.

``--self-test`` first checks copies of real pages with one injected defect each (a broken formula, an
identifier with underscores in math, a wide text run, a wide table, a page wider than the window, the ledger's
verdicts pushed out of view, a claim without a row) and requires each to be caught by its own rule: the
check's negative controls. Then it checks the real site.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

WIDTH = 1280
LEVELS = ("proved", "checked", "certified", "refuted", "error")
SCREENSHOTS = ("ledger.html", "api.html", "theory/cayley.html", "theory/symplectic_attention.html",
               "benchmarks.html", "experiments.html")
JS = (Path(__file__).resolve().parent / "browser_check.js").read_text()

WAIT_MATHJAX = """
const done = arguments[arguments.length - 1];
const start = Date.now();
(function poll() {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(() => done('ok')).catch(e => done('error: ' + e));
  } else if (!document.querySelector('.math')) {
    done('no-math');
  } else if (Date.now() - start > 20000) {
    done('timeout: MathJax did not load');
  } else {
    setTimeout(poll, 50);
  }
})();
"""

#: text groups whose content MathJax sets as text (an underscore there is a literal underscore)
TEXT_GROUP = re.compile(r"\\(?:text|textrm|textit|textbf|textsf|texttt|mbox)\s*\{(?:[^{}]|\{[^{}]*\})*\}")
#: a word of two or more letters joined to another by an underscore, not a TeX command: ``matrix_softmax``,
#: ``matrix_{softmax}``
IDENTIFIER = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}_\{?[A-Za-z]{2,}")
#: an unbraced subscript of two or more lower-case letters ending the token: TeX subscripts only the first
#: (``C_ij`` is C_i j). ``P_iZ`` and ``p_iz^{(i)}`` (a subscript, then a factor) pass.
LONG_SUBSCRIPT = re.compile(r"(?<!\\)_[a-z]{2,}(?![A-Za-z^_'])")


def math_source_problems(tex: str) -> list[str]:
    r"""The identifiers with underscores that a formula's TeX sets as subscripts.

    Parameters
    ----------
    tex : str
        The TeX source of one formula, without delimiters.

    Returns
    -------
    list of str
        One message per defect: a multi-letter word joined by an underscore outside ``\text{}``-like groups
        (``\mathrm{matrix_softmax}``), or an unbraced subscript of several letters (``C_ij``). Empty when the
        formula has neither. ``\_`` (an escaped underscore) and subscripts of commands (``\sum_k``) pass.
    """
    body = TEXT_GROUP.sub(" ", tex)
    problems = []
    for m in IDENTIFIER.finditer(body):
        problems.append(f"identifier with an underscore inside math: {m.group(0)!r} in {tex[:70]!r} (it sets as a "
                        f"subscript; write it as \\texttt{{...\\_...}} or outside the formula)")
    for m in LONG_SUBSCRIPT.finditer(body):
        if not any(m.start() > i.start() and m.start() < i.end() for i in IDENTIFIER.finditer(body)):
            problems.append(f"unbraced subscript of several letters inside math: {m.group(0)!r} in {tex[:70]!r} "
                            f"(only its first letter is subscripted)")
    return problems


def driver():
    """Headless Chromium (a selenium ``webdriver.Chrome``), 1,280 px wide, that can reach no network."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--allow-file-access-from-files", "--hide-scrollbars", f"--window-size={WIDTH},1600",
                # no network: every host resolves nowhere and every proxied request goes to a closed port
                "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                "--proxy-bypass-list=<-loopback>"):
        opts.add_argument(arg)
    for binary in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
        if Path(binary).exists():
            opts.binary_location = binary
            break
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    d = webdriver.Chrome(options=opts, service=service)
    d.set_script_timeout(30)
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["http://*", "https://*"]})
    # the layout viewport is WIDTH px wide whatever the window decorations take
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": WIDTH, "height": 1600, "deviceScaleFactor": 1, "mobile": False})
    return d


def ledger_ids() -> list[str]:
    """Every claim id of the ledger, in ledger order (read from the code the site was built from)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from geoattn.symbolic import all_claims

    return [c.id for c in all_claims()]


def check_page(d, page: Path, claim_ids: list[str] | None = None) -> list[tuple[str, str]]:
    """The problems of one page as ``(rule, message)`` pairs; ``claim_ids`` turns on the ledger's verdict rule."""
    d.get(page.resolve().as_uri())
    state = d.execute_async_script(WAIT_MATHJAX)
    problems = []
    if state not in ("ok", "no-math"):
        problems.append(("math", f"MathJax: {state}"))
    r = d.execute_script(JS + "\nreturn inspectPage(arguments[0], arguments[1]);", claim_ids, list(LEVELS))
    if r["untypeset"]:
        problems.append(("math", f"{len(r['untypeset'])} of {r['math']} math nodes not typeset, "
                                 f"e.g. {r['untypeset'][0]!r}"))
    if r["errors"]:
        problems.append(("math", f"{len(r['errors'])} MathJax error node(s), e.g. {r['errors'][0]!r}"))
    if r["raw"]:
        problems.append(("math", f"raw TeX left in the text: {r['raw'][0]!r}"))
    for tex in r["tex"]:
        problems += [("underscore", p) for p in math_source_problems(tex)]
    if r["backslashes"]:
        problems.append(("underscore", f"{r['backslashes']} backslash glyph(s) in typeset math "
                                       f"(a text-mode macro such as \\_ set literally)"))
    if r["page_width"]:
        problems.append(("overflow-page", "the page scrolls sideways: document scrollWidth {} > clientWidth {}"
                         .format(*r["page_width"])))
    if r["overflow"]:
        shown = "; ".join(r["overflow"][:3]) + (f" (+{len(r['overflow']) - 3} more)" if len(r["overflow"]) > 3 else "")
        problems.append(("overflow-block", f"{len(r['overflow'])} block(s) past their container: {shown}"))
    if r["verdicts"]:
        shown = "; ".join(r["verdicts"][:3]) + (f" (+{len(r['verdicts']) - 3} more)" if len(r["verdicts"]) > 3 else "")
        problems.append(("verdict", f"{len(r['verdicts'])} claim(s) without a visible verdict: {shown}"))
    if r["external"]:
        problems.append(("network", f"requests to the network: {r['external'][:3]}"))
    return problems


def _inject(root: Path, source: str, name: str, snippet: str, where: str = "</article>") -> Path:
    text = (root / source).read_text(encoding="utf-8")
    if where not in text:
        raise ValueError(f"Expected {where!r} in {source} to inject the control {name!r}. Got a page without it.")
    page = (root / source).parent / f"_control_{name}.html"
    page.write_text(text.replace(where, snippet + where, 1), encoding="utf-8")
    return page


MATH_SPAN = '<span class="math notranslate nohighlight">{}</span>'
#: (name, page, injected HTML, where, the rule that must catch it)
CONTROLS = [
    ("broken-formula", "theory/cayley.html",
     "<p>" + MATH_SPAN.format(r"\(\frac{1}{\)") + " " + MATH_SPAN.format(r"\(\notamacro{x}\)") + "</p>",
     "</article>", "math"),
    ("underscore-identifier", "theory/symplectic_attention.html",
     "<p>" + MATH_SPAN.format(r"\(\mathrm{matrix_softmax}(C)\)") + "</p>", "</article>", "underscore"),
    ("underscore-subscript", "theory/symplectic_attention.html",
     "<p>depends on " + MATH_SPAN.format(r"\(C_ij\)") + "</p>", "</article>", "underscore"),
    ("wide-text", "theory/cayley.html",
     '<p style="white-space: nowrap">' + "a line that never wraps " * 40 + "</p>", "</article>", "overflow-block"),
    ("wide-table", "benchmarks.html",
     "<table><tr>" + "<td style='white-space: nowrap'>column of a table without a scroller</td>" * 12
     + "</tr></table>", "</article>", "overflow-block"),
    ("wide-page", "index.html", '<div style="width: 200vw; height: 2px"></div>', "</body>", "overflow-page"),
    ("verdicts-out-of-view", "ledger.html",
     "<style>table.geoattn-ledger { table-layout: auto !important; width: 3200px !important; }</style>",
     "</head>", "verdict"),
    ("claim-without-row", "ledger.html",
     "<script>document.querySelector('table.geoattn-ledger tr.claim-row').remove();</script>", "</body>", "verdict"),
]


def self_test(d, root: Path, claim_ids: list[str]) -> list[str]:
    """Run every negative control; the names of those not caught by their own rule (empty when all are)."""
    missed = []
    for name, source, snippet, where, rule in CONTROLS:
        page = _inject(root, source, name, snippet, where)
        try:
            problems = check_page(d, page, claim_ids if source == "ledger.html" else None)
        finally:
            page.unlink()
        caught = [m for r, m in problems if r == rule]
        print(f"browser check: control {name}: " + (f"caught by {rule}: {caught[0][:160]}" if caught else "MISSED"))
        if not caught:
            missed.append(name)
    return missed


def main(argv=None) -> int:
    """Check every page of the built site (after the negative controls with ``--self-test``); 1 if any fails."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="the built site, e.g. docs/_build/html")
    ap.add_argument("--screenshots", default=None, help="folder for the screenshots (default ROOT/../screenshots)")
    ap.add_argument("--self-test", action="store_true", help="first require every injected defect to be caught")
    ap.add_argument("--json", default=None, help="also write the problems of every page to this file")
    args = ap.parse_args(argv)
    root = Path(args.root)
    if not (root / "ledger.html").exists():
        print(f"browser check: expected the ledger page {root / 'ledger.html'}. Got no such file.", file=sys.stderr)
        return 1
    shots = Path(args.screenshots) if args.screenshots else root.parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    claim_ids = ledger_ids()
    d = driver()
    try:
        if args.self_test:
            missed = self_test(d, root, claim_ids)
            if missed:
                print(f"browser check: negative controls NOT caught: {missed}", file=sys.stderr)
                return 1
        pages = sorted(p for p in root.rglob("*.html") if "_sources" not in p.parts and "_modules" not in p.parts)
        failures, report = 0, {}
        for page in pages:
            rel = page.relative_to(root).as_posix()
            problems = check_page(d, page, claim_ids if rel == "ledger.html" else None)
            report[rel] = [f"{r}: {m}" for r, m in problems]
            if problems:
                failures += 1
                print(f"FAIL {rel}: {'; '.join(report[rel])}")
            if rel in SCREENSHOTS:
                d.save_screenshot(str(shots / rel.replace("/", "_").replace(".html", ".png")))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
        print(f"browser check: {len(pages)} pages at {WIDTH} px, {failures} failing; screenshots in {shots}")
        return 1 if failures else 0
    finally:
        d.quit()


if __name__ == "__main__":
    sys.exit(main())

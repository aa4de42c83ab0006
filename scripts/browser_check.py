"""Load every built page in headless Chromium with the network blocked and check the typeset math.

    python scripts/browser_check.py docs/_build/html [--screenshots DIR] [--self-test]

For every page: wait for MathJax to finish, then require that every math node (Sphinx's
``span.math`` / ``div.math``) holds a MathJax rendering, that no MathJax error node exists, and that
no raw ``\\frac`` / ``\\mathbb`` is left in the visible text outside code blocks. Any request to
http(s) is blocked (and reported). Screenshots of the ledger and the Cayley theory page are saved.

``--self-test`` first writes a copy of a page with a deliberately broken formula and requires the
check to fail on it (the check's negative control), then checks the real site.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

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

INSPECT = """
const nodes = Array.from(document.querySelectorAll('span.math, div.math'));
const untypeset = nodes.filter(n => !n.querySelector('mjx-container')).map(n => n.textContent.slice(0, 80));
const errors = Array.from(document.querySelectorAll('mjx-merror, [data-mjx-error]'))
  .map(n => (n.getAttribute('data-mjx-error') || n.textContent).slice(0, 80));
const clone = document.body.cloneNode(true);
clone.querySelectorAll('pre, code, mjx-container, script, style, .highlight').forEach(n => n.remove());
const text = clone.textContent;
const raw = [];
for (const pat of ['\\\\frac', '\\\\mathbb']) {
  let i = text.indexOf(pat);
  if (i >= 0) raw.push(text.slice(Math.max(0, i - 30), i + 40));
}
const external = performance.getEntriesByType('resource').map(e => e.name).filter(u => /^https?:/.test(u));
return {math: nodes.length, untypeset, errors, raw, external};
"""


def driver() -> webdriver.Chrome:
    opts = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--allow-file-access-from-files", "--window-size=1280,1600",
                # no network: every host resolves nowhere and every proxied request goes to a closed port
                "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):
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
    return d


def check_page(d: webdriver.Chrome, page: Path) -> list[str]:
    d.get(page.resolve().as_uri())
    state = d.execute_async_script(WAIT_MATHJAX)
    problems = []
    if state not in ("ok", "no-math"):
        problems.append(f"MathJax: {state}")
    r = d.execute_script(INSPECT)
    if r["untypeset"]:
        problems.append(f"{len(r['untypeset'])} of {r['math']} math nodes not typeset, e.g. {r['untypeset'][0]!r}")
    if r["errors"]:
        problems.append(f"{len(r['errors'])} MathJax error node(s), e.g. {r['errors'][0]!r}")
    if r["raw"]:
        problems.append(f"raw TeX left in the text: {r['raw'][0]!r}")
    if r["external"]:
        problems.append(f"requests to the network: {r['external'][:3]}")
    return problems


def write_broken_page(root: Path) -> Path:
    """A copy of the Cayley page with an unbalanced fraction and an undefined macro appended."""
    src = (root / "theory" / "cayley.html").read_text()
    broken = '<p>broken: <span class="math notranslate nohighlight">\\(\\frac{1}{\\)</span> ' \
             '<span class="math notranslate nohighlight">\\(\\notamacro{x}\\)</span></p>'
    page = root / "theory" / "_broken_formula_check.html"
    page.write_text(src.replace("</article>", broken + "</article>", 1))
    return page


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="the built site, e.g. docs/_build/html")
    ap.add_argument("--screenshots", default=None, help="folder for the screenshots (default ROOT/../screenshots)")
    ap.add_argument("--self-test", action="store_true", help="first require the check to fail on a broken formula")
    args = ap.parse_args(argv)
    root = Path(args.root)
    shots = Path(args.screenshots) if args.screenshots else root.parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    d = driver()
    try:
        if args.self_test:
            bad = write_broken_page(root)
            try:
                problems = check_page(d, bad)
            finally:
                bad.unlink()
            if not problems:
                print("browser check: the broken formula was NOT caught", file=sys.stderr)
                return 1
            print(f"browser check: negative control caught: {'; '.join(problems)}")
        pages = sorted(p for p in root.rglob("*.html") if "_sources" not in p.parts and "_modules" not in p.parts)
        failures, math_pages = 0, 0
        for page in pages:
            problems = check_page(d, page)
            rel = page.relative_to(root)
            if problems:
                failures += 1
                print(f"FAIL {rel}: {'; '.join(problems)}")
            if str(rel) in ("ledger.html", "theory/cayley.html"):
                d.save_screenshot(str(shots / (str(rel).replace("/", "_").replace(".html", ".png"))))
            math_pages += 1
        print(f"browser check: {len(pages)} pages, {failures} failing; screenshots in {shots}")
        return 1 if failures else 0
    finally:
        d.quit()


if __name__ == "__main__":
    sys.exit(main())

"""Check that every internal link of the built site resolves: the file exists and so does the anchor.

    python scripts/check_links.py docs/_build/html

Exit status 1 lists every broken link (page, href). External links (http, https, mailto) are not
followed: the site must work offline, and the browser check blocks the network.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src") if tag in ("a", "img", "script", "link") else ():
            if a.get(key):
                self.hrefs.append(a[key])


def _parse(path: Path) -> _Collect:
    p = _Collect()
    p.feed(path.read_text(errors="replace"))
    return p


def check(root: Path) -> list[tuple[str, str]]:
    pages = sorted(root.rglob("*.html"))
    parsed = {p.resolve(): _parse(p) for p in pages}
    broken = []
    for page, info in parsed.items():
        for href in info.hrefs:
            if urlparse(href).scheme in ("http", "https", "mailto", "data", "javascript"):
                continue
            target, frag = urldefrag(href)
            target = urlparse(target).path  # drop ?v=... cache busters
            dest = page if not target else (page.parent / unquote(target)).resolve()
            if dest.is_dir():
                dest = dest / "index.html"
            if not dest.exists():
                broken.append((str(page.relative_to(root.resolve())), href))
                continue
            if frag and dest.suffix == ".html":
                ids = parsed[dest].ids if dest in parsed else _parse(dest).ids
                if unquote(frag) not in ids:
                    broken.append((str(page.relative_to(root.resolve())), href))
    return broken


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: check_links.py BUILD_HTML_DIR", file=sys.stderr)
        return 2
    root = Path(args[0])
    broken = check(root)
    n = len(list(root.rglob("*.html")))
    for page, href in broken:
        print(f"broken link: {page} -> {href}")
    print(f"links: {n} pages, {len(broken)} broken internal link(s)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

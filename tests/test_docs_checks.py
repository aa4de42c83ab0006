"""The internal-link checker of the built site finds broken files and anchors (and passes good ones)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_links", ROOT / "scripts" / "check_links.py")
check_links = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_links)


def _site(tmp_path, href):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(f'<a href="{href}">x</a><a href="https://example.org/">ext</a>'
                                         '<link href="sub/page.html?v=1">')
    (tmp_path / "sub" / "page.html").write_text('<h1 id="top">t</h1><a href="../index.html#">up</a>')
    return tmp_path


def test_good_links_pass(tmp_path):
    assert check_links.check(_site(tmp_path, "sub/page.html#top")) == []
    assert check_links.main([str(tmp_path)]) == 0


def test_missing_anchor_caught(tmp_path):
    broken = check_links.check(_site(tmp_path, "sub/page.html#nowhere"))
    assert broken == [("index.html", "sub/page.html#nowhere")]


def test_missing_file_caught(tmp_path):
    assert check_links.main([str(_site(tmp_path, "sub/gone.html"))]) == 1


def test_ci_runs_the_readme_test_command_verbatim():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [ln for ln in quick.strip().splitlines() if ln.strip()]
    assert len(commands) == 2, commands  # one to run the proofs, one to run the tests
    test_command = next(ln for ln in commands if "test" in ln.split("#")[0])
    ci_lines = [ln for ln in (root / ".ci" / "run").read_text().splitlines() if not ln.startswith("#")]
    assert test_command in ci_lines

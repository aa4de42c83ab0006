"""The docs' claim directive fails the build when a page asserts a verdict the checker does not compute."""

import os
import subprocess
import sys
import textwrap

EXT = os.path.join(os.path.dirname(__file__), "..", "docs", "_ext")
ROOT = os.path.join(os.path.dirname(__file__), "..")

CONF = textwrap.dedent(
    f"""
    import sys
    sys.path.insert(0, {os.path.abspath(ROOT)!r})
    sys.path.insert(0, {os.path.abspath(EXT)!r})
    extensions = ["myst_parser", "geoattn_claims"]
    """
)


def build(tmp_path, verdict):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(CONF)
    (src / "index.md").write_text(f"# Test\n\n```{{claim}} cayley.det_one\n:verdict: {verdict}\n```\n")
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)


def test_page_with_the_computed_verdict_builds(tmp_path):
    proc = build(tmp_path, "proved")
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "out" / "index.html").read_text()
    assert "cayley.det_one" in html and "Verdict: proved" in html


def test_page_asserting_a_different_verdict_fails_the_build(tmp_path):
    proc = build(tmp_path, "refuted")
    assert proc.returncode != 0
    assert "asserts verdict 'refuted', the checker computed 'proved'" in proc.stderr

"""The guide "Write your own claim": its examples are checked here as in the docs build."""

import ast
import os
import re
import subprocess
import sys

import pytest

from geoattn.symbolic.user import load_claims

from test_docs_directive import CONF

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDE = os.path.join(ROOT, "docs", "guide-claims.md")
EXAMPLE = os.path.join(ROOT, "examples", "my_claims.py")

DIRECTIVE = re.compile(r"```\{claim\} (\S+)\n((?::[\w-]+:.*\n)*)```")


def guide_claims() -> list[tuple[str, dict]]:
    """``(id, options)`` of every claim directive of the guide."""
    out = []
    for m in DIRECTIVE.finditer(open(GUIDE).read()):
        opts = dict(re.findall(r":([\w-]+):\s*(.*)", m.group(2)))
        out.append((m.group(1), opts))
    return out


def test_the_guide_shows_each_example_and_asserts_its_verdict():
    shown = guide_claims()
    assert [cid for cid, _ in shown] == ["mine.cayley_symmetric", "mine.vp_symmetric", "mine.vp_symmetric.exp",
                                         "mine.det_exp"]
    claims = {c.id: c for c in load_claims(EXAMPLE)}
    for cid, opts in shown:
        assert os.path.normpath(os.path.join(os.path.dirname(GUIDE), opts["claims"])) == EXAMPLE
        verdict = claims[cid].check()
        assert verdict.level.value == opts["verdict"] == claims[cid].expected.value, cid
    # the refuted ones carry an exact counterexample, the lemma example its lemma
    assert claims["mine.vp_symmetric.exp"].check().counterexample.residual.has(__import__("sympy").exp)
    assert claims["mine.det_exp"].check().derivation.lemmas[0].lemma == "jacobi_formula"


def test_every_included_function_exists_in_the_example():
    names = {n.name for n in ast.parse(open(EXAMPLE).read()).body if isinstance(n, ast.FunctionDef)}
    included = re.findall(r":pyobject: (\w+)", open(GUIDE).read())
    assert included and set(included) <= names


def _build(tmp_path, verdict: str):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(CONF)
    (src / "index.md").write_text(
        f"# Mine\n\n```{{claim}} mine.det_exp\n:claims: {EXAMPLE}\n:verdict: {verdict}\n```\n")
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("verdict", ["proved", "refuted"])
def test_the_directive_checks_a_claim_of_ones_own(tmp_path, verdict):
    proc = _build(tmp_path, verdict)
    if verdict == "proved":
        assert proc.returncode == 0, proc.stderr[-2000:]
        html = (tmp_path / "out" / "index.html").read_text()
        assert "mine.det_exp" in html and "Verdict: proved" in html and "stated lemma jacobi_formula" in html
    else:  # negative control: a page asserting the wrong verdict fails the build
        assert proc.returncode != 0
        assert "asserts verdict 'refuted', the checker computed 'proved'" in proc.stderr

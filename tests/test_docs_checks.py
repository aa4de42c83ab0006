"""The internal-link checker of the built site finds broken files and anchors (and passes good ones)."""

from __future__ import annotations

import importlib.util

import pytest
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


def _check_math():
    spec = importlib.util.spec_from_file_location("check_math", ROOT / "scripts" / "check_math.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("defect", ["prose", "ledger id", "ledger id without underscore", "nested", "eaten backslash",
                                    "control"])
def test_math_check_catches_each_defect_class(defect):
    m = _check_math()
    assert m.page_problems(f"<html><body><p>ok</p>{m.BROKEN[defect]}</body></html>")


def test_math_check_self_test_covers_every_defect_class():
    assert _check_math().self_test() == []


def test_math_check_passes_clean_formulas():
    m = _check_math()
    good = [r"\(\mathrm{Tr}(QAQ^T)\)", r"\(\ker(I + A) = \{0\},\ \text{so } I + A \text{ is invertible}\)",
            r"\[\tilde\Lambda = \mathbb{I}_{2d}\otimes\Lambda\ \text{in the } q/p \text{ rearrangement}\]",
            r"\(\sin x + \cos y\)", r"\(I \pm A\ \text{invertible (cayley.well_defined)}\)"]
    for tex in good:
        assert m.formula_problems(tex) == [], tex


def _public_docstrings():
    import importlib
    import inspect
    import pkgutil

    import geoattn

    for info in pkgutil.walk_packages(geoattn.__path__, "geoattn."):
        if info.name.endswith("__main__"):  # importing it runs the command line
            continue
        mod = importlib.import_module(info.name)
        yield info.name, mod.__doc__
        for name, obj in vars(mod).items():
            if getattr(obj, "__module__", None) != info.name or name.startswith("__"):
                continue
            yield f"{info.name}.{name}", getattr(obj, "__doc__", None)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    yield f"{info.name}.{name}.{attr}", getattr(member, "__doc__", None)


def test_no_control_characters_in_docstrings():
    """A backslash lost in a non-raw docstring turns ``\\tfrac12`` into a TAB and ``frac12`` on the page."""
    import re

    bad = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\t]")
    found = [name for name, doc in _public_docstrings() if isinstance(doc, str) and bad.search(doc)]
    assert found == []

    def control():
        """The weight \tfrac12."""  # noqa: the negative control: a non-raw docstring with a lost backslash

    assert bad.search(control.__doc__)


def test_no_control_characters_in_claims_or_sources():
    """A lost backslash in any string (``"\\frac"`` written without ``r``) leaves a form feed in a claim's LaTeX:
    no claim field and no source file may hold a control character."""
    import re
    from pathlib import Path

    from geoattn.symbolic import all_claims

    bad = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
    fields = ("title", "statement", "latex", "source", "notes")
    assert [c.id for c in all_claims() if any(bad.search(getattr(c, f) or "") for f in fields)] == []
    root = Path(__file__).resolve().parent.parent
    files = [p for d in ("geoattn", "tests", "scripts", "benchmarks", "examples", "docs") for p in (root / d).rglob("*")
             if p.suffix in (".py", ".md") and "_build" not in p.parts and "auto_examples" not in p.parts]
    assert [str(p) for p in files if bad.search(p.read_text())] == []
    assert bad.search("I + \frac{2}{3}")  # the negative control: a non-raw "\frac" is a form feed


def _escaped_docstrings(source: str, filename: str = "<src>") -> list[str]:
    """Docstrings written as non-raw literals with a backslash before a letter (``\\nabla`` is a newline and
    ``abla``, ``\\tfrac`` a TAB): they must be raw strings."""
    import ast
    import re

    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                seg = ast.get_source_segment(source, first.value) or ""
                prefix = re.match(r"[A-Za-z]*", seg).group(0).lower()
                if "r" not in prefix and re.search(r"(?<!\\)(?:\\\\)*\\[A-Za-z]", seg):
                    found.append(f"{filename}:{first.lineno}")
    return found


def test_docstrings_with_backslash_escapes_are_raw():
    found = []
    for path in sorted((ROOT / "geoattn").rglob("*.py")) + sorted((ROOT / "examples").glob("*.py")):
        found += _escaped_docstrings(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []
    # negative controls: a non-raw \nabla and \tfrac are caught; raw strings and doubled backslashes are not
    assert _escaped_docstrings('def f():\n    """grad \\nabla f"""\n') == ["<src>:2"]
    assert _escaped_docstrings('"""weight \\tfrac12"""\n') == ["<src>:1"]
    assert _escaped_docstrings('def f():\n    r"""grad \\nabla f"""\n') == []
    assert _escaped_docstrings('def f():\n    """grad \\\\nabla f"""\n') == []


def _browser_check():
    spec = importlib.util.spec_from_file_location("browser_check", ROOT / "scripts" / "browser_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("tex", [r"\mathrm{matrix_softmax}(C)", r"\Sigma = matrix_{softmax}", r"C_ij",
                                 r"\mathtt{vp_lowrank}(x) = y", r"\text{depends on } C_ij"])
def test_browser_check_catches_underscore_identifiers_in_math(tex):
    assert _browser_check().math_source_problems(tex), tex


@pytest.mark.parametrize("tex", [r"\texttt{matrix_softmax}", r"\texttt{matrix\_softmax}(C)", r"\sum_{m,k} e^{C_{mk}}",
                                 r"C_{ij}", r"\mathtt{n\_heads}", r"Z_\mathrm{vec}^T", r"\mathrm{tril}_{-1}(C)",
                                 r"\text{only the term of column } j", r"x_1 + \bar a_{1i}q^{(i)}", r"P_iP_i^T = I",
                                 r"\sum_{i=1}^Tp^{(1)}_iz^{(i)}", r"[\nabla_QF]_{ab}", r"P^V_iZ\in\mathbb{R}"])
def test_browser_check_passes_clean_subscripts(tex):
    assert _browser_check().math_source_problems(tex) == [], tex


def _claims_extension():
    import sys

    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    import geoattn_claims

    return geoattn_claims


def test_rule_text_keeps_prose_out_of_math():
    """A step's justification: prose as text, formulas as math, identifiers as code; every formula typesets
    cleanly by the math checks (no prose, no underscore identifier)."""
    import re

    from docutils import nodes

    ext = _claims_extension()
    rules = ["matrix_softmax: differentiate f in one entry of a generic T x T matrix (only the term of column j "
             "depends on C_ij)", "transpose reverses products; A^T = -A",
             r"step 3 at t=1: the map is the time-1 flow of V on all of \mathbb{R}^{d\times T}",
             r"\mathrm{Cayley}(C) is orthogonal for skew C (cayley.orthogonal)",
             "chain rule with Cbar = cayley_vjp(I + QWQ^T, QR Gy^T), x = QR", "_exp_frechet_blocks with X = -S",
             r"\delta Z=e_af_i^T; \sum_{a,i}[X]_{ai}[Y]_{ai}=\mathrm{Tr}(X^TY)",
             r"x^T x = \sum_i x_i^2 = 0 forces x = 0 for real x", r"\sum_{i=1}^{\mathtt{n\_heads}} m"]
    check_math, browser = _check_math(), _browser_check()
    for rule in rules:
        parts = ext.rule_nodes(rule)
        squeeze = lambda t: re.sub(r"\s+|\\times|\bx\b|[{}]", "", t)  # noqa: E731 (spaces, braces, products)
        assert squeeze("".join(p.astext() for p in parts)) == squeeze(rule)  # nothing lost or reordered
        for p in parts:
            if isinstance(p, nodes.math):
                tex = rf"\({p.astext()}\)"
                assert check_math.formula_problems(tex) == [] and browser.math_source_problems(p.astext()) == [], tex
            elif isinstance(p, nodes.Text):
                assert "\\" not in p.astext(), (rule, p)
    codes = [p.astext() for r in rules for p in ext.rule_nodes(r) if isinstance(p, nodes.literal)]
    assert codes == ["matrix_softmax", "cayley.orthogonal", "cayley_vjp", "_exp_frechet_blocks"]
    first = ext.rule_nodes(rules[0])
    assert isinstance(first[0], nodes.literal) and first[0].astext() == "matrix_softmax"
    assert [p.astext() for p in first if isinstance(p, nodes.math)] == ["f", "T\\times T", "j", "C_{ij}"]
    assert [(type(p), p.astext()) for p in ext.rule_nodes(rules[1])] == [
        (nodes.Text, "transpose reverses products; "), (nodes.math, "A^T = -A")]
    # a rule that marks its formulas: only the marked parts are math
    marked = ext.rule_nodes(r"transpose reverses products; $A^T = -A$ costs \$1 x_1")
    assert [type(n) for n in marked] == [nodes.Text, nodes.math, nodes.Text]
    assert marked[2].astext() == " costs $1 x_1"
    assert ext.rule_nodes("") == []


def test_text_group_underscores_escaped():
    esc = _claims_extension().escape_text_underscores
    assert esc(r"\text{see vp.map_x} a_b \texttt{n\_heads} \mathrm{x_y}") == \
        r"\text{see vp.map\_x} a_b \texttt{n\_heads} \mathrm{x_y}"


# --- the browser rules on small pages (skipped where no Chromium driver is installed) ---

LEDGER_ROW = ('<tr class="claim-row"><td><code class="geoattn-claim-id">{id}</code></td>'
              '<td><strong class="geoattn-verdict">{verdict}</strong></td>'
              '<td><div class="geoattn-statement">x = y</div></td></tr>')


def _ledger_page(rows, style=""):
    body = "".join(LEDGER_ROW.format(id=i, verdict=v) for i, v in rows)
    return (f"<html><head><style>body {{ margin: 0 }} article {{ width: 700px; margin: 0 auto }} {style}</style>"
            f'</head><body><article><div class="table-wrapper" style="overflow-x: auto">'
            f'<table class="geoattn-ledger"><tbody>{body}</tbody></table></div></article></body></html>')


@pytest.fixture(scope="module")
def browser():
    import shutil

    pytest.importorskip("selenium")
    if not shutil.which("chromedriver") and not Path("/usr/bin/chromedriver").exists():
        pytest.skip("no chromedriver (Debian: apt-get install chromium chromium-driver)")
    bc = _browser_check()
    d = bc.driver()
    yield bc, d
    d.quit()


def _rules(browser, tmp_path, html, claim_ids=None):
    bc, d = browser
    page = tmp_path / "page.html"
    page.write_text(html)
    return {rule for rule, _ in bc.check_page(d, page, claim_ids)}


def test_browser_overflow_rule(browser, tmp_path):
    clean = ('<html><body><article style="width: 600px"><h1 style="margin: 0 -8px">Title</h1><p>text</p>'
             '<div style="overflow-x: auto"><div style="width: 2000px">scrolls in its own box</div></div>'
             '</article></body></html>')
    assert _rules(browser, tmp_path, clean) == set()
    wide_block = clean.replace("<p>text</p>", '<div style="width: 900px">wider than its column</div>')
    assert "overflow-block" in _rules(browser, tmp_path, wide_block)
    wide_text = clean.replace("<p>text</p>", '<p style="white-space: nowrap">' + "no wrap " * 200 + "</p>")
    assert "overflow-block" in _rules(browser, tmp_path, wide_text)
    wide_page = clean.replace("</article>", '</article><div style="width: 300vw; height: 1px"></div>')
    assert _rules(browser, tmp_path, wide_page) == {"overflow-page"}


def test_browser_verdict_rule(browser, tmp_path):
    ids = ["a.one", "a.two"]
    assert _rules(browser, tmp_path, _ledger_page([("a.one", "proved"), ("a.two", "refuted")]), ids) == set()
    missing = _ledger_page([("a.one", "proved")])
    assert _rules(browser, tmp_path, missing, ids) == {"verdict"}
    unknown = _ledger_page([("a.one", "proved"), ("a.two", "maybe")])
    assert _rules(browser, tmp_path, unknown, ids) == {"verdict"}
    pushed = _ledger_page([("a.one", "proved"), ("a.two", "refuted")], "td:first-child { min-width: 1500px }")
    assert _rules(browser, tmp_path, pushed, ids) == {"verdict"}
    invisible = _ledger_page([("a.one", "proved"), ("a.two", "refuted")], ".geoattn-verdict { visibility: hidden }")
    assert _rules(browser, tmp_path, invisible, ids) == {"verdict"}

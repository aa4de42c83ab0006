"""Claims of one's own: ``geoattn prove --claims PATH``, the public engine, and levels a checker cannot declare."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import sympy as sp

from geoattn import symbolic
from geoattn.cli import main
from geoattn.symbolic import Claim, Derivation, Evidence, Level, Step
from geoattn.symbolic.user import UserClaimsError, load_claims

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "my_claims.py")


def _fresh_checkout(dest: str) -> str:
    """The package and the example as a clone has them: the files git tracks (and new ones it does not ignore),
    without build outputs or an installed copy."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "geoattn", "examples/my_claims.py",
                                 "pyproject.toml"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for rel in listed.split():
        if not os.path.exists(os.path.join(ROOT, rel)):
            continue  # deleted in the work tree
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))
    return dest


def test_prove_claims_runs_the_example_from_a_fresh_checkout(tmp_path):
    clone = _fresh_checkout(str(tmp_path / "clone"))
    out_json = str(tmp_path / "mine.json")
    env = {**os.environ, "PYTHONPATH": clone}
    proc = subprocess.run([sys.executable, "-m", "geoattn.cli", "prove", "--claims", "examples/my_claims.py",
                           "--json", out_json, "-q"], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 claims in" in proc.stdout and "proved 2, refuted 2" in proc.stdout
    assert "5 steps: 4 verified, 1 lemmas (jacobi_formula)" in proc.stdout
    ledger = json.load(open(out_json))
    by_id = {c["id"]: c for c in ledger["claims"]}
    assert {k: v["verdict"] for k, v in by_id.items()} == {
        "mine.cayley_symmetric": "proved", "mine.vp_symmetric": "refuted",
        "mine.vp_symmetric.exp": "refuted", "mine.det_exp": "proved"}
    assert by_id["mine.det_exp"]["derivation"]["lemma_names"] == ["jacobi_formula"]
    assert by_id["mine.cayley_symmetric"]["derivation"]["n_verified"] == 2
    for cid in ("mine.vp_symmetric", "mine.vp_symmetric.exp"):
        ce = by_id[cid]["counterexample"]
        assert ce["sizes"] == {"d": 1, "T": 2} and ce["residual_abs_max"] > 0
    # the exponential counterexample is exact: a rational function of e^q, not a float
    assert "exp(" in by_id["mine.vp_symmetric.exp"]["counterexample"]["residual"]
    # the copy ran, not the installed package
    probe = subprocess.run([sys.executable, "-c", "import geoattn; print(geoattn.__file__)"], cwd=clone, env=env,
                           capture_output=True, text=True)
    assert probe.stdout.strip().startswith(clone)


def test_exponential_counterexample_is_exact_and_reproducible():
    claim = {c.id: c for c in load_claims(EXAMPLE)}["mine.vp_symmetric.exp"]
    ce = claim.check().counterexample
    assert ce.residual.has(sp.exp) and sp.simplify(ce.residual) != 0
    again = claim.checker.identity.evaluate(ce.sizes, ce.values)
    assert sp.simplify(again - ce.residual) == 0
    # the exact residual agrees with det J - 1 of the same map in float64 (torch's matrix_exp and autograd)
    import torch

    z = torch.tensor([[float(x) for x in row] for row in ce.values["Z"].tolist()], dtype=torch.float64)
    a = torch.tensor([[float(x) for x in row] for row in ce.values["A"].tolist()], dtype=torch.float64)

    def layer(v):
        w = v.reshape(z.shape)
        return (w @ torch.linalg.matrix_exp(w.T @ a @ w)).reshape(-1)

    jac = torch.autograd.functional.jacobian(layer, z.reshape(-1))
    tol = 64 * jac.numel() * torch.finfo(torch.float64).eps * max(1.0, float(jac.abs().max()) ** 2)
    assert abs(float(torch.linalg.det(jac) - 1) - float(ce.residual)) <= tol


def _write(tmp_path, body: str, name: str = "claims_x.py") -> str:
    path = tmp_path / name
    path.write_text(body)
    return str(path)


_HEADER = textwrap.dedent("""
    import sympy as sp
    from geoattn.symbolic import Claim, Derivation, Evidence, Level, Step
    """)


def test_a_checker_cannot_label_its_own_result_proved(tmp_path, capsys):
    path = _write(tmp_path, _HEADER + textwrap.dedent("""
    CLAIMS = [Claim(id="mine.trust_me", title="t", statement="s", latex="x", source="test", expected=Level.PROVED,
                    checker=lambda ctx: [Evidence(Level.PROVED, "trust me")])]
    """))
    verdict = load_claims(path)[0].check()
    assert verdict.level is Level.ERROR
    assert "proved not earned" in verdict.error and "Expected proved evidence to carry a Derivation" in verdict.error
    assert main(["prove", "--claims", path]) == 1
    err = capsys.readouterr().err
    assert "mine.trust_me: expected proved, got error" in err


def test_a_checker_with_a_lambda_true_step_is_not_proved(tmp_path):
    path = _write(tmp_path, _HEADER + textwrap.dedent("""
    x = sp.Symbol("x")
    deriv = Derivation(steps=[Step(x, 2 * x, "obvious", lambda: True)], conclusion=sp.Eq(x, 2 * x, evaluate=False))
    CLAIMS = [Claim(id="mine.obvious", title="t", statement="s", latex="x", source="test", expected=Level.PROVED,
                    checker=lambda ctx: [Evidence(Level.PROVED, "derivation", derivation=deriv)])]
    """))
    verdict = load_claims(path)[0].check()
    assert verdict.level is Level.ERROR and "zero-argument callable" in verdict.error


def test_a_refutation_needs_an_exactly_nonzero_residual():
    from geoattn.symbolic import Counterexample

    fake = Counterexample(seed=None, sizes={}, values={}, residual_name="r", residual=sp.Integer(0))
    claim = Claim(id="mine.fake_refute", title="t", statement="s", latex="x", source="test", expected=Level.REFUTED,
                  checker=lambda ctx: [Evidence(Level.REFUTED, "made up", counterexample=fake)])
    verdict = claim.check()
    assert verdict.level is Level.ERROR and "exactly nonzero residual" in verdict.error


def test_a_wrong_expectation_exits_1(tmp_path, capsys):
    tail = '\n        checker=Policy(identity=layer_identity("cayley")'
    source = open(EXAMPLE).read().replace("expected=Level.REFUTED," + tail, "expected=Level.PROVED," + tail)
    assert source != open(EXAMPLE).read()
    path = _write(tmp_path, source, "my_claims_wrong.py")
    assert main(["prove", "--claims", path, "mine.vp_symmetric", "-q"]) == 1
    assert "mine.vp_symmetric: expected proved, got refuted" in capsys.readouterr().err


@pytest.mark.parametrize(
    "body, message",
    [
        ("X = 1\n", "Expected"),
        (_HEADER + "CLAIMS = [1]\n", "to be a Claim. Got int"),
        (_HEADER + "C = Claim(id='mine.a', title='t', statement='s', latex='x', source='s', expected=Level.PROVED,"
                   " checker=lambda ctx: [])\nCLAIMS = [C, C]\n", "Got 'mine.a' twice"),
        (_HEADER + "CLAIMS = [Claim(id='mine.b', title='t', statement='s', latex='x', expected=Level.PROVED,"
                   " checker=lambda ctx: [])]\n", "to name its source"),
        (_HEADER + "CLAIMS = [Claim(id='cayley.orthogonal', title='t', statement='s', latex='x', source='s',"
                   " expected=Level.PROVED, checker=lambda ctx: [])]\n", "which are ledger ids"),
    ],
)
def test_bad_claim_files_exit_2_with_a_message(tmp_path, capsys, body, message):
    path = _write(tmp_path, body)
    with pytest.raises(UserClaimsError, match=message):
        load_claims(path)
    assert main(["prove", "--claims", path]) == 2
    err = capsys.readouterr().err
    assert "Expected" in err and "Got" in err


def test_bad_paths_and_ids_exit_2(tmp_path, capsys):
    assert main(["prove", "--claims", str(tmp_path / "missing.py")]) == 2
    assert "Expected an existing Python file" in capsys.readouterr().err
    assert main(["prove", "--claims", "no_such_module_xyz"]) == 2
    assert "Expected an importable module name" in capsys.readouterr().err
    assert main(["prove", "--claims", EXAMPLE, "mine.nope"]) == 2
    assert "Got ['mine.nope']" in capsys.readouterr().err


def test_claims_by_module_name_and_list(monkeypatch, capsys):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "examples"))
    assert main(["prove", "--claims", "my_claims", "--list"]) == 0
    out = capsys.readouterr().out
    assert "mine.det_exp" in out and "my_claims" in out


def test_public_api_names_what_a_claim_needs():
    for name in ("Policy", "MatrixIdentity", "Derivation", "Step", "identity", "in_algebra", "relation", "at_sizes",
                 "grid", "LEMMAS", "load_claims"):
        assert name in symbolic.__all__ and getattr(symbolic, name) is not None
    for name in ("skew", "symmetric", "general", "cayley", "expm", "jacobian_rows", "Dual", "MatExp"):
        assert name in symbolic.algebra.__all__
    assert "jacobi_formula" in symbolic.LEMMAS and symbolic.LEMMAS["jacobi_formula"].reference

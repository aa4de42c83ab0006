"""The source tree's form: no module of the package over 450 lines (generated ones split by job too), and no
control characters in text files (a tab or backspace in Python source is usually a TeX command such as \\text or
\\beta written in a string that is not raw)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 450
#: the one module over the limit, generated before the limit was set: the torch kernels, imported as one table by
#: the runtime (``from . import _generated as gen``); splitting it by job needs the generator and its importers
#: changed together
KNOWN_LONG = {"geoattn/kernels/_generated.py"}
TEXT = (".py", ".md", ".c", ".sh", ".js", ".css", ".toml", ".cfg", ".txt", ".rst", ".bib")
CONTROL = re.compile(r"[\x08\x09\x0b\x0c]")


def tracked(*suffixes: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / p for p in out if p.endswith(suffixes)]


def control_characters(text: str) -> list[tuple[int, str]]:
    """``(line, repr of the line)`` for each line holding a tab, backspace, vertical tab or form feed."""
    # split on newlines only: str.splitlines would also split at the form feed and vertical tab it looks for
    return [(i, repr(line)) for i, line in enumerate(text.split("\n"), 1) if CONTROL.search(line)]


def test_no_module_over_450_lines():
    long = {str(p.relative_to(ROOT)): n for p in tracked(".py") if p.parts[len(ROOT.parts)] == "geoattn"
            for n in [len(p.read_text().splitlines())] if n > MAX_LINES}
    long = {k: v for k, v in long.items() if k not in KNOWN_LONG}
    assert long == {}, f"Expected modules of geoattn of at most {MAX_LINES} lines. Got {long}."


def test_no_control_characters_in_text_files():
    found = {str(p.relative_to(ROOT)): hits for p in tracked(*TEXT) if p.name != "Makefile"
             for hits in [control_characters(p.read_text(errors="replace"))] if hits}
    assert found == {}, f"Expected no tab, backspace or form feed in text files. Got {found}."


def test_negative_control_the_checks_see_what_they_look_for():
    # a TeX command in a string that is not raw: "\text" holds a tab, "\beta" a backspace
    assert control_characters('remark = f"x \\ \text{ok}"\nok = 1\n') == [(1, repr('remark = f"x \\ \text{ok}"'))]
    assert control_characters("a = '\beta'") and control_characters("\f") and not control_characters(r"\text")


def test_no_test_changes_torchs_thread_count_in_process():
    """``torch.set_num_threads`` inside the test process derails MKL's threaded LU of large matrices for the rest
    of the run (torch 2.13: "Parameter 6 was incorrect on entry to DLASWP", then a spin that never returns); a test
    that compares thread splits replaces ``geoattn.kernels._native._threads`` instead. Subprocess workers may set
    it."""
    here = Path(__file__).resolve().parent
    offenders = [p.name for p in here.glob("test_*.py")
                 if p.name != Path(__file__).name and "set_num_threads(" in p.read_text()]
    assert offenders == [], offenders

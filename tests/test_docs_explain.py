"""The architecture page's example of ``explain()`` is the one the dispatch table prints: the same routes in the same
order, the same one taken (the reasons may differ where a backend is not installed)."""

import pathlib
import re

import pytest
import torch

from geoattn import kernels
from geoattn.kernels._native import native_status

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _rows(text: str) -> list[tuple[bool, str]]:
    """(taken, route) of each row of an ``explain()`` table."""
    return [(line.startswith("->"), line[3:].split()[0]) for line in text.splitlines()[1:] if line.strip()]


def test_the_architecture_page_shows_what_explain_prints():
    if not native_status(4, torch.float32)[0]:
        pytest.skip("the page's example is for a machine where the C kernels build")
    block = re.search(r"```text\n(vp_attention\n.*?)```", PAGE.read_text(), re.S)
    assert block is not None, "Expected an explain() example in docs/architecture.md. Got none."
    x = torch.randn(64, 16, 4)
    A = torch.randn(4, 4)
    A = A - A.T
    assert _rows(block.group(1)) == _rows(str(kernels.explain("vp_attention", x, A)))


def test_the_comparison_sees_a_missing_route():  # negative control
    x = torch.randn(64, 16, 4)
    A = torch.randn(4, 4)
    A = A - A.T
    text = str(kernels.explain("vp_attention", x, A))
    lines = text.splitlines()
    assert _rows("\n".join(lines[:2] + lines[3:])) != _rows(text)

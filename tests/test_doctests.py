"""The examples in the public docstrings run and show what they claim."""

import doctest

import pytest

import geoattn.kernels
import geoattn.symbolic


@pytest.mark.parametrize("module", [geoattn.kernels, geoattn.symbolic])
def test_docstring_examples(module):
    result = doctest.testmod(module, verbose=False)
    assert result.attempted > 0 and result.failed == 0

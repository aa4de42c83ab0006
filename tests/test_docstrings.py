"""The shared docstring passages (geoattn._docstrings) are filled in wherever a public class marks them."""

import inspect

import pytest

import geoattn.models
import geoattn.nn
from geoattn._docstrings import PASSAGES, fill_doc


def unfilled_marks(module) -> list[str]:
    """Public classes of ``module`` whose docstring still holds a ``{{name}}`` mark."""
    return [name for name, obj in vars(module).items()
            if inspect.isclass(obj) and not name.startswith("_") and "{{" in (obj.__doc__ or "")]


@pytest.mark.parametrize("module", [geoattn.nn, geoattn.models])
def test_no_public_class_keeps_a_mark(module):
    assert unfilled_marks(module) == []


def test_a_mark_left_unfilled_is_found():
    class Layer:
        """A layer.

        Parameters
        ----------
        {{device_dtype}}
        """

    fake = type(geoattn)("fake")
    fake.Layer = Layer
    assert unfilled_marks(fake) == ["Layer"]
    fill_doc(Layer)
    assert unfilled_marks(fake) == []


def test_the_passage_takes_the_mark_indentation():
    @fill_doc
    class Layer:
        """A layer.

        Parameters
        ----------
        dim : int
        {{device_dtype}}
        """

    lines = inspect.cleandoc(Layer.__doc__).splitlines()
    assert lines[-3:] == ["dim : int", "device, dtype :", "    of the parameters."]
    assert inspect.cleandoc(Layer.__doc__).endswith(PASSAGES["device_dtype"])


def test_the_filled_docstrings_read_as_before():
    doc = inspect.cleandoc(geoattn.nn.MultiHeadAttention.__doc__)
    assert PASSAGES["dropout"] + "\n" + PASSAGES["device_dtype"] in doc
    assert "device, dtype :\n    of the parameters." in inspect.cleandoc(geoattn.models.SympNet.__doc__)


def test_an_unknown_mark_is_refused_naming_both_sides():
    class Layer:
        """{{devices}}"""

    with pytest.raises(KeyError, match=r"Expected a docstring mark naming one of .*device_dtype.*Got \{\{devices\}\}"):
        fill_doc(Layer)

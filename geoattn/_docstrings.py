"""Docstring passages that many public classes share, written once and filled in at import.

A line of a docstring that holds only ``{{name}}`` (indented like its neighbours) stands for the
passage ``name`` of :data:`PASSAGES`, indented the same. The runtime imports this module, so it
imports nothing but the standard library.
"""

from __future__ import annotations

import re

__all__ = ["PASSAGES", "fill_doc"]

#: passage name -> its text (lines after the first indented by four spaces, numpydoc style)
PASSAGES = {
    "device_dtype": "device, dtype :\n    of the parameters.",
    "dropout": "dropout : float\n    probability of zeroing an attention weight in training mode.",
}

_MARK = re.compile(r"^([ \t]*)\{\{(\w+)\}\}[ \t]*$", re.MULTILINE)


def fill_doc(obj):
    """Replace every ``{{name}}`` line of ``obj.__doc__`` by the passage ``name``; return ``obj`` (a decorator).

    Parameters
    ----------
    obj : class or function
        whose docstring is filled in place.

    Returns
    -------
    class or function
        ``obj`` itself.

    Raises
    ------
    KeyError
        when a mark names no passage.

    Examples
    --------
    >>> @fill_doc
    ... class Layer:
    ...     '''A layer.
    ...
    ...     Parameters
    ...     ----------
    ...     {{device_dtype}}
    ...     '''
    >>> print(Layer.__doc__.splitlines()[-2])
            of the parameters.
    """

    def passage(match: re.Match) -> str:
        indent, name = match.group(1), match.group(2)
        if name not in PASSAGES:
            raise KeyError(f"Expected a docstring mark naming one of {sorted(PASSAGES)}. Got {{{{{name}}}}} in "
                           f"{getattr(obj, '__qualname__', obj)!r}.")
        return "\n".join(indent + line for line in PASSAGES[name].split("\n"))

    if obj.__doc__:
        obj.__doc__ = _MARK.sub(passage, obj.__doc__)
    return obj

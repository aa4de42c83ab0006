"""Sphinx configuration of the geoattn site (builds offline; MathJax is served locally)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "_ext"))

project = "geoattn"
author = "geoattn contributors"
copyright = "2026, geoattn contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "sphinx_proof",
    "sphinxcontrib.bibtex",
    "geoattn_claims",
]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
bibtex_bibfiles = ["references.bib"]
bibtex_reference_style = "author_year"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
html_theme = "furo"
html_title = "geoattn"
exclude_patterns = ["_build", "README.md"]
nitpicky = False

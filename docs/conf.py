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
    "geoattn_results",
    "sphinx_gallery.gen_gallery",
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
html_static_path = ["_static"]
html_css_files = ["geoattn.css"]
html_js_files = ["geoattn-ledger.js"]
# textmacros: underscores and other text-mode macros inside \text{} and \texttt{} (``\texttt{matrix\_softmax}``)
mathjax3_config = {"loader": {"load": ["[tex]/textmacros"]}, "tex": {"packages": {"[+]": ["textmacros"]}}}
exclude_patterns = ["_build", "README.md", "_generated", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]

# Examples gallery: scripts named plot_*.py run during the build (seconds each); the experiment
# scripts are shown with their source only (they train for minutes; their output is on the
# experiments page).
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(HERE, "..", "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"(__init__|_common)\.py",
    "download_all_examples": False,
    "show_signature": False,
    "remove_config_comments": True,
    "image_scrapers": ("matplotlib",),
    "write_computation_times": False,  # its page loads jQuery/DataTables from a CDN
}
suppress_warnings = ["config.cache"]
nitpicky = False
viewcode_follow_imported_members = False  # a name imported into a package links to the source where it is defined

"""Sphinx configuration of the sklearn-ilargi documentation.

Build with ``python -m sphinx -W --keep-going -b html doc doc/_build/html`` after
``pip install ".[doc]"``. The build needs no network: intersphinx is not used.
"""

import os
import shutil
import sys

DOC = os.path.dirname(os.path.abspath(__file__))
# autosummary rewrites the stub pages of the names it lists but never removes one: start afresh,
# so that the stub of a name that left the API cannot linger and fail the build.
shutil.rmtree(os.path.join(DOC, "generated"), ignore_errors=True)
sys.path.insert(0, os.path.dirname(DOC))  # document the working tree being built
sys.path.insert(0, os.path.join(DOC, "_ext"))

import sklearn_ilargi  # noqa: E402  (from the working tree, as the line above arranges)

project = "sklearn-ilargi"
author = "the sklearn-ilargi developers"
copyright = "the sklearn-ilargi developers"
release = sklearn_ilargi.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "ilargi_sphinx",
]

templates_path = ["_templates"]
exclude_patterns = ["_build"]
default_role = "literal"

# API reference: one stub page per public name, written by autosummary at build time.
autosummary_generate = True
# Members inherited from this package's own base classes are listed; scikit-learn's are left to
# its documentation (doc/_ext/ilargi_sphinx.py), and so are Python's exceptions'.
autodoc_default_options = {"members": True, "inherited-members": "BaseException"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-ilargi {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_show_sourcelink = False

# The gallery: every script of examples/ runs at build time, the quickstart first.
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(os.path.dirname(DOC), "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"\.py$",
    "within_subsection_order": "ilargi_sphinx.ExampleOrder",
    "image_scrapers": (),
    "reset_modules": (),
    "download_all_examples": False,
    # The pages show what the examples print, not how long they took on the build machine.
    "min_reported_time": float("inf"),
    "write_computation_times": False,
    "doc_module": ("sklearn_ilargi",),
    "backreferences_dir": os.path.join("generated", "backreferences"),
}

"""What the doctests of the package need beyond the required dependencies.

``python -m pytest sklearn_ilargi`` runs the examples of every docstring too
(``--doctest-modules`` in ``pyproject.toml``). Two modules need optional packages: the CuPy
backend imports CuPy when it is imported, and its examples need a GPU; the TPC-H examples
generate tables with tpchgen-cli (the ``datasets`` extra). Without them, the CuPy backend is
not collected and the TPC-H examples are skipped with the reason.

The property-based tests draw new random examples on every run, so that each run explores
cases the others did not. Where the ``CI`` environment variable is set (``.ci/run`` sets it),
they draw the same examples every time (hypothesis' ``derandomize``): a landing does not
depend on the draw, and a failure it reports is reproduced by running the suite again.
"""

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from sklearn_ilargi.backend import gpu_available
from sklearn_ilargi.datasets._tpch import GENERATOR_MISSING, generator_path

TPCH_LOADER = Path(__file__).parent / "datasets" / "_tpch.py"

collect_ignore = [] if gpu_available() else ["backend/_cupy.py"]


def pytest_collection_modifyitems(config, items):
    if generator_path() is not None:
        return
    for item in items:
        if Path(item.path) == TPCH_LOADER:
            item.add_marker(pytest.mark.skip(reason=GENERATOR_MISSING))

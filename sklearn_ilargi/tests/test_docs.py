"""The documentation in ``doc/``: every public name in the API reference, settings from the code.

The Sphinx build itself (``python -m sphinx -W --keep-going -b html doc <dir>``, in
``.ci/run``) checks the rest: that every page renders without a warning and that the gallery's
examples run.
"""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import sklearn_ilargi
from sklearn_ilargi._config import OPTIONS
from sklearn_ilargi.tests.test_docstrings import MEASURED_FIGURE, measured_figures

ROOT = Path(sklearn_ilargi.__file__).parent.parent
DOC = ROOT / "doc"
pytestmark = pytest.mark.skipif(not (DOC / "api.rst").exists(),
                                reason="needs the source tree's doc/ folder")


def public_modules():
    """The package and its subpackages whose names have no leading underscore (tests aside)."""
    names = ["sklearn_ilargi"]
    for info in pkgutil.walk_packages(sklearn_ilargi.__path__, "sklearn_ilargi."):
        parts = info.name.split(".")[1:]
        if info.ispkg and not any(part.startswith("_") or part == "tests" for part in parts):
            names.append(info.name)
    return names


def autosummary_entries(text):
    """``(module, name)`` of every entry of the autosummary tables of reStructuredText ``text``.

    The module is the one the latest ``currentmodule`` directive names.
    """
    module, in_table = None, False
    for line in text.splitlines():
        directive = re.match(r"\.\. currentmodule:: (\S+)$", line)
        if directive:
            module = directive.group(1)
        elif line.startswith(".. autosummary::"):
            in_table = True
        elif in_table and line.strip() and not line.startswith(" "):
            in_table = False
        elif in_table and line.strip() and not line.strip().startswith(":"):
            yield module, line.strip()


def documented_objects():
    """``{id(object): qualified name}`` of the objects the API reference lists."""
    documented = {}
    for module, name in autosummary_entries((DOC / "api.rst").read_text(encoding="utf-8")):
        obj = getattr(importlib.import_module(module), name, None)
        assert obj is not None, f"doc/api.rst lists {module}.{name}, which does not exist."
        qualified = f"{module}.{name}"
        assert id(obj) not in documented, (
            f"doc/api.rst lists one object twice: {documented.get(id(obj))} and {qualified}.")
        documented[id(obj)] = qualified
    return documented


def test_the_autosummary_entries_are_read():
    text = """
.. currentmodule:: pkg

.. autosummary::
   :toctree: generated/

   First
   second

Prose after the table.

.. currentmodule:: pkg.sub

.. autosummary::

   third
"""
    assert list(autosummary_entries(text)) == [
        ("pkg", "First"), ("pkg", "second"), ("pkg.sub", "third")]


@pytest.mark.parametrize("module_name", public_modules())
def test_every_public_name_is_in_the_api_reference(module_name):
    module = importlib.import_module(module_name)
    assert hasattr(module, "__all__"), f"The public module {module_name} has no __all__."
    documented = documented_objects()
    missing = [name for name in module.__all__
               if id(getattr(module, name)) not in documented]
    assert not missing, (f"Add to doc/api.rst, under `.. currentmodule:: {module_name}` or "
                         f"where the object is already listed: {missing}")


def test_the_settings_page_is_generated_from_the_options():
    pytest.importorskip("sphinx")
    import sys

    sys.path.insert(0, str(DOC / "_ext"))
    try:
        ilargi_sphinx = importlib.import_module("ilargi_sphinx")
    finally:
        sys.path.remove(str(DOC / "_ext"))
    table = "\n".join(ilargi_sphinx.settings_table(OPTIONS))
    for name, option in OPTIONS.items():
        assert f"``{name}``" in table and option.doc in table, name
    assert ".. ilargi-settings::" in (DOC / "settings.rst").read_text(encoding="utf-8")


#: Folders of doc/ that the build writes (doc/.gitignore): not sources.
BUILT = {"_build", "generated", "auto_examples"}


def _doc_sources():
    pages = [p for p in DOC.rglob("*.rst") if not BUILT & set(p.relative_to(DOC).parts)]
    return sorted(pages) + sorted((ROOT / "examples").glob("*.rst"))


@pytest.mark.parametrize("path", _doc_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_measured_figures_in_the_pages(path):
    found = [m.group(0) for m in MEASURED_FIGURE.finditer(path.read_text(encoding="utf-8"))]
    assert not found, (f"{path.relative_to(ROOT)} quotes measured figures {found}; they belong "
                       "in benchmarks/results/ (the design notes point there).")


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.py")),
                         ids=lambda p: p.name)
def test_no_measured_figures_in_the_examples(path):
    found = list(measured_figures(path.read_text(encoding="utf-8")))
    assert not found, f"examples/{path.name} quotes measured figures: {found}"


def test_the_old_markdown_pages_are_gone():
    assert not list(DOC.glob("*.md")), "doc/ is reStructuredText; the .md pages moved there."

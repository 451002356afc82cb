"""Docstrings: every public name documented with examples, and no measured figures.

The examples themselves run as doctests (``--doctest-modules`` in ``pyproject.toml``).

Measured times and speed-ups belong in the benchmarks' results (``benchmarks/``), not in the
code: they are true of one machine on one day. A docstring or comment keeps the reason for a
choice in words, and names the benchmark that measures it.
"""

import importlib
import inspect
import io
import re
import tokenize
from pathlib import Path

import pytest

import sklearn_ilargi
from sklearn_ilargi import NormalizedMatrix

PUBLIC_MODULES = (
    "sklearn_ilargi",
    "sklearn_ilargi.linear_model",
    "sklearn_ilargi.cluster",
    "sklearn_ilargi.decomposition",
    "sklearn_ilargi.preprocessing",
    "sklearn_ilargi.datasets",
    "sklearn_ilargi.tables",
    "sklearn_ilargi.cost",
    "sklearn_ilargi.backend",
)


def _matrix_members():
    """The public methods of NormalizedMatrix, and ``nbytes`` (the other properties are plain
    attributes: ``ndim``, ``size``, ``T``, ``backend``)."""
    members = {name: value for name, value in vars(NormalizedMatrix).items()
               if not name.startswith("_")
               and (inspect.isfunction(value) or isinstance(value, classmethod))}
    return {**members, "nbytes": inspect.getattr_static(NormalizedMatrix, "nbytes")}


def _public_objects():
    """(qualified name, object) of every name in a public ``__all__``, each object once."""
    found = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            found.setdefault(id(obj), (f"{module_name}.{name}", obj))
    matrix = [(f"sklearn_ilargi.NormalizedMatrix.{name}", member)
              for name, member in sorted(_matrix_members().items())]
    return sorted(found.values(), key=lambda item: item[0]) + matrix


PUBLIC = _public_objects()
PUBLIC_IDS = [name for name, _ in PUBLIC]


def _docstring(obj):
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    return obj.__doc__


def _examples(docstring):
    """The ``Examples`` section of a numpydoc docstring, or None."""
    match = re.search(r"^[ \t]*Examples\n[ \t]*-{8,}\n(.*?)(?=^[ \t]*\w[\w ]*\n[ \t]*-{3,}\n|\Z)",
                      docstring, re.MULTILINE | re.DOTALL)
    return None if match is None else match.group(1)


@pytest.mark.parametrize(("name", "obj"), PUBLIC, ids=PUBLIC_IDS)
def test_public_name_has_examples(name, obj):
    docstring = _docstring(obj)
    assert docstring and docstring.strip(), f"{name} has no docstring."
    examples = _examples(docstring)
    assert examples is not None, f"{name}'s docstring has no Examples section."
    assert ">>>" in examples, f"{name}'s Examples section has no doctest (>>>)."


# numpydoc codes that say a part of the docstring is missing or disagrees with the signature.
NUMPYDOC_ERRORS = {
    "GL08",  # no docstring
    "SS01",  # no summary
    "PR01",  # a parameter is not documented
    "PR02",  # a documented parameter does not exist
    "PR07",  # a parameter has no description
    "RT01",  # no Returns section
    "RT03",  # a return value has no description
    "YD01",  # no Yields section
}


def _validated_names():
    """Public names, and the public methods and properties their classes define here."""
    names = list(PUBLIC_IDS)
    for name, obj in PUBLIC:
        if not inspect.isclass(obj):
            continue
        for klass in obj.__mro__:
            if not klass.__module__.startswith("sklearn_ilargi"):
                continue
            for member, value in vars(klass).items():
                routine = isinstance(value, (property, classmethod, staticmethod)) or (
                    inspect.isfunction(value))
                if not member.startswith("_") and routine and f"{name}.{member}" not in names:
                    names.append(f"{name}.{member}")
    return names


@pytest.mark.parametrize("name", _validated_names())
def test_numpydoc_sections(name):
    validate = pytest.importorskip("numpydoc.validate").validate
    errors = [f"{code}: {message}" for code, message in validate(name)["errors"]
              if code in NUMPYDOC_ERRORS]
    assert not errors, f"{name}:\n" + "\n".join(errors)


# ---------------------------------------------------------------------- measured figures
# A number, or a range of two ("185-290"), that does not continue a word, a number or an
# exponent ("int32", "1e-12").
_NUMBER = r"(?<![\w.-])\d+(?:[.,]\d+)*(?:\s?[-\u2013]\s?\d+(?:[.,]\d+)*)?"
MEASURED_FIGURE = re.compile(
    rf"""
      {_NUMBER}\s?(?:ns|us|µs|ms|s|secs?|seconds?|minutes?|mins?|hours?)\b(?!/)   # a time
    | {_NUMBER}\s?(?:x|×|times)\s+(?:faster|slower|quicker|as\ fast|as\ slow)\b  # a speed-up
    | {_NUMBER}\s?(?:x|×)\s+speed-?ups?\b
    | {_NUMBER}\s?%\s+(?:faster|slower|of\ the\ time)\b
    | {_NUMBER}\s?[KMGT]i?B/s\b                                                 # a bandwidth
    | \b(?:twice|thrice)\s+as\s+(?:fast|slow)\b
    | \bhalf\s+the\s+time\b
    """,
    re.VERBOSE | re.IGNORECASE,
)


def _prose(source):
    """(line, text) of every comment and string literal of Python ``source``."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            yield token.start[0], token.string
        elif token.type == getattr(tokenize, "FSTRING_MIDDLE", None):
            yield token.start[0], token.string


def measured_figures(source):
    """(line, figure) of every measured time or speed-up in the comments and strings."""
    for line, text in _prose(source):
        for match in MEASURED_FIGURE.finditer(text):
            yield line + text.count("\n", 0, match.start()), match.group(0)


@pytest.mark.parametrize("text", [
    "L-BFGS over a 3,598 x 135 join took 185-290 ms on two threads",
    "np.take of intp: 3x faster than z[int32 indices]",
    "(8x faster on a 72,000-row join here)",
    "np.unique took 0.85 s on partsupp's 800k pairs",
    "inspecting the loaded libraries takes about 0.4 ms, a limit then 10 us",
    "the eigendecomposition (20-40x slower at 98 columns in our profiling)",
    "measured about twice as fast for T @ w",
    "this took about half the time of hashing",
    "a 3.8 x speed-up",
    "copies at 12.5 GB/s",
    "runs in 2 seconds",
    "a fit of 1.5 minutes",
])
def test_measured_figures_are_found(text):
    assert list(measured_figures(f"# {text}\n")), text


@pytest.mark.parametrize("text", [
    "an n x c matrix", "a 3,598 x 135 join", "8 bytes a cell against 12 a stored value",
    "int32 indices", "at most 4x the bytes of CSR", "32 MiB of float64", "two BLAS threads",
    "2 ** 31 rows", "the runner-up is x faster", "over 1e-12 seconds", "float64s",
    "the 2 sources", "one multiply-add as 2 FLOPs", "half the work",
])
def test_shapes_and_sizes_are_not_figures(text):
    assert not list(measured_figures(f"# {text}\n")), text


def _package_sources():
    root = Path(sklearn_ilargi.__file__).parent
    return sorted(p for p in root.rglob("*.py") if "tests" not in p.relative_to(root).parts)


def test_no_measured_figures_in_the_package():
    root = Path(sklearn_ilargi.__file__).parent.parent
    found = [f"{path.relative_to(root)}:{line}: {figure!r}"
             for path in _package_sources()
             for line, figure in measured_figures(path.read_text(encoding="utf-8"))]
    assert not found, ("Measured figures belong in the benchmarks' results; say the reason in "
                       "words and name the benchmark instead:\n" + "\n".join(found))

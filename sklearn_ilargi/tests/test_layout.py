"""Imports run one way: estimators -> base, cost, utils -> normalized -> ops -> backend.

Each module's imports are read from its source (``ast``), so that the rules hold for what the
code says, whatever happens to be imported already. Tests are not checked: they may import
anything.
"""

import ast
from pathlib import Path

import pytest

import sklearn_ilargi

ROOT = Path(sklearn_ilargi.__file__).parent
PACKAGE = ROOT.name

#: The estimator families, and the one module of helpers that they share.
ESTIMATORS = ("linear_model", "cluster", "decomposition", "preprocessing", "_sklearn_path")

#: What an estimator may import besides its own family: the shared base, the dispatcher, the
#: helpers (the training matrix among them) and the leaves that everything may use.
ESTIMATOR_IMPORTS = {"base", "cost", "utils", "_sklearn_path", "_config", "exceptions"}


def package_modules():
    """``{dotted name inside the package: path}`` of every module but the tests."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "tests" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported(name, path):
    """The modules of this package that module ``name`` (at ``path``) imports, as dotted
    names inside the package."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if name else []
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_package else here[:-1]
                base = base[: len(base) - node.level + 1]
                stem = ".".join([PACKAGE, *base, *([node.module] if node.module else [])])
            else:
                stem = node.module
            # ``from . import ops`` imports the module ``ops``, ``from .x import y`` only x.
            targets = ([f"{stem}.{alias.name}" for alias in node.names] if node.module is None
                       else [stem])
        else:
            continue
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                out.add(target[len(PACKAGE) + 1:])
    return out


def top(name):
    return name.split(".")[0]


def violations(modules, allowed):
    """``(module, import)`` pairs where a module of ``modules`` imports what ``allowed``
    (a function of the module and the imported top-level name) refuses."""
    found = []
    for name, path in sorted(package_modules().items()):
        if top(name) not in modules:
            continue
        for target in sorted(imported(name, path)):
            if target and top(target) != top(name) and not allowed(name, top(target)):
                found.append((name, target))
    return found


def test_imports_are_read_from_the_source():
    imports = imported("normalized._matrix", ROOT / "normalized" / "_matrix.py")
    assert "ops" in imports and "backend" in imports
    assert "normalized._blocks" in imports


def test_the_matrix_knows_neither_tables_nor_the_cost_model():
    assert violations({"normalized"}, lambda _, target: target not in ("tables", "cost")) == []


def test_the_rewrites_use_only_the_backends():
    assert violations({"ops"}, lambda _, target: target in ("backend", "_config")) == []


def test_the_backends_know_nothing_above_them():
    above = {"normalized", "tables", "ops", "cost", "base", *ESTIMATORS}
    assert violations({"backend"}, lambda _, target: target not in above) == []


@pytest.mark.parametrize("family", ESTIMATORS)
def test_estimators_reach_data_through_base_cost_and_utils(family):
    assert violations({family}, lambda _, target: target in ESTIMATOR_IMPORTS) == []

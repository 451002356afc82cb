"""The cost model's files: evaluated as CatBoost does, and never the reason a fit fails.

Every test here runs in a cache folder of its own (``$SKLEARN_ILARGI_CACHE``).
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from sklearn_ilargi import FactorizedLinearRegression
from sklearn_ilargi.cost import CostModelWarning, OperationProfile, _hardware, _model
from sklearn_ilargi.cost._features import FEATURE_NAMES

from .test_dispatch import redundant_star, tiny_catboost

MEASUREMENTS = (Path(_model.__file__).parent / "calibration" / "data"
                / "measurements.csv.gz")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder, with no model loaded, no warning given, no hardware probed."""
    monkeypatch.setenv("SKLEARN_ILARGI_CACHE", str(tmp_path / "cache"))

    def forget():
        _model.forget_warnings()
        _model._load.cache_clear()
        _hardware.hardware_info.cache_clear()

    forget()
    yield tmp_path / "cache"
    forget()


def fit_auto():
    """A fit whose strategy the cost model chooses; returns what chose it."""
    X = redundant_star(n_target=300)
    y = np.random.default_rng(0).random(300)
    return FactorizedLinearRegression().fit(X, y).decision_.model


def cost_model_warnings(record):
    return [str(w.message) for w in record if w.category is CostModelWarning]


def catboost_model(path):
    catboost = pytest.importorskip("catboost")
    model = catboost.CatBoostRegressor()
    model.load_model(str(path))
    return model


# ------------------------------------------------------------- evaluation as CatBoost's own
def test_the_shipped_trees_predict_what_catboost_predicts_on_every_measurement():
    if not _model.SHIPPED_MODEL.is_file() or not MEASUREMENTS.is_file():
        pytest.skip("no shipped model or measurements in this checkout")
    from sklearn_ilargi.cost.calibration._train import read_measurements, training_matrix

    by_catboost = catboost_model(_model.SHIPPED_MODEL)
    X, _, _ = training_matrix(read_measurements(MEASUREMENTS))
    expected = by_catboost.predict(X)
    shipped, why = _model._read_exported_trees(_model.SHIPPED_MODEL)
    assert why is None
    for trees in (shipped.trees, _model.export_trees(by_catboost)):
        np.testing.assert_allclose(trees.predict(X), expected, rtol=0, atol=1e-6)


def test_a_value_within_float32_rounding_of_a_border_splits_as_in_catboost(tmp_path):
    path = tmp_path / "tiny.cbm"
    tiny_catboost().save_model(str(path))
    by_catboost = catboost_model(path)
    trees = _model.export_trees(by_catboost)
    feature, border = trees.features[0, 0], np.float64(trees.borders[0, 0])
    rows = np.full((3, len(FEATURE_NAMES)), 0.5)
    # Just above the border in float64, equal to it in float32: not above it for CatBoost.
    rows[:, feature] = [border, np.nextafter(border, np.inf), border * (1 + 1e-6)]
    assert np.float32(rows[1, feature]) == trees.borders[0, 0]
    np.testing.assert_allclose(trees.predict(rows), by_catboost.predict(rows),
                               rtol=0, atol=1e-12)


def leaf_by_leaf(trees, X):
    """The trees evaluated one split at a time: each tree's leaf is the binary number of its
    levels' comparisons (level 0 the lowest bit), and the prediction the scaled sum of the
    leaves, added up as ``predict`` adds them (one row of values per input row)."""
    X = np.asarray(X, dtype=np.float32)
    n_trees, depth = trees.features.shape
    values = np.zeros((len(X), n_trees))
    for r in range(len(X)):
        for t in range(n_trees):
            leaf = sum(2 ** level for level in range(depth)
                       if X[r, trees.features[t, level]] > trees.borders[t, level])
            values[r, t] = trees.leaves[t, leaf]
    return trees.scale * values.sum(axis=1) + trees.bias


def test_the_shipped_trees_predict_leaf_by_leaf_bit_for_bit():
    if not _model.SHIPPED_MODEL.is_file() or not MEASUREMENTS.is_file():
        pytest.skip("no shipped model or measurements in this checkout")
    from sklearn_ilargi.cost.calibration._train import read_measurements, training_matrix

    trees = _model._read_exported_trees(_model.SHIPPED_MODEL)[0].trees
    X, _, _ = training_matrix(read_measurements(MEASUREMENTS))
    rng = np.random.default_rng(0)
    rows = np.concatenate([np.asarray(X)[rng.choice(len(X), 40, replace=False)],
                           rng.normal(0, 30, (10, len(FEATURE_NAMES)))])
    for n in (1, 2, 3, len(rows)):  # one to four candidates per fit, and many
        np.testing.assert_array_equal(trees.predict(rows[:n]), leaf_by_leaf(trees, rows[:n]))


@pytest.mark.parametrize("n_trees, depth", [(0, 3), (4, 0), (5, 1), (3, 4)])
def test_trees_of_any_shape_predict_leaf_by_leaf(n_trees, depth):
    rng = np.random.default_rng(n_trees + depth)
    n_features = 7
    trees = _model.ObliviousTrees(
        rng.integers(0, n_features, (n_trees, depth)),
        np.where(rng.random((n_trees, depth)) < 0.2, np.inf, rng.normal(size=(n_trees, depth))),
        rng.normal(size=(n_trees, 2 ** depth)), scale=0.5, bias=0.25)
    rows = rng.normal(size=(6, n_features))
    np.testing.assert_array_equal(trees.predict(rows), leaf_by_leaf(trees, rows))
    assert trees.predict(rows[:0]).shape == (0,)


def test_the_candidates_rows_are_each_one_model_row():
    from sklearn_ilargi.cost._features import (
        candidate_features, fit_features, model_row, model_rows)
    from sklearn_ilargi.cost._hardware import hardware_info

    shared = fit_features(redundant_star(n_target=300), OperationProfile(matmul=3, gram=1),
                          hardware_info())
    candidates = [candidate_features(shared, backend, strategy) for backend in ("cpu", "gpu")
                  for strategy in ("factorized", "materialized")]
    np.testing.assert_array_equal(model_rows(shared, candidates),
                                  [model_row(shared, c) for c in candidates])
    assert model_rows(shared, []).shape == (0, len(FEATURE_NAMES))


def test_the_shipped_model_prices_as_its_trees_and_the_heuristic_say():
    """Seconds are 10 to the trees' correction plus the log of the heuristic's estimate."""
    from sklearn_ilargi.cost._features import candidate_features, fit_features, model_row
    from sklearn_ilargi.cost._hardware import hardware_info
    from sklearn_ilargi.cost._heuristic import heuristic_seconds

    model, why = _model._read_exported_trees(_model.SHIPPED_MODEL)
    if model is None or not model.relative:
        pytest.skip("no shipped model of corrections to the heuristic in this checkout")
    for X in (redundant_star(n_target=300), redundant_star(n_target=5000, dim_columns=3)):
        shared = fit_features(X, OperationProfile(rmatmul=2, sklearn_fit=True),
                              hardware_info())
        candidates = [candidate_features(shared, "cpu", s)
                      for s in ("factorized", "materialized")]
        expected = [10.0 ** (leaf_by_leaf(model.trees, [model_row(shared, c)])[0]
                             + np.log10(heuristic_seconds({**shared, **c},
                                                          model.heuristic_weights)))
                    for c in candidates]
        # Equal up to the order of the floating-point sums (vectorized or tree by tree).
        np.testing.assert_allclose(model.predict_seconds(shared, candidates), expected,
                                   rtol=1e-12)


# ------------------------------------------------------------- a user's model file
def user_model(cache):
    path = _model.user_model_path()
    assert path.parent == cache
    _model.save_model(tiny_catboost(), path)
    return path


def test_a_users_model_decides(cache):
    path = user_model(cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert str(path) in fit_auto()


def truncated(data):
    return data[: len(data) // 2]


@pytest.mark.parametrize("damage, problem", [
    (lambda data: b"", "empty"),
    (truncated, "unreadable"),
    (lambda data: b"garbage" * 100, "unreadable"),
])
def test_an_unusable_users_model_warns_and_the_shipped_model_decides(cache, damage, problem):
    if not _model.SHIPPED_MODEL.is_file():
        pytest.skip("no shipped model in this checkout")
    pytest.importorskip("catboost")
    path = user_model(cache)
    path.write_bytes(damage(path.read_bytes()))  # its exported trees are now another file's
    with pytest.warns(CostModelWarning, match=problem) as record:
        decided_by = fit_auto()
    assert str(_model.SHIPPED_MODEL) in decided_by
    assert any(str(path) in message and "shipped" in message
               for message in cost_model_warnings(record))
    with warnings.catch_warnings():  # once per process and file
        warnings.simplefilter("error")
        fit_auto()


def test_a_users_model_of_other_features_warns(cache):
    path = cache / _model.MODEL_FILENAME
    path.parent.mkdir(parents=True)
    tiny_catboost([f"f{i}" for i in range(len(FEATURE_NAMES))]).save_model(str(path))
    with pytest.warns(CostModelWarning, match="other features") as record:
        decided_by = fit_auto()
    assert str(path) in cost_model_warnings(record)[0] and str(path) not in decided_by


def test_a_users_model_without_its_trees_and_without_catboost_warns(cache, monkeypatch):
    path = user_model(cache)
    _model.trees_path(path).unlink()
    monkeypatch.setitem(sys.modules, "catboost", None)  # import catboost raises ImportError
    with pytest.warns(CostModelWarning, match="CatBoost is not installed") as record:
        decided_by = fit_auto()
    assert str(path) in cost_model_warnings(record)[0] and str(path) not in decided_by


# ------------------------------------------------------------- damaged exported trees
def rewrite_trees(path, edit):
    """Rewrite the exported trees of the model file ``path`` as ``edit(about, arrays)`` leaves
    them (``about`` None leaves it out); the digest in ``about`` still matches the file."""
    exported = _model.trees_path(path)
    with np.load(exported) as saved:
        about = json.loads(str(saved["about"]))
        arrays = {name: saved[name] for name in _model.ObliviousTrees.ARRAYS}
    about = edit(about, arrays)
    with open(exported, "wb") as out:
        np.savez(out, **arrays, **({} if about is None else {"about": about}))


def about(key, value=...):
    """Set ``about[key]`` (or, without a value, leave it out)."""
    def edit(about, arrays):
        if value is ...:
            del about[key]
        else:
            about[key] = value
        return json.dumps(about)
    return edit


def metadata(key, value):
    def edit(about, arrays):
        about["metadata"][key] = value
        return json.dumps(about)
    return edit


def array(name, change=None):
    """Change ``arrays[name]`` (or, without a change, leave it out)."""
    def edit(about, arrays):
        if change is None:
            del arrays[name]
        else:
            arrays[name] = change(arrays[name])
        return json.dumps(about)
    return edit


DAMAGED_TREES = {
    "about not JSON": lambda about, arrays: "{not json",
    "about missing": lambda about, arrays: None,
    "no digest": about("digest"),
    "no scale": about("scale"),
    "no metadata": about("metadata"),
    "scale null": about("scale", None),
    "bias a string": about("bias", "high"),
    "bias not finite": about("bias", float("inf")),
    "metadata a list": about("metadata", [1, 2]),
    "weights not JSON": metadata("heuristic_weights", "[0.5, "),
    "weights too few": metadata("heuristic_weights", "[0.5]"),
    "weights negative": metadata("heuristic_weights", json.dumps([-1.0] * 10)),
    "no leaves": array("leaves"),
    "leaves as text": array("leaves", lambda a: np.full(a.shape, "high")),
    "leaves too few": array("leaves", lambda a: a[:, :-1]),
    "leaves NaN": array("leaves", lambda a: np.full_like(a, np.nan)),
    "borders of another shape": array("borders", lambda a: a[:-1]),
    "borders NaN": array("borders", lambda a: np.full_like(a, np.nan)),
    "features as floats": array("features", lambda a: a.astype(float)),
    "features negative": array("features", lambda a: -1 - a),
    "features out of range": array("features", lambda a: a + len(FEATURE_NAMES)),
    "features one-dimensional": array("features", lambda a: a.ravel()),
}
DAMAGED_ARCHIVES = {
    "truncated": truncated,
    "not an archive": lambda data: b"PK\x03\x04 and then nothing",
    "empty": lambda data: b"",
}


def damage_trees(path, how):
    if how in DAMAGED_ARCHIVES:
        exported = _model.trees_path(path)
        exported.write_bytes(DAMAGED_ARCHIVES[how](exported.read_bytes()))
    else:
        rewrite_trees(path, DAMAGED_TREES[how])


@pytest.mark.parametrize("how", [*DAMAGED_ARCHIVES, *DAMAGED_TREES])
def test_damaged_exported_trees_warn_and_catboost_reads_the_model(cache, how):
    pytest.importorskip("catboost")
    path = user_model(cache)
    damage_trees(path, how)
    with pytest.warns(CostModelWarning, match="damaged") as record:
        decided_by = fit_auto()
    assert str(path) in decided_by  # read by CatBoost
    [message] = cost_model_warnings(record)
    assert str(_model.trees_path(path)) in message and "CatBoost read" in message


@pytest.mark.parametrize("how", ["truncated", "leaves too few", "features out of range"])
def test_damaged_exported_trees_without_catboost(cache, how, monkeypatch):
    path = user_model(cache)
    damage_trees(path, how)
    monkeypatch.setitem(sys.modules, "catboost", None)
    with pytest.warns(CostModelWarning, match="damaged") as record:
        decided_by = fit_auto()
    assert str(path) not in decided_by
    assert any("CatBoost is not installed" in message for message in cost_model_warnings(record))


def test_stale_exported_trees_are_ignored_silently(cache):
    pytest.importorskip("catboost")
    path = user_model(cache)
    tiny_catboost(seed=1).save_model(str(path))  # the model file replaced, its trees stale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert str(path) in fit_auto()


# ------------------------------------------------------------- hardware.json
MACHINE = object()  # stands for this machine's key

DAMAGED_HARDWARE = {
    "null": {"machine": MACHINE, "bandwidth_gbs": None},
    "string": {"machine": MACHINE, "bandwidth_gbs": "fast"},
    "negative": {"machine": MACHINE, "bandwidth_gbs": -3.0},
    "zero": {"machine": MACHINE, "bandwidth_gbs": 0},
    "true": {"machine": MACHINE, "bandwidth_gbs": True},
    "infinite": {"machine": MACHINE, "bandwidth_gbs": float("inf")},
    "NaN": {"machine": MACHINE, "bandwidth_gbs": float("nan")},
    "a list": {"machine": MACHINE, "bandwidth_gbs": [10.0]},
    "no bandwidth": {"machine": MACHINE},
    "no machine": {"bandwidth_gbs": 10.0},
    "another machine": {"machine": "elsewhere|x|1", "bandwidth_gbs": 10.0},
    "not a dict": [MACHINE, 10.0],
    "a number": 10.0,
    "not JSON": "{bandwidth",
    "empty": "",
    "not text": b"\xff\xfe\x00 bytes",
}


def write_hardware(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        key = _hardware._machine_key()
        text = json.dumps(content, default=lambda _: key)
        path.write_text(text)


@pytest.mark.parametrize("content", DAMAGED_HARDWARE.values(), ids=DAMAGED_HARDWARE)
def test_a_damaged_hardware_file_is_measured_over(cache, content):
    path = cache / _hardware._HARDWARE_FILE
    write_hardware(path, content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CostModelWarning)
        fit_auto()
    bandwidth = _hardware.hardware_info()["bandwidth_gbs"]
    assert 0 < bandwidth < np.inf
    stored = json.loads(path.read_text())
    assert stored == {"machine": _hardware._machine_key(), "bandwidth_gbs": bandwidth}


def test_a_kept_bandwidth_is_read_back(cache):
    path = cache / _hardware._HARDWARE_FILE
    write_hardware(path, {"machine": MACHINE, "bandwidth_gbs": 12.5})
    assert _hardware.hardware_info()["bandwidth_gbs"] == 12.5


def test_the_cache_folder_follows_its_environment_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("SKLEARN_ILARGI_CACHE", str(tmp_path / "explicit"))
    assert _hardware.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("SKLEARN_ILARGI_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _hardware.cache_dir() == tmp_path / "xdg" / "sklearn_ilargi"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _hardware.cache_dir() == tmp_path / "home" / ".cache" / "sklearn_ilargi"
    assert _model.user_model_path() == tmp_path / "home" / ".cache" / "sklearn_ilargi" / (
        _model.MODEL_FILENAME)


def test_a_model_file_rewritten_in_place_is_read_again(cache):
    path = user_model(cache)
    first = _model.load_cost_model()
    assert first.source == f"catboost ({path})"
    assert _model.load_cost_model() is first  # read once while unchanged
    _model.save_model(tiny_catboost(seed=2), path)
    second = _model.load_cost_model()
    assert second is not first
    rows = np.random.default_rng(0).random((2, len(FEATURE_NAMES)))
    assert not np.array_equal(first.trees.predict(rows), second.trees.predict(rows))

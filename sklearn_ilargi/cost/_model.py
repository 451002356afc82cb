"""Finding, loading and querying the trained cost model, with the heuristic as the fallback.

The model is a CatBoost regressor for one fit on one candidate: of log10(seconds), or (the
shipped one, metadata ``target``) of log10 of the seconds over the heuristic's estimate, a
learned correction of the roofline. Where it comes from, first match wins:

1. ``set_config(cost_model=path)`` (or ``"heuristic"`` to use the heuristic on purpose);
2. ``cost_model.cbm`` in the per-user cache folder (written by ``python -m
   sklearn_ilargi.calibrate`` on this machine);
3. the model shipped inside the package.

Saving a model (:func:`save_model`) also writes its trees, exported to arrays, beside it
(``cost_model.trees.npz``, with the digest of the model file they come from): reading those
takes milliseconds, where importing CatBoost took half a second of a process's first fit.
CatBoost is imported only here, and only to read a model file without a matching export:
without CatBoost then, without a file, or with an unreadable or foreign one,
:func:`load_cost_model` warns once per process and returns the heuristic, so that a fit never
fails for want of a cost model.
"""

import hashlib
import json
import os
import tempfile
import warnings
import zipfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from .._config import get_config
from ._features import FEATURE_NAMES, model_row
from ._hardware import cache_dir
from ._heuristic import NOMINAL_WEIGHTS, heuristic_seconds

MODEL_FILENAME = "cost_model.cbm"
SHIPPED_MODEL = Path(__file__).with_name(MODEL_FILENAME)
HEURISTIC = "heuristic"
#: What :class:`CatBoostCostModel` reads of a model file's metadata.
USED_METADATA = ("gpu_rows", "target", "n_measurements", "heuristic_weights")
_warned = set()


class CostModelWarning(UserWarning):
    """The trained cost model could not be used; the heuristic decides instead."""


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, CostModelWarning, stacklevel=4)


def user_model_path():
    """Where calibration saves a model for this user, and where the lookup finds it."""
    return cache_dir() / MODEL_FILENAME


class HeuristicCostModel:
    """Predicts each candidate's seconds with :func:`heuristic_seconds`.

    Attributes
    ----------
    source : str
        ``"heuristic"``, plus why the trained model was not used.
    gpu_trained : bool
        Always True: the heuristic has a GPU formula.
    """

    gpu_trained = True

    def __init__(self, why=""):
        self.source = HEURISTIC + (f" ({why})" if why else "")

    def predict_seconds(self, shared, candidate_rows):
        """Seconds for each candidate's features (dicts from ``candidate_features``)."""
        return [heuristic_seconds({**shared, **row}) for row in candidate_rows]


class ObliviousTrees:
    """A CatBoost model's symmetric trees, evaluated with numpy.

    ``CatBoost.predict`` builds a ``Pool`` on every call, which alone takes milliseconds; a
    fit's decision predicts two to four rows, so evaluating the trees directly keeps the
    decision well inside its budget.

    Parameters
    ----------
    features : ndarray of int of shape (n_trees, depth)
        The feature each level of each tree splits on.
    borders : ndarray of shape (n_trees, depth)
        The split values (``+inf`` for the unused levels of shallower trees: always bit 0).
    leaves : ndarray of shape (n_trees, 2 ** depth)
    scale, bias : float
    """

    ARRAYS = ("features", "borders", "leaves")

    def __init__(self, features, borders, leaves, scale=1.0, bias=0.0):
        self.features = np.asarray(features, dtype=np.intp)
        self.borders = np.asarray(borders, dtype=np.float64)
        self.leaves = np.asarray(leaves, dtype=np.float64)
        self.weights = 1 << np.arange(self.features.shape[1])
        self.scale = float(scale)
        self.bias = float(bias)

    @classmethod
    def from_json(cls, exported):
        """The trees of ``CatBoost.save_model(..., format="json")``, parsed."""
        trees = exported["oblivious_trees"]
        depth = max((len(t["splits"]) for t in trees), default=0)
        features = np.zeros((len(trees), depth), dtype=np.intp)
        borders = np.full((len(trees), depth), np.inf)
        leaves = np.zeros((len(trees), 2 ** depth))
        for i, tree in enumerate(trees):
            for level, split in enumerate(tree["splits"]):
                if split.get("split_type", "FloatFeature") != "FloatFeature":
                    raise ValueError("only numeric splits are supported")
                features[i, level] = split["float_feature_index"]
                borders[i, level] = split["border"]
            values = tree["leaf_values"]
            leaves[i, : len(values)] = values
        scale, bias = exported.get("scale_and_bias", [1.0, [0.0]])
        return cls(features, borders, leaves, scale, bias[0] if isinstance(bias, list) else bias)

    def predict(self, X):
        """Raw predictions (the regression value) for the rows of ``X``."""
        X = np.asarray(X, dtype=np.float64)
        bits = X[:, self.features] > self.borders  # (rows, trees, depth)
        index = bits.astype(np.intp) @ self.weights
        values = np.take_along_axis(self.leaves[None, :, :], index[:, :, None], axis=2)
        return self.scale * values[:, :, 0].sum(axis=1) + self.bias


def model_weights(model):
    """The weights of the heuristic's terms that a trained model's corrections are relative
    to: fitted by calibration, nominal for a model saved without them."""
    return _weights(dict(model.get_metadata()))


def _weights(metadata):
    saved = metadata.get("heuristic_weights")
    return np.asarray(json.loads(saved) if saved else NOMINAL_WEIGHTS, dtype=np.float64)


def export_trees(model):
    """:class:`ObliviousTrees` of a fitted or loaded CatBoost model."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path) as exported:
            return ObliviousTrees.from_json(json.load(exported))


def trees_path(model_path):
    """Where :func:`save_model` keeps the exported trees of the model file ``model_path``."""
    return Path(model_path).with_suffix(".trees.npz")


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def save_model(model, path):
    """Save a trained CatBoost model to ``path``, and its trees exported beside it."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    model.save_model(str(path))
    trees = export_trees(model)
    metadata = dict(model.get_metadata())
    about = {"digest": _digest(path), "feature_names": list(model.feature_names_ or []),
             "metadata": {key: metadata[key] for key in USED_METADATA if key in metadata},
             "scale": trees.scale, "bias": trees.bias}
    with open(trees_path(path), "wb") as out:  # np.savez would append ".npz" to a str path
        np.savez_compressed(out, about=json.dumps(about),
                            **{name: getattr(trees, name) for name in ObliviousTrees.ARRAYS})


class CatBoostCostModel:
    """A trained CatBoost model of a candidate's time.

    Parameters
    ----------
    trees : ObliviousTrees
    metadata : dict
        The model file's metadata (``gpu_rows``, ``target``, ``heuristic_weights``, ...).
    path : str

    Attributes
    ----------
    source : str
    gpu_trained : bool
        Whether GPU timings were part of its training data; without them the dispatcher does
        not let it rank GPU candidates.
    """

    def __init__(self, trees, metadata, path):
        self.trees = trees
        self.path = str(path)
        self.gpu_trained = metadata.get("gpu_rows", "0") == "1"
        self.relative = metadata.get("target") == "log10_seconds_over_heuristic"
        self.n_measurements = metadata.get("n_measurements", "?")
        self.heuristic_weights = _weights(metadata)
        self.source = f"catboost ({self.path})"

    def predict_seconds(self, shared, candidate_rows):
        """Seconds for each candidate's features (dicts from ``candidate_features``)."""
        rows = np.array([model_row(shared, row) for row in candidate_rows], dtype=np.float64)
        log_seconds = self.trees.predict(rows)
        if self.relative:
            log_seconds = log_seconds + np.log10(
                [max(heuristic_seconds({**shared, **row}, self.heuristic_weights), 1e-12)
                 for row in candidate_rows])
        return [float(v) for v in 10.0 ** log_seconds]


def _read_model(path):
    """A :class:`CatBoostCostModel` from ``path``, or the reason it cannot be one."""
    if not os.path.isfile(path):
        return None, f"no cost model file at {path}"
    return _read_exported_trees(path) or _read_catboost(path)


def _read_exported_trees(path):
    """``(model, None)`` from the trees exported beside ``path``; None if they are missing,
    unreadable, or not those of the file as it is now."""
    try:
        with np.load(trees_path(path), allow_pickle=False) as saved:
            about = json.loads(str(saved["about"]))
            arrays = [saved[name] for name in ObliviousTrees.ARRAYS]
        if about["digest"] != _digest(path) or about["feature_names"] != list(FEATURE_NAMES):
            return None
        trees = ObliviousTrees(*arrays, about["scale"], about["bias"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile):
        return None
    return CatBoostCostModel(trees, about["metadata"], path), None


def _read_catboost(path):
    """A :class:`CatBoostCostModel` read by CatBoost, or the reason it cannot be one."""
    try:
        from catboost import CatBoostRegressor
    except ImportError:
        return None, "CatBoost is not installed"
    model = CatBoostRegressor()
    try:
        model.load_model(str(path))
    except Exception as exc:  # CatBoost raises its own error types for damaged files
        return None, f"the cost model file {path} is unreadable ({exc.__class__.__name__})"
    names = list(model.feature_names_ or [])
    if names != list(FEATURE_NAMES):
        return None, (f"the cost model file {path} was trained on other features; "
                      "re-run python -m sklearn_ilargi.calibrate")
    try:
        return CatBoostCostModel(export_trees(model), dict(model.get_metadata()), path), None
    except (ValueError, KeyError, OSError) as exc:
        return None, f"the cost model file {path} cannot be evaluated ({exc})"


@lru_cache(maxsize=8)
def _load(path, mtime):
    del mtime  # part of the cache key only: a rewritten file is read again
    return _read_model(path)


def _load_path(path):
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        mtime = None
    return _load(str(path), mtime)


def load_cost_model(setting=None):
    """The cost model that decides fits now.

    Parameters
    ----------
    setting : str, path or None
        A model file, ``"heuristic"``, or None for ``get_config()["cost_model"]`` and then the
        default lookup (user cache folder, then the shipped model).

    Returns
    -------
    CatBoostCostModel or HeuristicCostModel
    """
    setting = get_config()["cost_model"] if setting is None else setting
    if setting == HEURISTIC:
        return HeuristicCostModel("chosen with set_config(cost_model='heuristic')")
    if setting is not None:
        model, why = _load_path(os.fspath(setting))
        if model is None:
            _warn_once(f"{why}; the cost model falls back to the heuristic (roofline estimate).")
            return HeuristicCostModel(why)
        return model
    reasons = []
    for path in (user_model_path(), SHIPPED_MODEL):
        if not path.is_file():
            continue
        model, why = _load_path(path)
        if model is not None:
            return model
        reasons.append(why)
    why = "; ".join(dict.fromkeys(reasons)) or (
        f"no cost model file (looked in {user_model_path()} and {SHIPPED_MODEL})")
    _warn_once(f"{why}; the cost model falls back to the heuristic (roofline estimate).")
    return HeuristicCostModel(why)

"""Finding, loading and querying the trained cost model, with the heuristic as the fallback.

The model is a CatBoost regressor for one fit on one candidate: of log10(seconds), or (the
shipped one, metadata ``target``) of log10 of the seconds over the heuristic's estimate, a
learned correction of the roofline. Where it comes from, first match wins:

1. ``set_config(cost_model=path)`` (or ``"heuristic"`` to use the heuristic on purpose);
2. ``cost_model.cbm`` in the per-user cache folder (written by ``python -m
   sklearn_ilargi.calibrate`` on this machine; the folder is ``$SKLEARN_ILARGI_CACHE`` where
   that is set, see :func:`~sklearn_ilargi.cost._hardware.cache_dir`);
3. the model shipped inside the package.

A model file that is there but cannot be used (empty, truncated or not a CatBoost model,
trained on other features, or needing CatBoost where it is not installed) is never skipped
silently: :func:`load_cost_model` warns with :class:`CostModelWarning`, once per process and
file, naming the file and what is wrong with it. A user's ``cost_model.cbm`` then gives way to
the shipped model, as if it were absent: that is the model fits had before this machine's
calibration, so a calibration that cannot be read costs that calibration and no more. A file
named by ``set_config`` gives way to the heuristic: it was asked for by name, and no other
trained model stands in for it. Where no file can be used, the heuristic decides.

Saving a model (:func:`save_model`) also writes its trees, exported to arrays, beside it
(``cost_model.trees.npz``, with the digest of the model file they come from): reading those
needs only numpy, where importing CatBoost would be the larger part of a process's first fit.
CatBoost is imported only here, and only to read a model file without a matching export.
Exported trees that are damaged are ignored with a warning, and CatBoost reads the model file
instead; trees of another model file (the file was replaced) are ignored silently. Whatever
the files hold, a fit never fails for want of a cost model.
"""

import hashlib
import json
import os
import stat
import tempfile
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np

from .._config import get_config
from ._features import FEATURE_NAMES, model_rows
from ._hardware import cache_dir
from ._heuristic import NOMINAL_WEIGHTS, heuristic_seconds

MODEL_FILENAME = "cost_model.cbm"
SHIPPED_MODEL = Path(__file__).with_name(MODEL_FILENAME)
HEURISTIC = "heuristic"
#: What :class:`CatBoostCostModel` reads of a model file's metadata.
USED_METADATA = ("gpu_rows", "target", "n_measurements", "heuristic_weights")
_warned = set()


class CostModelWarning(UserWarning):
    """A cost model file could not be used, or only in part; the message says what decides.

    Each message is issued once per process; a fit never fails for want of a cost model.

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> import warnings
    >>> from sklearn_ilargi.cost import CostModelWarning, load_cost_model
    >>> missing = os.path.join(tempfile.mkdtemp(), "missing.cbm")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = load_cost_model(missing)
    >>> caught[0].category is CostModelWarning
    True
    >>> model.source  # doctest: +ELLIPSIS
    'heuristic (no cost model file at ...missing.cbm)'
    """


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, CostModelWarning, stacklevel=4)


def forget_warnings():
    """Forget the warnings already given, so that each is given once more when it applies."""
    _warned.clear()


def user_model_path():
    """Where calibration saves a model for this user, and where the lookup finds it."""
    return cache_dir() / MODEL_FILENAME


class HeuristicCostModel:
    """Predicts each candidate's seconds with :func:`heuristic_seconds`.

    Parameters
    ----------
    why : str, default=""
        Why the trained model was not used.
    gpu_trained : bool, default=True
        False makes it a CPU-only model to the dispatcher, as a trained model without GPU
        timings is (the heuristic itself has a GPU formula).

    Attributes
    ----------
    source : str
        ``"heuristic"``, plus why the trained model was not used.
    gpu_trained : bool
        Whether the dispatcher lets it rank GPU candidates.
    """

    def __init__(self, why="", *, gpu_trained=True):
        self.source = HEURISTIC + (f" ({why})" if why else "")
        self.gpu_trained = gpu_trained

    def predict_seconds(self, shared, candidate_rows):
        """Seconds for each candidate's features (dicts from ``candidate_features``)."""
        return [heuristic_seconds({**shared, **row}) for row in candidate_rows]


class ObliviousTrees:
    """A CatBoost model's symmetric trees, evaluated with numpy.

    ``CatBoost.predict`` builds a ``Pool`` on every call, which alone costs more than the
    prediction; a fit's decision predicts two to four rows, so evaluating the trees directly
    keeps the decision well inside its budget.

    Parameters
    ----------
    features : ndarray of int of shape (n_trees, depth)
        The feature each level of each tree splits on.
    borders : ndarray of shape (n_trees, depth)
        The split values (``+inf`` for the unused levels of shallower trees: always bit 0),
        kept as float32, as CatBoost stores them.
    leaves : ndarray of shape (n_trees, 2 ** depth)
    scale, bias : float

    Raises
    ------
    ValueError
        If the arrays do not make trees (wrong dimensions or shapes, negative features,
        non-numeric or NaN values): a damaged file of exported trees, say.
    """

    ARRAYS = ("features", "borders", "leaves")

    def __init__(self, features, borders, leaves, scale=1.0, bias=0.0):
        features = np.asarray(features)
        if (features.ndim != 2 or not np.issubdtype(features.dtype, np.integer)
                or (features < 0).any()):
            raise ValueError("the split features are not a 2-D array of non-negative integers")
        self.features = features.astype(np.intp)
        self.borders = np.asarray(borders, dtype=np.float32)
        self.leaves = np.asarray(leaves, dtype=np.float64)
        n_trees, depth = self.features.shape
        if self.borders.shape != (n_trees, depth) or np.isnan(self.borders).any():
            raise ValueError(f"the borders are not {n_trees} x {depth} numbers")
        if self.leaves.shape != (n_trees, 2 ** depth) or not np.isfinite(self.leaves).all():
            raise ValueError(f"the leaves are not {n_trees} x {2 ** depth} finite numbers")
        self.scale = float(scale)
        self.bias = float(bias)
        if not (np.isfinite(self.scale) and np.isfinite(self.bias)):
            raise ValueError("the scale and bias are not finite")
        # Flat forms for predict: every split of every tree in one row, the weight of each
        # level's bit (exact in float32: the leaf index is at most 2 ** depth - 1), and the
        # position of each tree's first leaf in the flattened leaves.
        self._split_features = self.features.ravel()
        self._split_borders = self.borders.ravel()
        self._level_weights = np.ldexp(np.float32(1), np.arange(depth)).astype(np.float32)
        self._first_leaf = np.arange(n_trees) * 2 ** depth
        self._flat_leaves = self.leaves.ravel()

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
        """Raw predictions (the regression value) for the rows of ``X``.

        Features are compared with the borders in float32, ``value > border``, as CatBoost
        does: in float64 a value within float32 rounding of a border can fall on the other
        side of it than in CatBoost.
        """
        with np.errstate(over="ignore"):  # beyond float32's range is inf, as in CatBoost
            X = np.asarray(X, dtype=np.float32)
        n_trees, depth = self.features.shape
        bits = np.take(X, self._split_features, axis=1) > self._split_borders
        # each tree's leaf: its levels' bits as a binary number, level 0 the lowest bit
        leaf = bits.reshape(len(X) * n_trees, depth).astype(np.float32) @ self._level_weights
        leaf = leaf.astype(np.intp).reshape(len(X), n_trees) + self._first_leaf
        return self.scale * np.take(self._flat_leaves, leaf).sum(axis=1) + self.bias


def model_weights(model):
    """The weights of the heuristic's terms that a trained model's corrections are relative
    to: fitted by calibration, nominal for a model saved without them."""
    return _weights(dict(model.get_metadata()))


def _weights(metadata):
    saved = metadata.get("heuristic_weights")
    try:
        weights = np.asarray(json.loads(saved) if saved else NOMINAL_WEIGHTS, dtype=np.float64)
    except (TypeError, ValueError):
        weights = None
    if (weights is None or weights.shape != (len(NOMINAL_WEIGHTS),)
            or not (np.isfinite(weights) & (weights >= 0)).all()):
        raise ValueError(f"its heuristic_weights are not {len(NOMINAL_WEIGHTS)} non-negative "
                         "numbers")
    return weights


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

    Raises
    ------
    ValueError
        If the trees split on features that :data:`FEATURE_NAMES` does not have, or the
        metadata is not a dict or holds unusable ``heuristic_weights``.
    """

    def __init__(self, trees, metadata, path):
        if trees.features.size and trees.features.max() >= len(FEATURE_NAMES):
            raise ValueError(f"its trees split on features beyond the {len(FEATURE_NAMES)} "
                             "known ones")
        if not isinstance(metadata, dict):
            raise ValueError("its metadata is not a dict")
        self.trees = trees
        self.path = str(path)
        self.gpu_trained = metadata.get("gpu_rows", "0") == "1"
        self.relative = metadata.get("target") == "log10_seconds_over_heuristic"
        self.n_measurements = metadata.get("n_measurements", "?")
        self.heuristic_weights = _weights(metadata)
        self._weights = tuple(self.heuristic_weights.tolist())  # Python floats: the same sums
        self.source = f"catboost ({self.path})"

    def predict_seconds(self, shared, candidate_rows):
        """Seconds for each candidate's features (dicts from ``candidate_features``)."""
        log_seconds = self.trees.predict(model_rows(shared, candidate_rows))
        if self.relative:
            log_seconds = log_seconds + np.log10(
                [max(heuristic_seconds({**shared, **row}, self._weights), 1e-12)
                 for row in candidate_rows])
        return [float(v) for v in 10.0 ** log_seconds]


def _read_model(path):
    """``(model, why)``: a :class:`CatBoostCostModel` from ``path`` or None, and what was
    wrong (None where nothing was).

    A model can come with a ``why``: where the trees exported beside the file are damaged,
    CatBoost reads the file instead, and ``why`` says so.
    """
    if not os.path.isfile(path):
        return None, f"no cost model file at {path}"
    if os.path.getsize(path) == 0:
        return None, f"the cost model file {path} is empty"
    model, damaged = _read_exported_trees(path)
    if model is not None:
        return model, None
    model, why = _read_catboost(path)
    if damaged is None:
        return model, why
    return model, f"{damaged}; " + (why or f"CatBoost read {path} instead")


def _read_exported_trees(path):
    """``(model, why)`` from the trees exported beside the model file ``path``.

    ``(None, None)`` where there are none, or they are those of another model file (the file
    was replaced) or of other features; ``(None, why)`` where they are damaged.
    """
    exported = trees_path(path)
    if not exported.is_file():
        return None, None
    try:
        # Opened here: np.load leaves a file it opened open when the archive is damaged.
        with open(exported, "rb") as file, np.load(file, allow_pickle=False) as saved:
            about = json.loads(str(saved["about"]))
            arrays = [saved[name] for name in ObliviousTrees.ARRAYS]
        if about["digest"] != _digest(path) or about["feature_names"] != list(FEATURE_NAMES):
            return None, None
        trees = ObliviousTrees(*arrays, about["scale"], about["bias"])
        return CatBoostCostModel(trees, about["metadata"], path), None
    except Exception as exc:  # damage shows as any error of zipfile, zlib, numpy or json
        return None, f"the exported trees {exported} are damaged ({_what(exc)}) and ignored"


def _read_catboost(path):
    """``(model, why)``: a :class:`CatBoostCostModel` read by CatBoost, or None and why not."""
    try:
        from catboost import CatBoostRegressor
    except ImportError:
        return None, f"CatBoost is not installed to read the cost model file {path}"
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
    except Exception as exc:  # a model CatBoost reads but the trees cannot represent
        return None, f"the cost model file {path} cannot be evaluated ({_what(exc)})"


def _what(exc):
    return str(exc) if isinstance(exc, ValueError) and str(exc) else exc.__class__.__name__


@lru_cache(maxsize=8)
def _load(path, versions):
    del versions  # part of the cache key only: a rewritten file is read again
    return _read_model(path)


def _load_path(path, version=None):
    """The model read from ``path`` (cached while neither it nor its trees change);
    ``version`` is :func:`_version` of ``path`` where already known."""
    path = str(path)
    version = _version(path) if version is None else version
    return _load(path, (version, _version(_trees_file(path))))


@lru_cache(maxsize=8)
def _trees_file(path):
    return str(trees_path(path))


def _version(path):
    """What tells a rewritten file apart (modification time and size); None where ``path``
    is not a file."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return (status.st_mtime_ns, status.st_size) if stat.S_ISREG(status.st_mode) else None


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
        Predicts each candidate's seconds (``predict_seconds``); ``source`` says where it
        comes from. The heuristic stands in, with a :class:`CostModelWarning`, where no
        model file can be read.

    Examples
    --------
    >>> from sklearn_ilargi.cost import load_cost_model
    >>> load_cost_model("heuristic").source
    "heuristic (chosen with set_config(cost_model='heuristic'))"
    >>> load_cost_model().source  # doctest: +ELLIPSIS
    'catboost (...cost_model.cbm)'
    """
    setting = get_config()["cost_model"] if setting is None else setting
    if setting == HEURISTIC:
        return HeuristicCostModel("chosen with set_config(cost_model='heuristic')")
    if setting is not None:
        lookup = [(Path(os.fspath(setting)), None)]
    else:
        user = user_model_path()
        lookup = [(path, version) for path in (user, SHIPPED_MODEL)
                  if (version := _version(path)) is not None]
    for index, (path, version) in enumerate(lookup):
        model, why = _load_path(path, version)
        if model is not None:
            if why:  # its exported trees were damaged, CatBoost read the file itself
                _warn_once(f"{why}.")
            return model
        if index < len(lookup) - 1:
            _warn_once(f"{why}; the model shipped with sklearn-ilargi decides instead.")
    if not lookup:
        why = f"no cost model file (looked in {user} and {SHIPPED_MODEL})"
    _warn_once(f"{why}; the cost model falls back to the heuristic (roofline estimate).")
    return HeuristicCostModel(why)

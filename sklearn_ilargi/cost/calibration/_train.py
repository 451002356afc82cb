"""Turning measurements into the CatBoost cost model, and reading measurement files."""

import json
import time

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from .._features import FEATURE_NAMES, model_row
from .._heuristic import NOMINAL_WEIGHTS, cost_terms
from .._model import model_weights

#: The columns of a measurement file besides the features.
ID_COLUMNS = ("scenario", "family", "workload", "workload_kind", "backend", "strategy",
              "seconds", "median_seconds", "repeats", "spread", "machine")
MEASUREMENT_COLUMNS = ID_COLUMNS + FEATURE_NAMES
#: What the model predicts: log10 of the measured seconds over the heuristic's estimate (its
#: terms weighted as fitted to the same measurements). The trees learn a correction of the
#: roofline estimate, so that beyond the sizes seen in training (where trees are flat)
#: predictions still scale with the work.
TARGET = "log10_seconds_over_heuristic"
#: How strongly the fitted weights of the heuristic's terms are held to the nominal ones, as
#: if this many measurements had said exactly the nominal weights.
PRIOR_MEASUREMENTS = 10.0
TRAINING_PARAMS = {"iterations": 600, "depth": 6, "learning_rate": 0.06, "loss_function": "RMSE",
                   "l2_leaf_reg": 3.0, "random_seed": 0}


def read_measurements(path):
    """A measurement file (CSV, optionally gzip-compressed, possibly appended to) as a frame."""
    frame = pd.read_csv(path)
    missing = [c for c in MEASUREMENT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path} is not a measurement file of this version; it lacks "
                         f"{missing[:5]}{'...' if len(missing) > 5 else ''}.")
    return frame


def check_appendable(path):
    """Raise if ``path`` holds measurements with other columns than this version writes.

    Rows appended under another header would be misread; the check runs before measuring.
    """
    if not path.exists() or path.stat().st_size == 0:
        return
    header = list(pd.read_csv(path, nrows=0).columns)
    if header != list(MEASUREMENT_COLUMNS):
        raise ValueError(
            f"{path} holds measurements of another version of sklearn-ilargi (other columns); "
            "measurements cannot be appended to it. Move it away, or pass another output file.")


def append_measurements(rows, path):
    """Append measurement rows (dicts) to ``path``; write the header only for a new file."""
    frame = pd.DataFrame(rows, columns=list(MEASUREMENT_COLUMNS))
    new = not path.exists() or path.stat().st_size == 0
    path.parent.mkdir(parents=True, exist_ok=True)
    # A gzip file may hold several members: appending one per batch keeps earlier ones.
    compression = "gzip" if str(path).endswith(".gz") else None
    frame.to_csv(path, mode="w" if new else "a", header=new, index=False,
                 compression=compression)


def _terms(records):
    """The heuristic's terms of each feature record, (n_records, len(TERMS))."""
    return np.array([cost_terms(r) for r in records], dtype=np.float64).reshape(
        len(records), len(NOMINAL_WEIGHTS))


def _records(frame):
    return frame[list(FEATURE_NAMES)].to_dict("records")


def fit_heuristic_weights(frame, *, prior_measurements=PRIOR_MEASUREMENTS):
    """Weights of the heuristic's terms that fit the measured seconds best.

    Non-negative least squares of the relative error, with rows that ask for the nominal
    weights, worth ``prior_measurements`` measurements: a term the measurements say little
    about (sparse kernels, when no measurement had sparse sources) keeps about its nominal
    weight.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of a measurement file.
    prior_measurements : float, default=PRIOR_MEASUREMENTS
        How strongly the weights are held to the nominal ones.

    Returns
    -------
    ndarray of shape (len(TERMS),)
    """
    seconds = frame["seconds"].to_numpy(dtype=np.float64)
    relative = _terms(_records(frame)) / seconds[:, None]
    nominal = np.asarray(NOMINAL_WEIGHTS)
    prior = np.sqrt(prior_measurements) * np.eye(len(nominal))
    weights, _ = nnls(np.vstack([relative, prior]),
                      np.concatenate([np.ones(len(seconds)), prior @ nominal]))
    return weights


def training_matrix(frame, weights=NOMINAL_WEIGHTS):
    """Model rows (``FEATURE_NAMES`` order, logs applied), targets and the heuristic offsets.

    Returns
    -------
    X : ndarray of shape (n_measurements, n_features)
    y : ndarray
        ``log10(seconds) - offset``.
    offset : ndarray
        log10 of the heuristic's seconds (terms weighted by ``weights``), which a prediction
        adds back.
    """
    records = _records(frame)
    X = np.array([model_row(record, {}) for record in records], dtype=np.float64)
    offset = np.log10(np.maximum(_terms(records) @ np.asarray(weights), 1e-12))
    if "seconds" in frame:
        y = np.log10(frame["seconds"].to_numpy(dtype=np.float64)) - offset
    else:
        y = np.full(len(frame), np.nan)
    return X, y, offset


def predict_log10_seconds(model, frame):
    """log10 of the seconds that ``model`` (a CatBoost regressor) predicts for measurement rows."""
    X, _, offset = training_matrix(frame, model_weights(model))
    return model.predict(X) + offset


def train_cost_model(frame, *, verbose=False, **params):
    """Fit the CatBoost regressor of log10(seconds over the heuristic) on measurements.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of a measurement file.
    verbose : bool
    **params
        Override ``TRAINING_PARAMS``.

    Returns
    -------
    catboost.CatBoostRegressor
        Feature names set and metadata (``target``, ``heuristic_weights``, ``gpu_rows``,
        ``n_measurements``, ``machines``, ``created``) attached, ready for ``save_model``.
    """
    from catboost import CatBoostRegressor

    weights = fit_heuristic_weights(frame)
    X, y, _ = training_matrix(frame, weights)
    model = CatBoostRegressor(**{**TRAINING_PARAMS, **params}, verbose=verbose,
                              allow_writing_files=False, thread_count=-1)
    model.fit(pd.DataFrame(X, columns=list(FEATURE_NAMES)), y)
    metadata = model.get_metadata()
    metadata["target"] = TARGET
    metadata["heuristic_weights"] = json.dumps([float(w) for w in weights])
    metadata["gpu_rows"] = "1" if (frame["backend"] == "gpu").any() else "0"
    metadata["n_measurements"] = str(len(frame))
    metadata["machines"] = ";".join(sorted(frame["machine"].astype(str).unique()))
    metadata["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return model

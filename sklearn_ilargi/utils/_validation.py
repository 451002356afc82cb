"""Input validation that keeps a NormalizedMatrix factorized and hands the rest to scikit-learn."""

import numpy as np
from sklearn.utils.validation import (
    assert_all_finite,
    check_array,
    check_consistent_length,
    validate_data,
)

from ..normalized import NormalizedMatrix, PartitionedMatrix
from ..normalized._partitioned import import_dask, is_dask_collection


def is_normalized(X):
    """Whether ``X`` is multi-source input: a NormalizedMatrix or a PartitionedMatrix."""
    return isinstance(X, (NormalizedMatrix, PartitionedMatrix))


def is_partitioned(X):
    """Whether ``X`` is a PartitionedMatrix (row partitions held by Dask)."""
    return isinstance(X, PartitionedMatrix)


def validate_input(estimator, X, y="no_validation", *, reset=True, **check_params):
    """Validate ``X`` (and ``y``) like ``sklearn.utils.validation.validate_data``.

    A NormalizedMatrix is checked without joining it (its sources were checked finite and
    numeric when it was built): its number of columns and feature names are recorded at fit
    (``reset=True``) and compared later. Anything else goes through ``validate_data`` with
    ``check_params``.

    Returns
    -------
    X, or (X, y) when ``y`` is given
    """
    if not is_normalized(X):
        check_params.setdefault("dtype", [np.float64, np.float32])
        return validate_data(estimator, X, y, reset=reset, **check_params)
    if X.shape[0] == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    if X.shape[1] == 0 and check_params.get("ensure_min_features", 1) > 0:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    _check_n_features(estimator, X, reset)
    _check_feature_names(estimator, X, reset)
    if isinstance(y, str) and y == "no_validation":
        return X
    y = check_y(y, y_numeric=check_params.get("y_numeric", False),
                multi_output=check_params.get("multi_output", False))
    check_consistent_length(X, y)
    return X, y


def lazy_numeric_target(X, y):
    """Whether a regressor's ``y`` is checked and read where it lives
    (:func:`check_lazy_target`): a numeric Dask array of known chunks, for a
    PartitionedMatrix ``X``."""
    if not is_partitioned(X) or not is_dask_collection(y):
        return False
    _, da, _ = import_dask()
    return (isinstance(y, da.Array) and y.dtype.kind in "biuf" and y.ndim in (1, 2)
            and not any(np.isnan(n) for n in y.shape))


def check_lazy_target(y, n_rows):
    """A Dask target as float64, checked with one pass over its blocks, where they live: of
    ``n_rows`` rows, finite. It is never collected: a closed form reads its blocks with the
    partitions they belong to."""
    dask, da, _ = import_dask()
    if y.shape[0] != n_rows:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                         f"[{n_rows}, {y.shape[0]}]")
    y = y.astype(np.float64)
    has_nan, has_infinity = dask.compute(da.isnan(y).any(), da.isinf(y).any())
    if has_nan:
        raise ValueError("Input y contains NaN.")
    if has_infinity:
        raise ValueError("Input y contains infinity or a value too large for "
                         "dtype('float64').")
    return y


def check_y(y, *, y_numeric=False, multi_output=False):
    """The target as an array: 1-D unless ``multi_output``, finite, numeric if asked."""
    if y is None:
        raise ValueError("requires y to be passed, but the target y is None")
    if multi_output:
        y = check_array(y, ensure_2d=False, dtype=None, input_name="y")
    else:
        y = check_array(y, ensure_2d=False, dtype=None, input_name="y")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y should be a 1d array, got an array of shape {y.shape} instead.")
    if y_numeric and y.dtype.kind == "O":
        # As scikit-learn: None (or NaN) among objects becomes NaN, and is refused as such.
        y = y.astype(np.float64)
        assert_all_finite(y, input_name="y")
    return y


def _check_n_features(estimator, X, reset):
    n = X.shape[1]
    if reset:
        estimator.n_features_in_ = n
        return
    expected = getattr(estimator, "n_features_in_", None)
    if expected is not None and n != expected:
        raise ValueError(
            f"X has {n} features, but {type(estimator).__name__} is expecting {expected} "
            "features as input."
        )


def _check_feature_names(estimator, X, reset):
    names = X.feature_names
    if reset:
        if names is not None:
            estimator.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        return
    fitted = getattr(estimator, "feature_names_in_", None)
    if fitted is None or names is None:
        return
    if len(fitted) != len(names) or (np.asarray(fitted) != np.asarray(names)).any():
        raise ValueError(
            "The feature names should match those that were passed during fit.\n"
            f"Seen at fit: {list(fitted)[:10]}; seen now: {list(names)[:10]}."
        )

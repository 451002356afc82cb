"""Standardization that keeps a NormalizedMatrix factorized: FactorizedStandardScaler."""

import numpy as np
from sklearn.preprocessing import StandardScaler
from ..utils._sklearn_compat import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..utils._sklearn_compat import (
    _check_sample_weight,
    _get_output_config,
    _handle_zeros_in_scale,
    _is_constant_feature,
)

from ..base import FactorizedMixin, falls_back_to_cpu, reads_fitted_model, to_host
from .._sklearn_path import fit_joined, record_host_dispatch
from ..cost import OperationProfile
from ..utils import TrainingMatrix, is_normalized, validate_input
from ..utils._moments import centered_moments, merge_moments


class FactorizedStandardScaler(FactorizedMixin, StandardScaler):
    """Standardize features by removing the mean and scaling to unit variance.

    The counterpart of :class:`sklearn.preprocessing.StandardScaler`, which it extends. On a
    NormalizedMatrix the means come from factorized column sums and the variances from the
    sources centered before they are squared, so a column whose mean is large against its
    spread keeps its digits (no join), and
    :meth:`transform` returns a NormalizedMatrix again: the scaling is applied to each source
    column and the centering is kept as a rank-one offset, ``(X - mean_) / scale_``. So a
    ``Pipeline([scaler, model])`` stays factorized end to end. Plain numpy or scipy.sparse input
    behaves exactly like :class:`~sklearn.preprocessing.StandardScaler`.

    Parameters
    ----------
    copy : bool, default=True
        Plain input only: whether to scale a copy. A NormalizedMatrix is never modified: its
        sources are shared or scaled into new arrays.
    with_mean : bool, default=True
        Center before scaling. Sparse plain input with ``with_mean=True`` raises, as in
        scikit-learn; a NormalizedMatrix (even with sparse sources) is centered exactly through
        its offset.
    with_std : bool, default=True
        Scale to unit variance.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        How :meth:`fit` computes the statistics of a NormalizedMatrix: over the sources, or on
        the joined matrix. ``transform`` keeps a NormalizedMatrix factorized either way.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    scale_ : ndarray of shape (n_features,) or None
        Per-feature scaling, ``sqrt(var_)``, with constant features (by scikit-learn's
        rule) given 1.
    mean_ : ndarray of shape (n_features,) or None
        Mean of each feature; None with ``with_mean=False`` and ``with_std=False``.
    var_ : ndarray of shape (n_features,) or None
        Variance of each feature; None with ``with_std=False``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        From ``X.feature_names`` of a NormalizedMatrix, or the columns of a DataFrame.
    n_samples_seen_ : int or float
        Number of samples (sum of weights with ``sample_weight``).
    decision_ : sklearn_ilargi.cost.Decision
        The dispatcher's verdict for the fit, with its reasons (``decision_.explain()``).
    strategy_ : {"factorized", "materialized"}
        The path the fit took.
    backend_ : {"cpu", "gpu"}
        Where the fit ran.

    See Also
    --------
    sklearn.preprocessing.StandardScaler : The scikit-learn counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedStandardScaler, NormalizedMatrix
    >>> fact = np.array([[1.0], [2.0], [3.0], [4.0]])
    >>> dim = np.array([[10.0], [30.0]])
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(4), [0, 1, 1, 0]])
    >>> scaler = FactorizedStandardScaler().fit(X)
    >>> scaler.mean_
    array([ 2.5, 20. ])
    >>> Z = scaler.transform(X)
    >>> Z
    NormalizedMatrix(shape=(4, 2), dtype=float64, blocks=2, device='cpu', shifted)
    >>> Z.materialize().round(3)
    array([[-1.342, -1.   ],
           [-0.447,  1.   ],
           [ 0.447,  1.   ],
           [ 1.342, -1.   ]])
    """

    _parameter_constraints: dict = {
        **StandardScaler._parameter_constraints,
        "strategy": [StrOptions({"auto", "factorized", "materialized"})],
        "backend": [StrOptions({"auto", "cpu", "gpu"})],
    }

    def __init__(self, *, copy=True, with_mean=True, with_std=True, strategy="auto",
                 backend="auto"):
        super().__init__(copy=copy, with_mean=with_mean, with_std=with_std)
        self.strategy = strategy
        self.backend = backend

    def fit(self, X, y=None, sample_weight=None):
        """Compute the mean and standard deviation of each feature.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data; the statistics of a NormalizedMatrix come from its sources.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Individual weights for each sample.

        Returns
        -------
        self : FactorizedStandardScaler
            The fitted scaler.
        """
        self._reset()
        return self.partial_fit(X, y, sample_weight)

    def partial_fit(self, X, y=None, sample_weight=None):
        """Update the mean and variance with one more batch of samples.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            One more batch of training data.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Individual weights for each sample.

        Returns
        -------
        self : FactorizedStandardScaler
            The updated scaler.
        """
        return self._partial_fit(X, y, sample_weight)

    @falls_back_to_cpu
    def _partial_fit(self, X, y, sample_weight, *, backend):
        if not is_normalized(X):
            record_host_dispatch(self, X)
            return super().partial_fit(X, y, sample_weight)
        self._validate_params()
        first_call = not hasattr(self, "n_samples_seen_")
        X = validate_input(self, X, reset=first_call)
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, np.empty((X.shape[0], 0)),
                                           dtype=np.float64)
        # Centering needs the join dense (a NormalizedMatrix's join can always be centered);
        # scikit-learn's variances of dense data take a copy of it.
        profile = OperationProfile(rmatmul=2, dense_join=self.with_mean, sklearn_fit=True,
                                   join_copies=int(self.with_mean or self.with_std),
                                   name=type(self).__name__)
        prepared = self._dispatch(X, profile, backend=backend)
        if not is_normalized(prepared):
            fit_joined(super().partial_fit, self, prepared, y, weights)
            return self
        self._update_statistics(prepared, weights, first_call)
        return self

    def _update_statistics(self, X, weights, first_call):
        n_features = X.shape[1]
        count = float(X.shape[0]) if weights is None else float(weights.sum())
        if not (self.with_mean or self.with_std):
            seen = X.shape[0] if weights is None else float(X.shape[0])
            previous = 0 if first_call else self.n_samples_seen_
            self.mean_ = None
            self.var_ = None
            self.n_samples_seen_ = (np.int64 if weights is None else np.float64)(previous + seen)
            self.scale_ = None
            return
        mean, m2 = _mean_and_sum_of_squares(X, weights)
        total = count
        if not (first_call or self.n_samples_seen_ == 0):
            seen = float(self.n_samples_seen_)
            old_m2 = self.var_ * seen if self.var_ is not None else np.zeros(n_features)
            none = np.zeros(0)  # no targets
            total, mean, _, m2, _ = merge_moments((seen, self.mean_, none, old_m2, none),
                                                  (count, mean, none, m2, none))
        self.n_samples_seen_ = np.float64(total)
        self.mean_ = mean
        if self.with_std:
            self.var_ = m2 / total if total > 0 else np.zeros(n_features)
            self.scale_ = _scale_from_variance(self.var_, self.mean_, total)
        else:
            self.var_ = None
            self.scale_ = None

    @reads_fitted_model
    def transform(self, X, copy=None):
        """Standardize: ``(X - mean_) / scale_``.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The data to standardize.
        copy : bool, default=None
            Plain input only, as in scikit-learn.

        Returns
        -------
        NormalizedMatrix, ndarray, sparse matrix or DataFrame
            A NormalizedMatrix for a NormalizedMatrix input (still factorized: its sources
            scaled per column, the centering as an offset), unless an output container is
            set (``set_output(transform="pandas")``, or scikit-learn's ``transform_output``):
            then that container, of the joined result, with ``get_feature_names_out()`` as
            its columns.
        """
        if not is_normalized(X):
            return super().transform(X, copy=copy)
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        out = X
        if self.with_mean:
            out = out - self.mean_.astype(X.dtype, copy=False)
        if self.with_std:
            out = out / self.scale_.astype(X.dtype, copy=False)
        if _get_output_config("transform", self)["dense"] != "default":
            # A DataFrame holds the joined values; set_output's wrapper builds it from these.
            return to_host(out.materialize(sparse=False))
        return out

    @reads_fitted_model
    def inverse_transform(self, X, copy=None):
        """Undo the standardization: ``X * scale_ + mean_``.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Standardized data.
        copy : bool, default=None
            Plain input only, as in scikit-learn.

        Returns
        -------
        NormalizedMatrix, ndarray or sparse matrix
            The data in the original units; a NormalizedMatrix stays factorized.
        """
        if not is_normalized(X):
            return super().inverse_transform(X, copy=copy)
        check_is_fitted(self)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        out = X
        if self.with_std:
            out = out * self.scale_.astype(X.dtype, copy=False)
        if self.with_mean:
            out = out + self.mean_.astype(X.dtype, copy=False)
        return out


def _mean_and_sum_of_squares(X, weights):
    """Weighted column means and sums of squared deviations, over the sources.

    The deviations are those of the centered matrix (``TrainingMatrix.centered``: the mean
    subtracted from the dense sources before they are squared, and given to the rows they
    miss), so a column whose mean is large against its spread keeps its digits.
    """
    weights = None if weights is None else weights.astype(X.dtype)
    # One pass over partitioned data (see centered_moments).
    moments = centered_moments(TrainingMatrix(X), np.empty((X.shape[0], 0)), weights,
                               diagonal=True)
    return moments.x_mean, moments.gram


def _scale_from_variance(var, mean, n_samples):
    """``sqrt(var)`` with constant features given a scale of 1: scikit-learn's rule, which
    counts as constant a variance within the rounding bound of its two-pass algorithm."""
    constant = _is_constant_feature(var, mean, n_samples)
    return _handle_zeros_in_scale(np.sqrt(var), copy=False, constant_mask=constant)


__all__ = ["FactorizedStandardScaler"]

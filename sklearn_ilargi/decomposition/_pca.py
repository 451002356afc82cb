"""Principal component analysis over the sources: FactorizedPCA."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import PCA
from sklearn.utils.sparsefuncs import mean_variance_axis
from sklearn.utils.validation import check_is_fitted

from ..base import FactorizedMixin, falls_back_to_cpu, reads_fitted_model, to_host
from .._sklearn_path import fit_joined, record_host_dispatch
from ..utils import TrainingMatrix, is_normalized, validate_input
from ..utils._moments import centered_moments
from ..utils._sklearn_compat import StrOptions
from ._pca_solvers import (
    CLOSED_FORMS,
    TRUNCATED,
    check_truncated_components,
    pca_profile,
    resolve_svd_solver,
    truncated_svd,
)

try:  # Minka's MLE of the dimension; scikit-learn's own, to pick exactly the same rank.
    from ..utils._sklearn_compat import _infer_dimension
except ImportError:  # pragma: no cover - moved in a future scikit-learn
    _infer_dimension = None


class FactorizedPCA(FactorizedMixin, PCA):
    """Principal component analysis over the sources of a NormalizedMatrix.

    The counterpart of :class:`sklearn.decomposition.PCA`, which it extends. On a
    NormalizedMatrix, ``svd_solver="full"`` and ``"covariance_eigh"`` decompose the ``c x c``
    covariance ``Xc.T @ Xc / (n - 1)``, whose gram is computed over the sources, each dense
    one centered by its columns' means before it is squared (unlike scikit-learn's
    ``covariance_eigh``, which subtracts ``n mean mean^T`` from ``X.T @ X``, a column whose
    mean is large against its spread keeps its digits). ``"arpack"`` and ``"randomized"``
    run scikit-learn's truncated solvers on the products ``Xc @ V`` and ``Xc.T @ U`` of the
    centered matrix, factorized, and never form the covariance: they are the solvers for wide
    data (one-hot dimensions of many ids). ``"auto"`` follows scikit-learn's rule for dense
    input. Signs follow scikit-learn's convention (the largest entry of each component is
    positive). Plain numpy or scipy.sparse input takes scikit-learn's own path.

    Parameters
    ----------
    n_components : int, float, "mle" or None, default=None
        As in :class:`~sklearn.decomposition.PCA`: a count, a share of variance to explain
        (``0 < n_components < 1``), Minka's MLE, or all (``min(n_samples, n_features)``).
    copy : bool, default=True
        As in scikit-learn, for plain input; a NormalizedMatrix is never modified.
    whiten : bool, default=False
        Scale the projections to unit variance (divide by the square roots of
        ``explained_variance_``).
    svd_solver : {"auto", "full", "covariance_eigh", "arpack", "randomized"}, default="auto"
        As in scikit-learn. ``"auto"`` is scikit-learn's rule for dense input on the joined
        shape: ``"covariance_eigh"`` for at most 1000 features and at least 10 times as many
        samples, ``"full"`` for at most 500 of both (or ``n_components="mle"``),
        ``"randomized"`` for an integer ``n_components`` below 80% of the smaller side, else
        ``"full"``. ``"full"`` and ``"covariance_eigh"`` need the dense covariance: a fit
        whose covariance does not fit in memory is refused before it is allocated (a
        ``MemoryError``; the truncated solvers need no covariance). On the materialized path
        scikit-learn's PCA runs on the join, except that "auto" and "covariance_eigh"
        decompose the centered covariance there too.
    tol : float, default=0.0
        Tolerance of ``svd_solver="arpack"``.
    iterated_power : int or "auto", default="auto"
        Power iterations of ``svd_solver="randomized"``.
    n_oversamples : int, default=10
        Extra random vectors of ``svd_solver="randomized"``.
    power_iteration_normalizer : {"auto", "QR", "LU", "none"}, default="auto"
        Normalizer of the power iterations of ``svd_solver="randomized"``.
    random_state : int, RandomState instance or None, default=None
        Seeds ``svd_solver="arpack"`` and ``"randomized"``.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        Whether to train on the sources or on the joined matrix; "auto" lets the
        dispatcher choose.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The principal axes, by decreasing explained variance.
    explained_variance_ : ndarray of shape (n_components,)
        Variance along each component.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Share of the total variance along each component.
    singular_values_ : ndarray of shape (n_components,)
        Singular values of the centered data for the components.
    mean_ : ndarray of shape (n_features,)
        Mean of each feature over the training samples.
    n_components_ : int
        Number of components kept.
    n_samples_ : int
        Number of training samples.
    noise_variance_ : float
        Mean of the variances left out (probabilistic PCA's noise).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has feature names (``NormalizedMatrix.feature_names`` or a
        DataFrame's columns).
    decision_ : sklearn_ilargi.cost.Decision
        The dispatcher's verdict for the fit, with its reasons (``decision_.explain()``).
    strategy_ : {"factorized", "materialized"}
        The path the fit took.
    backend_ : {"cpu", "gpu"}
        Where the fit ran.

    See Also
    --------
    sklearn.decomposition.PCA : The scikit-learn counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedPCA, NormalizedMatrix
    >>> fact = np.array([[1.0], [2.0], [3.0], [4.0], [5.0]])
    >>> dim = np.array([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(5), [0, 1, 2, 1, 0]])
    >>> pca = FactorizedPCA(n_components=2, strategy="factorized").fit(X)
    >>> pca.explained_variance_ratio_.round(4)
    array([0.6579, 0.3317])
    >>> pca.transform(X).shape
    (5, 2)
    """

    _parameter_constraints: dict = {
        **PCA._parameter_constraints,
        "strategy": [StrOptions({"auto", "factorized", "materialized"})],
        "backend": [StrOptions({"auto", "cpu", "gpu"})],
    }

    def __init__(self, n_components=None, *, copy=True, whiten=False, svd_solver="auto",
                 tol=0.0, iterated_power="auto", n_oversamples=10,
                 power_iteration_normalizer="auto", random_state=None, strategy="auto",
                 backend="auto"):
        super().__init__(
            n_components=n_components, copy=copy, whiten=whiten, svd_solver=svd_solver,
            tol=tol, iterated_power=iterated_power, n_oversamples=n_oversamples,
            power_iteration_normalizer=power_iteration_normalizer, random_state=random_state,
        )
        self.strategy = strategy
        self.backend = backend

    def fit(self, X, y=None):
        """Fit the model on ``X``.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data; a NormalizedMatrix is decomposed without joining it (unless the
            dispatcher chooses to).
        y : None
            Ignored.

        Returns
        -------
        self : FactorizedPCA
            The fitted estimator.
        """
        if not is_normalized(X):
            record_host_dispatch(self, X)
            return super().fit(X)
        self._fit_normalized(X)
        return self

    def fit_transform(self, X, y=None):
        """Fit the model on ``X`` and project ``X`` on the components.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The training samples projected on the components.
        """
        if not is_normalized(X):
            record_host_dispatch(self, X)
            return super().fit_transform(X)
        self._fit_normalized(X)
        return self.transform(X)

    @falls_back_to_cpu
    def _fit_normalized(self, X, *, backend):
        self._validate_params()
        X = validate_input(self, X, reset=True)
        n_samples, n_features = X.shape
        n_components = _check_n_components(self.n_components, self.svd_solver,
                                           n_samples, n_features)
        solver = resolve_svd_solver(self.svd_solver, n_components, X.shape)
        if solver in TRUNCATED:
            n_components = check_truncated_components(n_components, solver, X.shape)
        # PCA centers the data: the materialized path runs scikit-learn's PCA on the join
        # (CSR for the truncated solvers where the sources are sparse), except for the
        # covariance, which scikit-learn centers after the product (``X.T @ X - n mean
        # mean^T``) and this module before it, and the randomized SVD of a CSR join, which
        # scikit-learn refuses.
        own_covariance = solver in CLOSED_FORMS and self.svd_solver in ("auto",
                                                                         "covariance_eigh")
        profile = pca_profile(solver, n_components, X.shape, tol=self.tol,
                              iterated_power=self.iterated_power,
                              n_oversamples=self.n_oversamples, name=type(self).__name__,
                              own_covariance=own_covariance)
        prepared = self._dispatch(X, profile, backend=backend)
        self._fit_svd_solver = solver
        if not is_normalized(prepared) and not own_covariance:
            if solver == "randomized" and TrainingMatrix(prepared).is_sparse:
                self._fit_truncated_over_products(to_host(prepared), solver, n_components)
                self.backend_ = "cpu"
                return
            fit_joined(super().fit, self, prepared)
            return
        if solver in TRUNCATED:
            self._fit_truncated_over_products(prepared, solver, n_components)
            return
        dtype = X.dtype
        # One pass over partitioned data (see centered_moments).
        moments = centered_moments(TrainingMatrix(prepared), np.empty((n_samples, 0)), None)
        mean, scatter = moments.x_mean, moments.gram
        if n_samples == 1:
            # One sample minus its mean is exactly zero: what is left is the gram's rounding.
            scatter[:] = 0.0
        squares, vectors = np.linalg.eigh(scatter)
        # Largest first; ties keep eigh's order (for one sample: the unit vectors in order,
        # scikit-learn's components there).
        order = np.argsort(-squares, kind="stable")
        squares = np.maximum(squares[order], 0.0)  # the squared singular values of X - mean
        components = _flip_signs(vectors[:, order].T)
        # One sample has no variance to estimate: 0 / 0 is nan, with a RuntimeWarning, as
        # scikit-learn's PCA gives it.
        variances = squares / (n_samples - 1)
        total = variances.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = variances / total
        n_components = _select_n_components(n_components, variances, ratios, n_samples)
        if n_components < min(n_features, n_samples):
            noise = variances[n_components:].mean() if n_components < len(variances) else 0.0
        else:
            noise = 0.0
        self.mean_ = mean.astype(dtype)
        self.n_samples_ = n_samples
        self.n_components_ = n_components
        self.components_ = components[:n_components].astype(dtype)
        self.explained_variance_ = variances[:n_components].astype(dtype)
        self.explained_variance_ratio_ = ratios[:n_components].astype(dtype)
        self.singular_values_ = np.sqrt(squares[:n_components]).astype(dtype)
        self.noise_variance_ = float(noise)

    def _fit_truncated_over_products(self, X, solver, n_components):
        """``svd_solver="arpack"`` or ``"randomized"`` on the products of the centered ``X``
        (a NormalizedMatrix, or the CSR join on the host), as scikit-learn's
        ``PCA._fit_truncated``: no covariance is formed."""
        n_samples, n_features = X.shape
        dtype = X.dtype
        matrix = TrainingMatrix(X)
        if sp.issparse(X):
            # The CSR join: scikit-learn's statistics of sparse input, whose variances are
            # taken around the means (centering the rank-one way would cancel the digits).
            mean, variances = mean_variance_axis(X, axis=0)
            mean = np.asarray(mean, dtype=np.float64)
            centered = matrix.centered(mean)
            total = float(np.sum(variances, dtype=np.float64)) * n_samples / (n_samples - 1)
        else:
            mean = matrix.column_sums() / n_samples
            centered = matrix.centered(mean)
            total = centered.column_sums_of_squares().sum() / (n_samples - 1)
        values, components = truncated_svd(
            centered, n_components, solver, tol=self.tol, iterated_power=self.iterated_power,
            n_oversamples=self.n_oversamples,
            power_iteration_normalizer=self.power_iteration_normalizer,
            random_state=self.random_state,
        )
        variances = values**2 / (n_samples - 1)
        rank = min(n_samples, n_features)
        self.mean_ = mean.astype(dtype)
        self.n_samples_ = n_samples
        self.n_components_ = n_components
        self.components_ = _flip_signs(components).astype(dtype)
        self.explained_variance_ = variances.astype(dtype)
        self.explained_variance_ratio_ = (variances / total).astype(dtype)
        self.singular_values_ = values.astype(dtype)
        self.noise_variance_ = (float((total - variances.sum()) / (rank - n_components))
                                if n_components < rank else 0.0)

    @reads_fitted_model
    def transform(self, X):
        """Project ``X`` on the components: ``(X - mean_) @ components_.T``.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The samples projected on the components (whitened with ``whiten=True``).
        """
        if not is_normalized(X):
            return super().transform(X)
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        projection = self.components_.T.astype(X.dtype, copy=False)
        out = TrainingMatrix(X).matmul(projection, lazy=True)  # Dask rows stay Dask
        out = out - self.mean_ @ projection
        if self.whiten:
            scale = np.sqrt(self.explained_variance_)
            scale[scale < np.finfo(scale.dtype).eps] = np.finfo(scale.dtype).eps
            out = out / scale
        return out

    @reads_fitted_model
    def score_samples(self, X):
        """Log-likelihood of each sample under the probabilistic PCA model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples,)
            Log-likelihood of each sample.
        """
        if not is_normalized(X):
            return super().score_samples(X)
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        precision = self.get_precision().astype(np.float64)
        # x^T P x as a squared norm: P = Q diag(l) Q^T, so x^T P x = ||x^T Q sqrt(l)||^2.
        values, vectors = np.linalg.eigh((precision + precision.T) / 2)
        root = vectors * np.sqrt(np.maximum(values, 0.0))
        centered = X - self.mean_.astype(X.dtype)
        projected = np.asarray(TrainingMatrix(centered).matmul(root.astype(X.dtype)),
                               dtype=np.float64)
        sign, logdet = np.linalg.slogdet(precision)
        logdet = logdet if sign > 0 else -np.inf
        n_features = X.shape[1]
        return -0.5 * (projected**2).sum(axis=1) - 0.5 * (
            n_features * np.log(2.0 * np.pi) - logdet
        )

    @reads_fitted_model
    def score(self, X, y=None):
        """Average log-likelihood of the samples under the model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.
        y : None
            Ignored.

        Returns
        -------
        float
            Mean of :meth:`score_samples`.
        """
        if not is_normalized(X):
            return super().score(X, y)
        return float(np.mean(self.score_samples(X)))

    # scikit-learn's inverse_transform, with CuPy input read on the host.
    inverse_transform = reads_fitted_model(PCA.inverse_transform)


def _check_n_components(n_components, svd_solver, n_samples, n_features):
    """``n_components`` checked against the data like scikit-learn does."""
    limit = min(n_samples, n_features)
    if n_components is None:
        return limit - 1 if svd_solver == "arpack" else limit
    if isinstance(n_components, str):  # "mle"
        if n_samples < n_features:
            raise ValueError(
                "n_components='mle' is only supported if n_samples >= n_features"
            )
        return n_components
    if isinstance(n_components, numbers.Integral):
        if not 0 <= n_components <= limit:
            raise ValueError(
                f"n_components={n_components} must be between 0 and "
                f"min(n_samples, n_features)={limit} with svd_solver={svd_solver!r}"
            )
        return int(n_components)
    return n_components  # a share of variance in (0, 1), checked by the parameter constraints


def _select_n_components(n_components, variances, ratios, n_samples):
    if n_components == "mle":
        if _infer_dimension is None:  # pragma: no cover
            raise ValueError("n_components='mle' needs scikit-learn's _infer_dimension.")
        return int(_infer_dimension(variances, n_samples))
    if isinstance(n_components, numbers.Real) and 0 < n_components < 1.0:
        cumulative = np.cumsum(ratios)
        return int(np.searchsorted(cumulative, n_components, side="right") + 1)
    return int(n_components)


def _flip_signs(components):
    """Make the largest-magnitude entry of every component positive (scikit-learn's rule)."""
    if components.size == 0:
        return components
    largest = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), largest])
    signs[signs == 0] = 1.0
    return components * signs[:, None]


__all__ = ["FactorizedPCA"]

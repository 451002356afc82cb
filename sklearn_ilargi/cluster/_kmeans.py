"""K-means (Lloyd) whose distances and centroids run over the sources: FactorizedKMeans."""

import functools
import numbers
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin
from sklearn.base import TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from ..utils._sklearn_compat import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted

from ..utils._sklearn_compat import (
    _check_sample_weight,
    _kmeans_single_elkan,
    _kmeans_single_lloyd,
    _openmp_effective_n_threads,
)

from ..base import FactorizedMixin, falls_back_to_cpu, reads_fitted_model
from .._config import get_config
from ..cost import OperationProfile, expected_iterations
from ..utils import TrainingMatrix, is_normalized, one_blas_thread, validate_input
from ..utils._progress import IterationProgress


class FactorizedKMeans(FactorizedMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                       ClusterMixin, BaseEstimator):
    """K-means clustering (Lloyd's algorithm) over the sources of a NormalizedMatrix.

    The counterpart of :class:`sklearn.cluster.KMeans`. On a NormalizedMatrix every Lloyd
    iteration reads ``X`` twice, and both stay factorized: each sample's closest center, the
    argmin of ``||c||^2 - 2 x.c``, through ``X @ C.T`` taken a slice of samples at a time and
    reduced at once (as scikit-learn's compiled Lloyd does: the ``n x k`` distances are never
    held, and ``||x||^2`` is computed once per fit), and the new centroids through group
    sums ``X.T @ R`` of the one-hot assignments, which never build ``R``. On a star with one
    dimension, a sample whose fact part cannot overturn its dimension row's closest center
    (an exact bound, with room for rounding) takes that center without its distances to the
    others: clusters that the dimension separates leave most samples so once the centers
    settle (the ``pruned_argmin_min_share`` setting). Where a dimension's distances to the
    centers outgrow the cache, the iterations take the samples in the order of that
    dimension's rows, so that each slice of samples reads a band of them that stays in the
    cache (a copy of the fact table in that order; the ``locality_order_min_bytes``
    setting). Plain numpy or
    scipy.sparse input (and the joined matrix of the materialized path) runs scikit-learn's
    own compiled iterations, Lloyd's or Elkan's, from these seeds. Dense data is centered
    first, as scikit-learn does, a NormalizedMatrix in its dense sources, so that the
    distances keep the digits of a column whose mean is large against its spread; sparse
    data, and the columns of a NormalizedMatrix's sparse sources, are not, as scikit-learn
    leaves sparse data (their distances are then those of the sparse join, ties included).

    From the same initial centers, the result is scikit-learn's (same labels, centers and
    inertia up to rounding). The k-means++ seeding is scikit-learn's
    (:func:`sklearn.cluster.kmeans_plusplus`), but it walks the samples in an order that
    depends on their values only, so that a weighted sample and repeated samples give the
    same seeds: its draws are scikit-learn's on the samples in that order, and differ from
    scikit-learn's on ``X`` for the same ``random_state``.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters (and of centers).
    init : {"k-means++", "random"}, callable or array-like of shape (n_clusters, n_features), \
default="k-means++"
        A callable is called as ``init(X, n_clusters, random_state)`` (``X`` may be a
        NormalizedMatrix) and returns the centers.
    n_init : "auto" or int, default="auto"
        Runs from different seeds; the one with the lowest inertia is kept. "auto": 1 for
        "k-means++" or given centers, 10 for "random" or a callable.
    max_iter : int, default=300
        Most Lloyd iterations of one run.
    tol : float, default=1e-4
        Stop once the centers move by less than ``tol`` times the mean feature variance
        (sum of squared moves), or once no label changes.
    verbose : int, default=0
        Report every iteration, with its inertia and an estimate of the time left (through
        tqdm where it is installed). 0 defers to the ``verbose`` setting.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialization; an int makes fits reproducible.
    copy_x : bool, default=True
        Kept for compatibility: plain input is never modified in place.
    algorithm : {"lloyd", "elkan"}, default="lloyd"
        scikit-learn's Elkan iterations for plain input (the same result); a NormalizedMatrix
        runs Lloyd's either way.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        Whether to train on the sources or on the joined matrix; "auto" lets the
        dispatcher choose.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The centers of the best run.
    labels_ : ndarray of shape (n_samples,)
        Index of each training sample's center.
    inertia_ : float
        Sum of (weighted) squared distances of the samples to their closest center.
    n_iter_ : int
        Iterations of the best run.
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
    sklearn.cluster.KMeans : The scikit-learn counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedKMeans, NormalizedMatrix
    >>> fact = np.array([[0.0], [0.2], [5.0], [5.2], [0.1], [5.1]])
    >>> dim = np.array([[0.0], [9.0]])
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(6), [0, 0, 1, 1, 0, 1]])
    >>> km = FactorizedKMeans(n_clusters=2, random_state=0, strategy="factorized").fit(X)
    >>> sorted(km.cluster_centers_.round(2).tolist())
    [[0.1, 0.0], [5.1, 9.0]]
    >>> km.predict(X)[[0, 2]] != km.predict(X)[0]
    array([False,  True])
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "random"}), callable, "array-like"],
        "n_init": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "copy_x": ["boolean"],
        "algorithm": [StrOptions({"lloyd", "elkan"})],
        "strategy": [StrOptions({"auto", "factorized", "materialized"})],
        "backend": [StrOptions({"auto", "cpu", "gpu"})],
    }

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, verbose=0, random_state=None, copy_x=True, algorithm="lloyd",
                 strategy="auto", backend="auto"):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.copy_x = copy_x
        self.algorithm = algorithm
        self.strategy = strategy
        self.backend = backend

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, sample_weight=None):
        """Compute the k-means clustering.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data; a NormalizedMatrix is clustered without joining it (unless the
            dispatcher chooses to).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample in the centroids and the inertia.

        Returns
        -------
        self : FactorizedKMeans
            The fitted estimator.
        """
        return self._fit(X, sample_weight)

    @falls_back_to_cpu
    def _fit(self, X, sample_weight, *, backend):
        self._validate_params()
        X = validate_input(self, X, accept_sparse="csr", order="C",
                           accept_large_sparse=False)
        n_samples = X.shape[0]
        sample_weight = _check_sample_weight(sample_weight, np.empty((n_samples, 0)),
                                             dtype=np.float64, ensure_non_negative=True)
        if n_samples < self.n_clusters:
            raise ValueError(
                f"n_samples={n_samples} should be >= n_clusters={self.n_clusters}."
            )
        init = self.init
        n_init = self._n_init()
        if _is_array(init):
            init = check_array(init, dtype=[np.float64, np.float32], copy=True)
            _check_centers(init, self.n_clusters, X.shape[1])
        iterations = expected_iterations(self.max_iter, self.tol)
        profile = OperationProfile(matmul=n_init * iterations, rmatmul=n_init * iterations,
                                   width=self.n_clusters, iterations=iterations,
                                   max_iter=self.max_iter, join_copies=1,
                                   source_copies=1,
                                   name=type(self).__name__)
        # BLAS's threads cost more than they bring on small data (one_thread_cells), and
        # still spinning after the seeds' products, they slow scikit-learn's compiled
        # iterations, which run on OpenMP's threads.
        with one_blas_thread(X.shape[0] * X.shape[1] < get_config()["one_thread_cells"]):
            prepared = self._dispatch(X, profile, backend=backend)
            # Over a NormalizedMatrix, the iterations run their slices on the backend's
            # threads: BLAS's, left spinning by the means' products, would slow the first ones.
            with one_blas_thread(is_normalized(prepared)):
                matrix, offset = _solver_matrix(prepared, sample_weight)
            random_state = check_random_state(self.random_state)
            tol = self.tol * _mean_variance(matrix, sample_weight) if self.tol > 0 else 0.0
            # Drawn once per fit: every run's seeds sample along the same order.
            order = _canonical_order(matrix, random_state) if isinstance(init, str) else None

            best = None
            # The samples as the loop below takes them, reordered once for every run.
            in_order = functools.cache(lambda: _in_locality_order(matrix, sample_weight,
                                                                  self.n_clusters))
            for run in range(n_init):
                centers = self._initial_centers(matrix, sample_weight, offset, X, init,
                                                random_state, order)
                description = type(self).__name__ + (f" run {run + 1}/{n_init}" if n_init > 1
                                                     else "")
                with IterationProgress(self.verbose, self.max_iter, description) as progress:
                    if progress.enabled or not _compiled_lloyd_runs_on(matrix):
                        labels, inertia, centers, n_iter = _lloyd_in_locality_order(
                            *in_order(), centers, self.max_iter, tol, progress)
                    else:
                        labels, inertia, centers, n_iter = _compiled_lloyd(
                            matrix, sample_weight, centers, self.max_iter, tol, self.algorithm)
                if best is None or (inertia < best[1] and not _same_clustering(
                        labels, best[0], self.n_clusters)):
                    best = (labels, inertia, centers, n_iter)
            labels, inertia, centers, n_iter = best
            distinct = int(np.count_nonzero(np.bincount(labels, minlength=self.n_clusters)))
            if distinct < self.n_clusters:
                warnings.warn(
                    f"Number of distinct clusters ({distinct}) found smaller than n_clusters "
                    f"({self.n_clusters}). Possibly due to duplicate points in X.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
            self.cluster_centers_ = (centers + offset).astype(matrix.dtype)
            self._n_features_out = self.cluster_centers_.shape[0]
            self.labels_ = labels
            self.inertia_ = float(inertia)
            self.n_iter_ = n_iter
        return self

    def _n_init(self):
        if self.n_init != "auto":
            if _is_array(self.init) and self.n_init != 1:
                warnings.warn(
                    "Explicit initial center position passed: performing only one init in "
                    f"{type(self).__name__} instead of n_init={self.n_init}.",
                    RuntimeWarning,
                    stacklevel=3,
                )
                return 1
            return self.n_init
        if (isinstance(self.init, str) and self.init == "k-means++") or _is_array(self.init):
            return 1
        return 10

    def _initial_centers(self, matrix, sample_weight, offset, X, init, random_state, order):
        """Initial centers in the space of the solver (``X - offset``, see
        :func:`_solver_matrix`); ``order`` is :func:`_canonical_order`'s, for a drawn init."""
        if _is_array(init):
            return init.astype(np.float64) - offset
        if callable(init):
            centers = check_array(init(X, self.n_clusters, random_state=random_state),
                                  dtype=[np.float64, np.float32], copy=True)
            _check_centers(centers, self.n_clusters, X.shape[1])
            return centers.astype(np.float64) - offset
        if init == "random":
            weights = sample_weight[order]
            chosen = random_state.choice(len(order), size=self.n_clusters, replace=False,
                                         p=weights / weights.sum())
            return _rows(matrix, order[chosen])
        return _kmeans_plusplus(matrix, sample_weight, self.n_clusters, random_state, order)

    # ------------------------------------------------------------------ predict & co
    def _check_test_data(self, X):
        check_is_fitted(self)
        return validate_input(self, X, accept_sparse="csr", reset=False, order="C",
                              accept_large_sparse=False)

    @reads_fitted_model
    def predict(self, X):
        """Index of the closest cluster center of each sample.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Index of each sample's closest center.
        """
        X = self._check_test_data(X)
        centers = self.cluster_centers_.astype(np.float64)
        return _closest_centers(TrainingMatrix(X), centers)[0]

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fit, then return the label of each training sample.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample in the centroids and the inertia.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Index of each training sample's center (``labels_``).
        """
        return self.fit(X, sample_weight=sample_weight).labels_

    @reads_fitted_model
    def transform(self, X):
        """Euclidean distance of each sample to each cluster center.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples, n_clusters)
            Distance of each sample to each center.
        """
        X = self._check_test_data(X)
        return np.sqrt(self._squared_distances(X)).astype(X.dtype, copy=False)

    def fit_transform(self, X, y=None, sample_weight=None):
        """Fit, then return the distances of the training samples to the centers.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample in the centroids and the inertia.

        Returns
        -------
        ndarray of shape (n_samples, n_clusters)
            Distance of each training sample to each center.
        """
        return self.fit(X, sample_weight=sample_weight).transform(X)

    @reads_fitted_model
    def score(self, X, y=None, sample_weight=None):
        """Opposite of the (weighted) inertia of ``X`` with respect to the centers.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples to score.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample's squared distance; None weighs every sample 1.

        Returns
        -------
        float
            Minus the sum of the (weighted) squared distances to the closest centers.
        """
        X = self._check_test_data(X)
        sample_weight = _check_sample_weight(sample_weight, np.empty((X.shape[0], 0)),
                                             dtype=np.float64, ensure_non_negative=True)
        distances = self._squared_distances(X)
        closest = distances.min(axis=1)
        return -float(sample_weight @ closest)

    def _squared_distances(self, X):
        centers = self.cluster_centers_.astype(np.float64)
        if not is_normalized(X):
            return _exact_squared_distances(X, centers)
        matrix = TrainingMatrix(X)
        cross = _dot_centers(matrix, centers)
        out = (matrix.row_norms_squared()[:, None] - 2.0 * cross
               + (centers**2).sum(axis=1)[None, :])
        return np.maximum(out, 0.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# ---------------------------------------------------------------------- the solver
def _solver_matrix(X, sample_weight):
    """The data as the solver sees it, ``X - offset``, and the offset.

    Dense columns are centered on their weighted mean, as scikit-learn centers dense data, so
    that ``||x||^2 - 2 x.c + ||c||^2`` keeps the digits of a column whose mean is large
    against its spread: a plain array is copied, and a NormalizedMatrix has the mean
    subtracted from its dense sources (a copy of each) and given to the rows they miss (see
    ``TrainingMatrix.centered``). Sparse columns are not centered, as scikit-learn leaves
    sparse data: a sparse array would turn dense, and the columns of a NormalizedMatrix's
    sparse sources (one-hots, mostly, whose mean is small against their spread) then give
    the distances of scikit-learn's K-means on the sparse join, to its rounding, ties
    included, with no rank-one correction in every product.

    Returns
    -------
    matrix : TrainingMatrix
    offset : ndarray of shape (n_features,)
        Zeros where ``X`` is not centered.
    """
    matrix = TrainingMatrix(X)
    total = sample_weight.sum()
    weights = sample_weight if total > 0 else np.ones(X.shape[0])
    mean = matrix.column_sums(weights) / weights.sum()
    mean[matrix.sparse_columns()] = 0.0
    if not mean.any():
        return matrix, mean
    return matrix.centered(mean), mean


def _dot_centers(matrix, centers):
    """``X @ centers.T`` as an (n_samples, k) float64 array, computed in ``X``'s precision."""
    centers = np.asarray(centers, dtype=matrix.dtype)
    return np.asarray(matrix.matmul(centers.T), dtype=np.float64).reshape(matrix.shape[0], -1)


def _rows(matrix, indices):
    """The rows ``indices`` of the data as a dense float64 array (a few rows)."""
    return np.asarray(matrix.rows(indices), dtype=np.float64)


def _mean_variance(matrix, sample_weight):
    """Mean over features of the weighted variance (the scale of ``tol``)."""
    total = sample_weight.sum()
    if total <= 0:
        return 0.0
    spread = float(sample_weight @ matrix.row_norms_squared()) / total
    if not isinstance(matrix.X, np.ndarray):  # not centered by _solver_matrix
        weights = sample_weight.astype(matrix.dtype)
        mean = np.asarray(matrix.rmatmul(weights), dtype=np.float64) / total
        spread -= float(mean @ mean)
    return max(spread, 0.0) / matrix.shape[1]


def _canonical_order(matrix, random_state):
    """An order of the samples that depends on their values only.

    Samples are sorted by a random projection, so equal rows end up next to each other
    wherever they were: sampling along this order picks the same row for a weight of 3
    as for three copies of it.
    """
    direction = random_state.standard_normal(matrix.shape[1])
    key = _dot_centers(matrix, direction[None, :])[:, 0]
    return np.argsort(key)  # equal rows have equal keys: their order among them is moot


def _exact_squared_distances(X, centers, chunk=2048):
    """``||x - c||^2`` from the differences themselves, for a plain matrix.

    Exact for a sample that sits on a center (the norm formula leaves rounding noise of the
    size of ``||x||^2 * eps`` there, which a square root magnifies).
    """
    out = np.empty((X.shape[0], centers.shape[0]))
    for start in range(0, X.shape[0], chunk):
        rows = X[start:start + chunk]
        rows = rows.toarray() if sp.issparse(rows) else rows
        out[start:start + chunk] = cdist(np.asarray(rows, dtype=np.float64), centers,
                                         "sqeuclidean")
    return out


def _closest_centers(matrix, centers):
    """Label of each sample's closest center, and its partial distance to it.

    The argmin over the centers of ``||c||^2 - 2 x.c``, the squared distance less
    ``||x||^2`` (which does not change the argmin), as scikit-learn's Lloyd takes it: a slice
    of samples at a time, never all the ``n x k`` distances at once
    (``TrainingMatrix.argmin_of_product``).

    Returns
    -------
    labels : ndarray of int32 of shape (n_samples,)
    partial : ndarray of shape (n_samples,)
        ``||c||^2 - 2 x.c`` for each sample's closest center ``c``.
    """
    return matrix.argmin_of_product(-2.0 * centers.T, (centers**2).sum(axis=1))


def _closest_labels(matrix, centers):
    """The labels of :func:`_closest_centers` alone.

    Without the distances, on a NormalizedMatrix, most samples of clusters that a dimension
    separates take their label from their dimension row by an exact bound, without their
    distances to the other centers (``TrainingMatrix.argmin_of_product`` with
    ``values=False``).
    """
    return matrix.argmin_of_product(-2.0 * centers.T, (centers**2).sum(axis=1),
                                    values=False)[0]

def _partial_distances_to(matrix, centers, labels):
    """``||c||^2 - 2 x.c`` for the center ``c`` of each sample's label (whichever is
    closest), through the whole product ``X @ C.T``."""
    cross = _dot_centers(matrix, centers)[np.arange(matrix.shape[0]), labels]
    return (centers**2).sum(axis=1)[labels] - 2.0 * cross


def _inertia(matrix, sample_weight, partial):
    """Weighted sum of the squared distances ``||x||^2 + partial``."""
    return float(sample_weight @ np.maximum(matrix.row_norms_squared() + partial, 0.0))


def _compiled_lloyd_runs_on(matrix):
    """Whether scikit-learn's compiled iterations take the solver's matrix: a plain host
    array, or CSR with 32-bit indices, with no offset."""
    X = matrix.X
    if matrix.offset is not None:
        return False
    if sp.issparse(X):
        return X.format == "csr" and X.indices.dtype == X.indptr.dtype == np.int32
    return isinstance(X, np.ndarray)


def _compiled_lloyd(matrix, sample_weight, centers, max_iter, tol, algorithm):
    """One run of scikit-learn's own iterations (``_kmeans_single_lloyd`` or ``_elkan``, as
    its ``KMeans`` runs them, on its threads) from ``centers``, with ``tol`` absolute.

    The same stopping rules and relocation of empty clusters as :func:`_lloyd`.
    """
    X = matrix.X if sp.issparse(matrix.X) else np.ascontiguousarray(matrix.X)
    single = _kmeans_single_elkan if algorithm == "elkan" else _kmeans_single_lloyd
    labels, inertia, centers, n_iter = single(
        X, sample_weight.astype(X.dtype), np.ascontiguousarray(centers, dtype=X.dtype),
        max_iter=max_iter, verbose=False, tol=tol, n_threads=_openmp_effective_n_threads())
    return labels, inertia, centers.astype(np.float64), n_iter


def _in_locality_order(matrix, sample_weight, n_clusters):
    """``(matrix, sample_weight, order)``: the samples in ``TrainingMatrix.locality_order``
    for ``n_clusters`` centers and that order, where the matrix has one (the distances to
    the centers then gather from a band of the largest dimension's that stays in the
    cache); else as they are, and None."""
    order = matrix.locality_order(n_clusters)
    if order is None:
        return matrix, sample_weight, None
    return matrix.reordered(order), sample_weight[order], order


def _lloyd_in_locality_order(matrix, sample_weight, order, centers, max_iter, tol,
                             progress):
    """:func:`_lloyd` over ``matrix`` and ``sample_weight``, the samples in ``order`` (of
    :func:`_in_locality_order`, or None), the labels put back in the samples' order."""
    labels, inertia, centers, n_iter = _lloyd(matrix, sample_weight, centers, max_iter, tol,
                                              progress, order)
    return (labels if order is None else _put_back(labels, order)), inertia, centers, n_iter


def _lloyd(matrix, sample_weight, centers, max_iter, tol, progress, order=None):
    """Lloyd's iterations from ``centers``; scikit-learn's stopping rules.

    Each iteration reads ``X`` twice, through its products: once for the labels, fused
    with their argmin (:func:`_closest_centers`), and once for the new centers, by group
    sums. ``progress`` (an :class:`~sklearn_ilargi.utils._progress.IterationProgress`) is told
    of every iteration, with its inertia, and of why the iterations stopped. ``order``: the
    samples' own order, where ``matrix`` holds them as ``X[order]`` (an empty cluster takes
    the farthest samples as in that order).
    """
    n_clusters = centers.shape[0]
    # The weights of the sums, none where every weight is 1 (the same sums, without products).
    summed = None if np.all(sample_weight == 1) else sample_weight.astype(matrix.dtype)
    strict, previous = False, None
    for iteration in range(max_iter):
        labels = _closest_labels(matrix, centers)
        # One comparison with the labels before serves the sums and the strict convergence.
        moved = None if previous is None else np.flatnonzero(labels != previous.labels)
        previous = _cluster_sums(matrix, labels, summed, n_clusters, previous, moved)
        # The distances to the labels' centers, where an empty cluster or the progress
        # report needs them: the same labels again, with their entries.
        partial = functools.cache(lambda centers=centers: _closest_centers(matrix, centers)[1])
        new_centers = _update_centers(matrix, labels, partial, previous.sums.copy(),
                                      previous.weights, sample_weight, order)
        if progress.enabled:
            progress(inertia=_inertia(matrix, sample_weight, partial()))
        shift = ((new_centers - centers) ** 2).sum()
        labeled_by, centers = centers, new_centers
        if moved is not None and not len(moved):
            strict = True
            progress.note(f"Converged at iteration {iteration}: strict convergence.")
            break
        if shift <= tol:
            progress.note(f"Converged at iteration {iteration}: center shift {shift} within "
                          f"tolerance {tol}.")
            break
    if not strict:
        labels, partial = _closest_centers(matrix, centers)
    elif not np.array_equal(centers, labeled_by):
        # The labels stayed, but a relocated empty cluster moved its center after them.
        partial = _partial_distances_to(matrix, centers, labels)
    else:
        partial = partial()
    return labels, _inertia(matrix, sample_weight, partial), centers, iteration + 1


class _ClusterSums(NamedTuple):
    """What an iteration's labels sum to, kept for the next one (:func:`_cluster_sums`)."""

    labels: np.ndarray
    #: (n_clusters, n_features): the (weighted) column sums of each cluster.
    sums: np.ndarray
    #: (n_clusters,): the weight of each cluster, an exact count where unweighted.
    weights: np.ndarray


def _cluster_sums(matrix, labels, weights, n_clusters, previous=None, moved=None):
    """The (weighted) column sums and the weight of each cluster, through group sums
    (``weights`` None: unweighted), as a :class:`_ClusterSums`.

    ``previous`` is the :class:`_ClusterSums` of the iteration before, and ``moved`` the
    samples whose label changed since. Where at most the ``incremental_sums_max_share``
    setting of the samples moved, only those are summed, added to their new cluster and taken
    from their old one (their rows copied once, ``TrainingMatrix.compact_rows``, then summed
    by each labelling); else every sample is summed again. Unweighted, the clusters' weights
    follow the sums in integers, exact counts (an empty cluster is found by its count of 0,
    and needs no pass over the labels); weighted, they are summed again, so that no rounding
    residue hides an empty cluster.
    """
    if previous is not None and len(moved) <= (get_config()["incremental_sums_max_share"]
                                               * len(labels)):
        if not len(moved):
            return previous._replace(labels=labels)
        # The moved samples' rows, copied once (read out of order), summed by their new
        # labels and by their old ones.
        rows = matrix.compact_rows(moved)
        moved_weights = None if weights is None else weights[moved]
        to, came_from = labels[moved], previous.labels[moved]
        sums = (previous.sums + rows.group_sums(to, n_clusters, moved_weights).T
                - rows.group_sums(came_from, n_clusters, moved_weights).T)
        if weights is None:
            in_cluster = (previous.weights + np.bincount(to, minlength=n_clusters)
                          - np.bincount(came_from, minlength=n_clusters))
        else:
            in_cluster = _cluster_weights(labels, weights, n_clusters)
        return _ClusterSums(labels, sums, in_cluster)
    sums = matrix.group_sums(labels, n_clusters, weights).T
    return _ClusterSums(labels, sums, _cluster_weights(labels, weights, n_clusters))


def _cluster_weights(labels, weights, n_clusters):
    """The weight of each cluster: an integer count without ``weights``."""
    return np.bincount(labels, weights=weights, minlength=n_clusters)


def _update_centers(matrix, labels, partial, sums, in_cluster, weights, order=None):
    """The weighted means of the clusters from their ``sums`` (changed in place) and their
    weights ``in_cluster`` (see :class:`_ClusterSums`); empty clusters are relocated.
    ``partial()`` gives each sample's ``||c||^2 - 2 x.c`` to its center, asked for only
    where a cluster is empty.

    As scikit-learn's Lloyd does it: the samples farthest from their centers found the empty
    clusters (:func:`_farthest`; none if every sample sits on its center), and a cluster left
    without weight (an empty one, or one whose sample moved to found another) takes the
    center of the heaviest cluster, read as scikit-learn's loop over the clusters reads it:
    that cluster's mean if it comes first, its sums if not.
    """
    in_cluster = in_cluster.astype(np.float64)
    empty = np.flatnonzero(in_cluster == 0)
    far = _farthest(matrix, partial(), empty.size, order) if empty.size else []
    if len(far):
        points = _rows(matrix, far)
        for cluster, sample, point in zip(empty, far, points):
            weight = weights[sample]
            sums[labels[sample]] -= weight * point
            in_cluster[labels[sample]] -= weight
            sums[cluster] = weight * point
            in_cluster[cluster] = weight
    out = sums / np.where(in_cluster > 0, in_cluster, 1.0)[:, None]
    heaviest = int(np.argmax(in_cluster))
    for cluster in np.flatnonzero(in_cluster <= 0):
        out[cluster] = out[heaviest] if heaviest < cluster else sums[heaviest]
    return out


def _farthest(matrix, partial, n, order=None):
    """The ``n`` samples farthest from their centers, in the order scikit-learn takes them
    (``argpartition``'s, over the samples in their own order: ``matrix`` holds them as
    ``X[order]`` where ``order`` is given); none where every sample sits on its center.

    Distances equal to 12 digits count as equal: scikit-learn takes them from the
    differences themselves, where samples placed alike about their centers tie exactly (on
    discrete data, say), and ``||x||^2 + partial`` would break such ties by its rounding.
    """
    norms = matrix.row_norms_squared()
    distances = norms + partial
    top = distances.max()
    if top <= 1e-12 * norms.max():  # zero, to the rounding of ||x||^2 + partial
        return []
    if order is not None:  # the samples' own order, and back
        distances = _put_back(distances, order)
    far = np.argpartition(np.round(distances / top, 12), -n)[:-n - 1:-1]
    return far if order is None else _put_back(np.arange(len(order)), order)[far]


def _put_back(values, order):
    """``values`` of ``X[order]``'s rows, in the rows' own order."""
    out = np.empty_like(values)
    out[order] = values
    return out


def _kmeans_plusplus(matrix, sample_weight, n_clusters, random_state, order):
    """Greedy k-means++ seeding: scikit-learn's rule, ``sklearn.cluster.kmeans_plusplus``,
    over the samples in ``order`` (:func:`_canonical_order`).

    Its draws are scikit-learn's on ``X[order]``: the first center by
    ``random_state.choice`` with the weights, then ``2 + log(k)`` candidates per center by
    inverse transform sampling of the weighted squared distances, the one that lowers the
    potential most kept. Along ``order``, a draw depends on the samples' values and weights,
    not on their order in ``X`` or on how a weight is spelled (a weight of 2 or two copies).
    Each round takes the candidates' distances to every sample through one product
    ``X @ candidates.T``, a slice of samples at a time, with the candidates' rows gathered
    alone (a sparse source stays sparse).
    """
    weights = sample_weight[order]
    total = weights.sum()
    n_trials = 2 + int(np.log(n_clusters))
    centers = np.empty((n_clusters, matrix.shape[1]))
    first = random_state.choice(len(order), p=weights / total if total > 0 else None)
    centers[0] = _rows(matrix, order[[first]])[0]
    (closest,), (potential,) = _potentials(matrix, centers[:1], sample_weight)
    for c in range(1, n_clusters):
        candidates = order[_draws(weights * closest[order] if potential > 0 else weights,
                                  potential if potential > 0 else total, n_trials,
                                  random_state)]
        points = _rows(matrix, candidates)
        trial, potentials = _potentials(matrix, points, sample_weight, closest)
        best = int(np.argmin(potentials))
        centers[c] = points[best]
        closest, potential = trial[best], float(potentials[best])
    return centers


def _draws(masses, total, size, random_state):
    """``size`` positions drawn with probabilities ``masses / total``, as scikit-learn's
    k-means++ draws its candidates (inverse transform sampling of the cumulative sums)."""
    picks = np.searchsorted(np.cumsum(masses), random_state.uniform(size=size) * total)
    return np.minimum(picks, len(masses) - 1)


def _potentials(matrix, points, sample_weight, closest=None):
    """What each of a few points would make of the samples' squared distances to their
    closest center: ``min(closest, ||x - p||^2)`` (clipped at 0) for every sample, and its
    weighted sum, the potential.

    The product ``X @ points.T`` a slice of samples at a time, each slice reduced while it
    is in the cache.

    Returns
    -------
    distances : ndarray of shape (len(points), n_samples)
    potentials : ndarray of shape (len(points),)
    """
    norms = matrix.row_norms_squared()
    distances = np.empty((len(points), matrix.shape[0]))
    potentials = np.zeros(len(points))
    for start, stop, values in matrix.product_slices(-2.0 * points.T,
                                                     (points**2).sum(axis=1)):
        part = distances[:, start:stop]
        np.add(values, norms[start:stop], out=part)
        np.maximum(part, 0.0, out=part)
        if closest is not None:
            np.minimum(part, closest[start:stop], out=part)
        potentials += part @ sample_weight[start:stop]
    return distances, potentials


# ---------------------------------------------------------------------- helpers
def _is_array(init):
    return hasattr(init, "__array__") or isinstance(init, (list, tuple))


def _check_centers(centers, n_clusters, n_features):
    if centers.shape[0] != n_clusters:
        raise ValueError(
            f"The shape of the initial centers {centers.shape} does not match the number of "
            f"clusters {n_clusters}."
        )
    if centers.shape[1] != n_features:
        raise ValueError(
            f"The shape of the initial centers {centers.shape} does not match the number of "
            f"features of the data {n_features}."
        )


def _same_clustering(labels, other, n_clusters):
    """Whether two labelings are the same partition, up to the names of the clusters."""
    pairs = np.unique(labels.astype(np.int64) * n_clusters + other)
    return len(pairs) == len(np.unique(labels)) == len(np.unique(other))


__all__ = ["FactorizedKMeans"]

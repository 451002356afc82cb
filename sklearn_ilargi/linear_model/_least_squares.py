"""The body of a least-squares fit: declare the solvers, dispatch, solve.

A least-squares fit can run a closed form over the dense gram (exact, but a ``c x c`` array
and a ``c**3`` solve), LSQR or conjugate gradients over the products (a few vectors of
memory, iterations that grow with the conditioning) or gradient descent. With
``solver="auto"`` the fit declares the closed form first and an iterative solver after it,
and the dispatcher (:func:`sklearn_ilargi.cost.decide`) keeps the closed form only where
``X`` is narrow enough and its gram fits in memory (see
``sklearn_ilargi.cost._solvers.choose_solver``); ``decision_.explain()`` names the solver.
"""

from dataclasses import replace

import numpy as np

from ..cost import OperationProfile, expected_iterations
from ..utils import TrainingMatrix
from ..utils._partitioned import PartitionedTrainingMatrix
from ..utils._progress import IterationProgress
from ._base import least_squares_closed_form, least_squares_gd, weighted_means
from ._iterative import ITERATIVE_SOLVERS, least_squares_iterative

#: Iterations of gradient descent where ``max_iter`` is None.
GD_MAX_ITER = 1000


def fit_least_squares(estimator, X, y2, sample_weight, alpha, *, solvers, max_iter,
                      rcond=0.0, backend):
    """Dispatch and solve a least-squares fit; returns what the estimator's attributes need.

    Parameters
    ----------
    estimator : FactorizedLinearRegression or FactorizedRidge
        For ``fit_intercept``, ``tol``, ``learning_rate``, ``verbose`` and the dispatch.
    X, y2, sample_weight
        The validated input; ``y2`` is 2-D.
    alpha : ndarray of shape (n_targets,)
        Penalty per target.
    solvers : tuple of str
        The solvers the fit may run, in order of preference: one that the ``solver``
        parameter names, or for ``"auto"`` the closed form and then an iterative one.
        Names: ``"lstsq"`` or ``"cholesky"`` (the closed form), ``"lsqr"``,
        ``"sparse_cg"``, ``"gd"``.
    max_iter : int or None
        Most iterations of an iterative solver (per target for LSQR and conjugate
        gradients); None is each solver's default.
    rcond : float, default=0.0
        Relative singular-value cutoff of the closed form without penalty.
    backend : str
        What the fit's body got from :func:`~sklearn_ilargi.base.falls_back_to_cpu`.

    Returns
    -------
    coef, x_mean, y_mean : ndarray
        As :func:`~sklearn_ilargi.linear_model._base.least_squares_closed_form` returns them.
    n_iter : ndarray of int of shape (n_targets,)
        Iterations per target; 1 for the closed form (one direct solve).
    rank : int or None
        The rank of the (centered) gram for the closed form, None for the others.
    """
    name = type(estimator).__name__
    profiles = [replace(_profile(solver, X.shape, y2.shape[1], max_iter, estimator.tol, name),
                        join_copies=_join_copies(solver, estimator.fit_intercept))
                for solver in solvers]
    profile = replace(profiles[0], alternatives=tuple(profiles[1:]))
    matrix = TrainingMatrix(estimator._dispatch(X, profile, backend=backend))
    solver = estimator.decision_.solver
    n_targets = y2.shape[1]
    if solver in ("gd", *ITERATIVE_SOLVERS) or not isinstance(matrix,
                                                               PartitionedTrainingMatrix):
        # A Dask y (``check_fit_input(lazy_y=True)``) stays where it lives for the closed
        # form over partitions, which reads it with them; the other solvers read it whole.
        y2 = np.asarray(y2)
    if solver == "gd":
        max_iter = GD_MAX_ITER if max_iter is None else max_iter
        with IterationProgress(estimator.verbose, max_iter, name) as progress:
            coef, x_mean, y_mean, n_iter = least_squares_gd(
                matrix, y2, sample_weight, alpha, estimator.fit_intercept,
                learning_rate=estimator.learning_rate, max_iter=max_iter, tol=estimator.tol,
                progress=progress,
            )
        return coef, x_mean, y_mean, np.full(n_targets, n_iter, dtype=np.int32), None
    if solver in ITERATIVE_SOLVERS:
        x_mean, y_mean = weighted_means(matrix, y2, sample_weight, estimator.fit_intercept)
        total = n_targets * _iteration_limit(solver, X.shape, max_iter)
        with IterationProgress(estimator.verbose, total, name) as progress:
            coef, n_iter = least_squares_iterative(
                matrix, y2, sample_weight, alpha, x_mean, y_mean, solver=solver,
                tol=estimator.tol, max_iter=max_iter, progress=progress,
            )
        return coef, x_mean, y_mean, n_iter, None
    coef, x_mean, y_mean, rank = least_squares_closed_form(
        matrix, y2, sample_weight, alpha, estimator.fit_intercept, rcond=rcond
    )
    return coef, x_mean, y_mean, np.ones(n_targets, dtype=np.int32), rank


def _profile(solver, shape, n_targets, max_iter, tol, name):
    """The operations of one solver, for the cost model and the solver choice."""
    if solver == "gd":
        max_iter = GD_MAX_ITER if max_iter is None else max_iter
        iterations = expected_iterations(max_iter, tol)
        # The step size of learning_rate="auto" adds about 30 products each way where it
        # takes Lanczos over the products (see top_eigenvalue).
        return OperationProfile(matmul=iterations + 30, rmatmul=iterations + 31,
                                width=n_targets, iterations=iterations, max_iter=max_iter,
                                name=name, solver=solver)
    if solver in ITERATIVE_SOLVERS:
        limit = _iteration_limit(solver, shape, max_iter)
        iterations = expected_iterations(limit, tol)
        # One solve per target; each iteration one product each way, plus the start (and
        # the means).
        return OperationProfile(matmul=n_targets * (iterations + 1),
                                rmatmul=n_targets * (iterations + 2), width=1,
                                iterations=iterations, max_iter=limit, name=name,
                                solver=solver)
    return OperationProfile(gram=1, rmatmul=2, width=n_targets, name=name, solver=solver)


def _join_copies(solver, fit_intercept):
    """Dense copies of a dense join that ``solver`` makes: with an intercept, LSQR and
    conjugate gradients multiply a centered copy; the closed form takes its sums from slices
    of the rows, centered as they are read, and gradient descent corrects its products by
    the mean (see ``TrainingMatrix.centered``)."""
    return int(bool(fit_intercept) and solver in ITERATIVE_SOLVERS)


def _iteration_limit(solver, shape, max_iter):
    """The most iterations of one target's LSQR or conjugate-gradient solve: ``max_iter``,
    else scipy's default (``2 * n_features`` for LSQR, ``10`` times the size of the
    conjugate gradients' system, the smaller side of ``X``)."""
    if max_iter is not None:
        return int(max_iter)
    return 2 * shape[1] if solver == "lsqr" else 10 * min(shape)

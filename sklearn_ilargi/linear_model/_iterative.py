"""Least squares through products only: LSQR and conjugate gradients.

The solvers scikit-learn runs on sparse input (``LinearRegression`` takes LSQR, ``Ridge``
takes ``solver="lsqr"`` or ``"sparse_cg"``), with the same tolerances and the same handling
of the intercept and the weights: the data is centered by its weighted column means, and
each row of ``X - 1 mu^T`` and of ``y - y_mean`` is scaled by ``sqrt(sample_weight)``. They
reach ``X`` only through a :class:`~sklearn_ilargi.utils.TrainingMatrix` (``X @ v`` and
``X.T @ r``, factorized on a NormalizedMatrix), wrapped as a
:class:`scipy.sparse.linalg.LinearOperator`, so no ``c x c`` gram is ever formed: their
memory is that of a few vectors, however wide ``X`` is. Each target is one solve.

Centering goes through :meth:`TrainingMatrix.centered`, which subtracts the means from the
dense sources themselves (a column of ``1e7 +- 1`` keeps its digits) and keeps the rank-one
correction, scikit-learn's own on sparse input, for the sparse ones.
"""

import warnings

import numpy as np
import scipy.sparse.linalg
from sklearn.exceptions import ConvergenceWarning

from ..utils._sklearn_compat import _sparse_linalg_cg

#: The iterative least-squares solvers, by the name of the ``solver`` parameter.
ITERATIVE_SOLVERS = ("lsqr", "sparse_cg")


def least_squares_iterative(matrix, y, sample_weight, alpha, x_mean, y_mean, *, solver, tol,
                            max_iter=None, progress=None, coef_init=None):
    """(Ridge) least squares by LSQR or conjugate gradients, one solve per target.

    Minimizes ``||sqrt(w) ((X - 1 x_mean^T) b - (y - y_mean))||^2 + alpha ||b||^2`` for
    each column of ``y``, as scikit-learn's ``_solve_lsqr`` and ``_solve_sparse_cg`` do on
    sparse input.

    Parameters
    ----------
    matrix : TrainingMatrix
        The training matrix, without an offset.
    y : ndarray of shape (n_samples, n_targets)
    sample_weight : ndarray of shape (n_samples,)
    alpha : ndarray of shape (n_targets,)
        Penalty per target (``damp = sqrt(alpha)`` for LSQR); 0 is ordinary least squares,
        where LSQR, started at 0, converges to the minimum-norm solution.
    x_mean : ndarray of shape (n_features,)
        The weighted column means to center ``X`` by; zeros without an intercept.
    y_mean : ndarray of shape (n_targets,)
    solver : {"lsqr", "sparse_cg"}
        ``"lsqr"``: :func:`scipy.sparse.linalg.lsqr` with ``atol = btol = tol``.
        ``"sparse_cg"``: conjugate gradients with relative tolerance ``tol`` on the normal
        equations ``(A.T A + alpha I) b = A.T y``, or, where ``X`` has more columns than
        rows, on the kernel system ``(A A.T + alpha I) d = y`` with ``b = A.T d``.
    tol : float
    max_iter : int, default=None
        Most iterations per target; None is scipy's default (``2 * n_features`` for LSQR,
        ``10`` times the system's size for conjugate gradients).
    progress : IterationProgress, optional
        Told of every iteration.
    coef_init : ndarray of shape (n_features, n_targets), default=None
        Where each solve starts (a warm start: the solution at a nearby penalty); None
        starts at 0. Conjugate gradients on the kernel system start from the dual point
        ``d = (y - A coef_init) / alpha`` of that start, whose ``A.T d`` it is at the
        solution.

    Returns
    -------
    coef : ndarray of shape (n_features, n_targets)
    n_iter : ndarray of int of shape (n_targets,)
        Iterations of each target's solve.

    Warns
    -----
    ConvergenceWarning
        Where a solve stops at its iteration limit.
    """
    if solver not in ITERATIVE_SOLVERS:
        raise ValueError(f"solver must be one of {ITERATIVE_SOLVERS}, got {solver!r}.")
    centered = matrix.centered(x_mean) if np.any(x_mean) else matrix
    root = None if (sample_weight == 1).all() else np.sqrt(sample_weight)
    operator = _weighted_operator(centered, root, progress if solver == "lsqr" else None)
    targets = y - y_mean
    if root is not None:
        targets = targets * root[:, None]
    solve = _lsqr if solver == "lsqr" else _sparse_cg
    coef = np.empty((matrix.shape[1], y.shape[1]))
    n_iter = np.empty(y.shape[1], dtype=np.int32)
    for target in range(y.shape[1]):
        start = None if coef_init is None else coef_init[:, target]
        coef[:, target], n_iter[target] = solve(operator, targets[:, target], alpha[target],
                                                tol, max_iter, progress, start)
    return coef, n_iter


def _weighted_operator(centered, root, progress):
    """``diag(root) (X - 1 mu^T)`` as a LinearOperator (``root`` None: unit weights).

    ``progress``, where given, is told of every product ``A.T @ r``: LSQR runs one per
    iteration.
    """

    def matvec(vector):
        image = centered.matmul(np.ravel(vector))
        return image if root is None else root * image

    def rmatvec(vector):
        vector = np.ravel(vector)
        if progress is not None:
            progress()
        return centered.rmatmul(vector if root is None else root * vector)

    return scipy.sparse.linalg.LinearOperator(centered.shape, matvec=matvec,
                                              rmatvec=rmatvec, dtype=np.float64)


def _lsqr(operator, target, alpha, tol, max_iter, progress, start=None):
    """One LSQR solve, as scikit-learn's ``_solve_lsqr``: ``(coef, n_iter)``."""
    limit = 2 * operator.shape[1] if max_iter is None else max_iter
    coef, stop, n_iter = scipy.sparse.linalg.lsqr(operator, target, damp=np.sqrt(alpha),
                                                  atol=tol, btol=tol, iter_lim=limit,
                                                  x0=start)[:3]
    if stop == 7:  # LSQR's code for "the iteration limit was reached"
        _warn_not_converged("lsqr", limit)
    return coef, n_iter


def _sparse_cg(operator, target, alpha, tol, max_iter, progress, start=None):
    """One conjugate-gradient solve, as scikit-learn's ``_solve_sparse_cg``:
    ``(coef, n_iter)``; ``start`` is a first guess of ``coef`` (None: 0)."""
    n_rows, n_columns = operator.shape
    kernel = n_columns > n_rows  # the smaller system: rows, not columns

    def apply(vector):
        if kernel:
            return operator.matvec(operator.rmatvec(vector)) + alpha * vector
        return operator.rmatvec(operator.matvec(vector)) + alpha * vector

    size = n_rows if kernel else n_columns
    system = scipy.sparse.linalg.LinearOperator((size, size), matvec=apply, dtype=np.float64)
    right = target if kernel else operator.rmatvec(target)
    if start is not None and kernel:
        start = (target - operator.matvec(start)) / alpha if alpha > 0 else None
    limit = 10 * size if max_iter is None else max_iter
    iterations = []

    def count(_):
        iterations.append(1)
        if progress is not None:
            progress()

    solution, info = _sparse_linalg_cg(system, right, x0=start, rtol=tol, maxiter=limit,
                                       callback=count)
    if info < 0:
        raise ValueError(f"Conjugate gradients failed with error code {info}.")
    if info > 0:
        _warn_not_converged("sparse_cg", limit)
    coef = operator.rmatvec(solution) if kernel else solution
    return coef, len(iterations)


def _warn_not_converged(solver, limit):
    warnings.warn(
        f"The {solver} solver did not converge within {limit} iterations; increase max_iter "
        "or tol.",
        ConvergenceWarning,
    )

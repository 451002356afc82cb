"""Non-negative matrix factorization whose products run over the sources: FactorizedNMF."""

import numbers
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from ..utils._sklearn_compat import Interval, Options, StrOptions, _update_cdnmf_fast
from sklearn.utils.validation import check_array, check_is_fitted, check_non_negative

from .._config import get_config
from ..base import FactorizedMixin, falls_back_to_cpu, like_input, reads_fitted_model
from ..cost import OperationProfile, expected_iterations
from ..utils import TrainingMatrix, validate_input
from ..utils._progress import IterationProgress

_EPSILON = np.finfo(np.float32).eps  # scikit-learn's floor for the multiplicative updates
_INITS = ("random", "nndsvd", "nndsvda", "nndsvdar", "custom")


class FactorizedNMF(FactorizedMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                    BaseEstimator):
    """Non-negative matrix factorization ``X ~ W H`` over the sources of a NormalizedMatrix.

    The counterpart of :class:`sklearn.decomposition.NMF` for the Frobenius loss. Both solvers
    need ``X`` only through ``X @ H.T`` (the ``W`` update) and ``X.T @ W`` (the ``H`` update),
    which stay factorized; the rest works on ``n x k`` and ``k x c`` matrices. The
    reconstruction error comes from ``||X||^2 - 2 <W, X H^T> + <W^T W, H H^T>``.

    ``solver="cd"`` (coordinate descent) and ``solver="mu"`` (multiplicative updates) follow
    scikit-learn's updates, stopping rules and regularization, so from the same initial
    ``W`` and ``H`` the factorization is scikit-learn's. The NNDSVD initializations use the
    exact singular vectors (from the ``c x c`` gram) where scikit-learn uses a randomized SVD.

    ``transform`` solves for ``W`` with the components fixed, as scikit-learn does, and
    ``fit_transform(X)`` returns the ``W`` that the fit learnt with the components, as
    scikit-learn's does: the two differ where the iterations stop before they converge.

    Parameters
    ----------
    n_components : int, "auto" or None, default="auto"
        Rank ``k``. "auto": from ``W``/``H`` with ``init="custom"``, else ``n_features``
        (as None does).
    init : {"random", "nndsvd", "nndsvda", "nndsvdar", "custom"} or None, default=None
        None: "nndsvda" if ``k <= min(n_samples, n_features)``, else "random".
    solver : {"cd", "mu"}, default="cd"
        ``"cd"``: coordinate descent; ``"mu"``: multiplicative updates.
    beta_loss : "frobenius" or 2, default="frobenius"
        Only the Frobenius loss: the other beta-divergences need ``X / (W H)`` cell by cell,
        which has no factorized form.
    tol : float, default=1e-4
        Tolerance of the stopping condition, as in scikit-learn: ``"cd"`` stops once the
        projected gradient's norm falls below ``tol`` times its first value, ``"mu"`` once
        the error's decrease over ten iterations falls below ``tol`` times the initial error.
    max_iter : int, default=200
        Most iterations.
    random_state : int, RandomState instance or None, default=None
        Seeds the "random" and "nndsvdar" initializations and ``shuffle``.
    alpha_W : float, default=0.0
        Strength of the regularization of ``W`` (scaled by ``n_features``, as in
        scikit-learn).
    alpha_H : float or "same", default="same"
        Strength of the regularization of ``H`` (scaled by ``n_samples``); "same" takes
        ``alpha_W``.
    l1_ratio : float, default=0.0
        Share of L1 in the regularization: 0 is an L2 penalty, 1 an L1 penalty.
    verbose : int, default=0
        Report every iteration, with an estimate of the time left (through tqdm where it is
        installed). 0 defers to the ``verbose`` setting.
    shuffle : bool, default=False
        Randomize the order of the coordinates in the "cd" solver.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        Whether to train on the sources or on the joined matrix; "auto" lets the
        dispatcher choose.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The factor ``H``.
    n_components_ : int
        The rank ``k``.
    reconstruction_err_ : float
        Frobenius norm of ``X - W H`` at the end of the fit.
    n_iter_ : int
        Iterations of the fit.
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
    sklearn.decomposition.NMF : The scikit-learn counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedNMF, NormalizedMatrix
    >>> fact = np.array([[1.0], [2.0], [3.0], [1.0], [2.0], [3.0]])
    >>> dim = np.array([[1.0, 0.5], [0.2, 2.0]])
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(6), [0, 0, 0, 1, 1, 1]])
    >>> nmf = FactorizedNMF(n_components=2, init="nndsvda", max_iter=500, random_state=0)
    >>> W = nmf.fit_transform(X)
    >>> W.shape, nmf.components_.shape
    ((6, 2), (2, 3))
    >>> round(nmf.reconstruction_err_, 3)
    0.902
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left"), None,
                         StrOptions({"auto"})],
        "init": [StrOptions(set(_INITS)), None],
        "solver": [StrOptions({"cd", "mu"})],
        "beta_loss": [StrOptions({"frobenius"}), Options(numbers.Real, {2})],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "alpha_W": [Interval(numbers.Real, 0, None, closed="left")],
        "alpha_H": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"same"})],
        "l1_ratio": [Interval(numbers.Real, 0, 1, closed="both")],
        "verbose": ["verbose"],
        "shuffle": ["boolean"],
        "strategy": [StrOptions({"auto", "factorized", "materialized"})],
        "backend": [StrOptions({"auto", "cpu", "gpu"})],
    }

    def __init__(self, n_components="auto", *, init=None, solver="cd", beta_loss="frobenius",
                 tol=1e-4, max_iter=200, random_state=None, alpha_W=0.0, alpha_H="same",
                 l1_ratio=0.0, verbose=0, shuffle=False, strategy="auto", backend="auto"):
        self.n_components = n_components
        self.init = init
        self.solver = solver
        self.beta_loss = beta_loss
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.alpha_W = alpha_W
        self.alpha_H = alpha_H
        self.l1_ratio = l1_ratio
        self.verbose = verbose
        self.shuffle = shuffle
        self.strategy = strategy
        self.backend = backend

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, W=None, H=None):
        """Learn the factorization of ``X``.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Non-negative.
        y : None
            Ignored.
        W : array-like of shape (n_samples, n_components), default=None
            Initial ``W`` with ``init="custom"``.
        H : array-like of shape (n_components, n_features), default=None
            Initial ``H`` with ``init="custom"``.

        Returns
        -------
        self : FactorizedNMF
            The fitted estimator.
        """
        self._fit(X, W, H)
        return self

    def fit_transform(self, X, y=None, W=None, H=None):
        """Learn the factorization of ``X`` and return its ``W``.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Non-negative training data.
        y : None
            Ignored.
        W : array-like of shape (n_samples, n_components), default=None
            Initial ``W`` with ``init="custom"``.
        H : array-like of shape (n_components, n_features), default=None
            Initial ``H`` with ``init="custom"``.

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
            The training samples' factor, learnt jointly with the components.
        """
        return like_input(self._fit(X, W, H), X)

    @falls_back_to_cpu
    def _fit(self, X, W, H, *, backend):
        """Fit; returns the learnt ``W`` (a host array)."""
        self._validate_params()
        X = validate_input(self, X, accept_sparse=("csr", "csc"))
        _check_non_negative(X)
        if self.solver == "mu" and self.init == "nndsvd":
            warnings.warn(
                "The multiplicative update ('mu') solver cannot update zeros present in the "
                "initialization, and so leads to poorer results when used jointly with "
                "init='nndsvd'. You may try init='nndsvda' or init='nndsvdar' instead.",
                UserWarning,
                stacklevel=3,
            )
        n_components = self._rank(X, H)
        iterations = expected_iterations(self.max_iter, self.tol)
        profile = OperationProfile(matmul=iterations, rmatmul=iterations, width=n_components,
                                   iterations=iterations, max_iter=self.max_iter,
                                   name=type(self).__name__)
        matrix = TrainingMatrix(self._dispatch(X, profile, backend=backend))
        if self.init == "custom":
            W, H = _check_custom(W, H, n_components, X)
        else:
            if W is not None or H is not None:
                warnings.warn(
                    "When init!='custom', provided W or H are ignored. Set  init='custom' "
                    "to use them as initialization.",
                    RuntimeWarning,
                    stacklevel=3,
                )
            W, H = _initialize(matrix, n_components, self.init, self.random_state)
        W, H, n_iter = self._solve(matrix, W, H, update_H=True)
        self.reconstruction_err_ = _reconstruction_error(matrix, W, H)
        self.n_components_ = H.shape[0]
        self._n_features_out = self.n_components_
        self.components_ = H
        self.n_iter_ = n_iter
        return W

    def _rank(self, X, H):
        n_samples, n_features = X.shape
        if self.n_components in (None, "auto"):
            if self.init == "custom" and H is not None:
                n_components = np.shape(H)[0]
            else:
                n_components = n_features
        else:
            n_components = self.n_components
        if self.init not in (None, "random", "custom") and (
                n_components > min(n_samples, n_features)):
            raise ValueError(
                f"init = '{self.init}' can only be used when n_components <= "
                "min(n_samples, n_features)"
            )
        return n_components

    def _regularization(self, shape):
        n_samples, n_features = shape
        alpha_H = self.alpha_W if self.alpha_H == "same" else self.alpha_H
        return (
            n_features * self.alpha_W * self.l1_ratio,
            n_samples * alpha_H * self.l1_ratio,
            n_features * self.alpha_W * (1.0 - self.l1_ratio),
            n_samples * alpha_H * (1.0 - self.l1_ratio),
        )

    def _solve(self, matrix, W, H, update_H):
        l1_W, l1_H, l2_W, l2_H = self._regularization(matrix.shape)
        description = type(self).__name__ + ("" if update_H else " transform")
        with IterationProgress(self.verbose, self.max_iter, description) as progress:
            if self.solver == "cd":
                W, H, n_iter = _coordinate_descent(
                    matrix, W, H, self.tol, self.max_iter, (l1_W, l2_W), (l1_H, l2_H),
                    update_H, self.shuffle, self.random_state, progress,
                )
            else:
                W, H, n_iter = _multiplicative_update(
                    matrix, W, H, self.tol, self.max_iter, (l1_W, l2_W), (l1_H, l2_H),
                    update_H, progress,
                )
        if n_iter == self.max_iter and self.tol > 0:
            warnings.warn(
                f"Maximum number of iterations {self.max_iter} reached. Increase it to "
                "improve convergence.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return W, H, n_iter

    # ------------------------------------------------------------------ transform
    @reads_fitted_model
    def transform(self, X):
        """``W`` for ``X`` with the components fixed.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Non-negative.

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
            The factor that best reconstructs ``X`` as ``W @ components_``.
        """
        check_is_fitted(self)
        X = validate_input(self, X, accept_sparse=("csr", "csc"), reset=False)
        _check_non_negative(X)
        matrix = TrainingMatrix(X)
        H = self.components_
        k = H.shape[0]
        if self.solver == "mu":
            W = np.full((X.shape[0], k), np.sqrt(matrix.mean() / k), dtype=H.dtype)
        else:
            W = np.zeros((X.shape[0], k), dtype=H.dtype)
        W, _, _ = self._solve(matrix, W, H, update_H=False)
        return W

    @reads_fitted_model
    def inverse_transform(self, X):
        """Back to the data space: ``X @ components_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_components)
            Transformed data (``W``).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The reconstruction ``X @ components_``.
        """
        check_is_fitted(self)
        X = check_array(X, accept_sparse=("csr", "csc"))
        out = X @ self.components_
        return out.toarray() if sp.issparse(out) else np.asarray(out)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


# ---------------------------------------------------------------------- the data
def _xht(matrix, H, out=None):
    """``X @ H.T`` (n x k), in ``X``'s precision.

    Where ``X`` is a plain host array, the product is written into ``out`` if given: the
    previous iteration's, reused, as a fresh ``n x k`` array would cost the first touch of its
    memory in every iteration.
    """
    Ht = np.ascontiguousarray(H.T, dtype=matrix.dtype)
    if out is not None and isinstance(matrix.X, np.ndarray) and matrix.offset is None:
        return np.matmul(matrix.X, Ht, out=out)
    return matrix.matmul(Ht)


def _xtw(matrix, W):
    """``X.T @ W`` (c x k), in ``X``'s precision."""
    return matrix.rmatmul(np.ascontiguousarray(W, dtype=matrix.dtype))


def _reconstruction_error(matrix, W, H, xht=None):
    """``||X - W H||_F``; directly for a dense array, else from the traces
    ``||X||^2 - 2 <W, X H^T> + <W^T W, H H^T>`` (``xht`` is ``X @ H.T`` if known)."""
    if isinstance(matrix.X, np.ndarray):
        # A slice of rows at a time: ``X - W H``, as large as ``X``, is never held whole.
        def squares(start, stop, rows):
            residual = (rows - W[start:stop] @ H).astype(np.float64, copy=False).ravel()
            return np.array(residual @ residual)

        return float(np.sqrt(matrix.sum_over_row_slices(squares)))
    xht = _xht(matrix, H) if xht is None else xht
    squared_norm = float(np.sum(matrix.row_norms_squared(), dtype=np.float64))
    value = (squared_norm - 2.0 * float(np.sum(W * xht, dtype=np.float64))
             + float(np.sum((W.T @ W) * (H @ H.T), dtype=np.float64)))
    return float(np.sqrt(max(value, 0.0)))


# ---------------------------------------------------------------------- initialization
def _initialize(matrix, n_components, init, random_state):
    n_samples, n_features = matrix.shape
    dtype = matrix.dtype
    if init is None:
        init = "nndsvda" if n_components <= min(n_samples, n_features) else "random"
    if init == "random":
        avg = np.sqrt(matrix.mean() / n_components)
        rng = check_random_state(random_state)
        H = avg * rng.standard_normal(size=(n_components, n_features)).astype(dtype, copy=False)
        W = avg * rng.standard_normal(size=(n_samples, n_components)).astype(dtype, copy=False)
        return np.abs(W), np.abs(H)
    U, S, V = _leading_singular_triplets(matrix, n_components)
    W, H = _nndsvd(U, S, V)
    if init == "nndsvda":
        avg = matrix.mean()
        W[W == 0] = avg
        H[H == 0] = avg
    elif init == "nndsvdar":
        rng = check_random_state(random_state)
        avg = matrix.mean()
        W[W == 0] = abs(avg * rng.standard_normal(size=int((W == 0).sum())) / 100)
        H[H == 0] = abs(avg * rng.standard_normal(size=int((H == 0).sum())) / 100)
    return W.astype(dtype), H.astype(dtype)


def _leading_singular_triplets(matrix, k):
    """The top ``k`` singular triplets of ``X``: from the top ``k`` eigenvectors of its gram
    (LAPACK's ``syevr`` on that subset; a full decomposition costs ``c^3`` FLOPs), or, where
    ``X`` is wider than the ``closed_form_max_columns`` setting (the dense gram of a one-hot
    ``X`` takes ``8 c^2`` bytes), from ARPACK's ``svds`` over the products ``X @ v`` and
    ``X.T @ u``."""
    if matrix.shape[1] > get_config()["closed_form_max_columns"] and k < min(matrix.shape):
        return _truncated_triplets(matrix, k)
    n_columns = matrix.shape[1]
    values, vectors = scipy.linalg.eigh(matrix.gram(), subset_by_index=(n_columns - k,
                                                                        n_columns - 1))
    order = np.argsort(values)[::-1]
    S = np.sqrt(np.maximum(values[order], 0.0))
    V = vectors[:, order].T
    projected = _xht(matrix, V).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        U = np.where(S > 0, projected / S, 0.0)
    return U, S, V


def _truncated_triplets(matrix, k):
    """The top ``k`` singular triplets of ``X`` by ``svds``, largest first; its start vector
    is fixed, so that the initialization is the same in every fit."""
    operator = scipy.sparse.linalg.LinearOperator(
        matrix.shape, dtype=np.float64,
        matvec=lambda v: _as_float64(matrix.matmul(np.ravel(v).astype(matrix.dtype))),
        rmatvec=lambda u: _as_float64(matrix.rmatmul(np.ravel(u).astype(matrix.dtype))),
    )
    U, S, V = scipy.sparse.linalg.svds(operator, k=k, random_state=0)
    order = np.argsort(S)[::-1]
    return U[:, order], S[order], V[order]


def _as_float64(a):
    return np.asarray(a, dtype=np.float64)


def _nndsvd(U, S, V, eps=1e-6):
    """Boutsidis and Gallopoulos' NNDSVD: each triplet's dominant non-negative part."""
    W = np.zeros_like(U)
    H = np.zeros_like(V)
    W[:, 0] = np.sqrt(S[0]) * np.abs(U[:, 0])
    H[0] = np.sqrt(S[0]) * np.abs(V[0])
    for j in range(1, len(S)):
        u, v = U[:, j], V[j]
        positive = (np.maximum(u, 0), np.maximum(v, 0))
        negative = (-np.minimum(u, 0), -np.minimum(v, 0))
        norms_p = [np.linalg.norm(a) for a in positive]
        norms_n = [np.linalg.norm(a) for a in negative]
        if norms_p[0] * norms_p[1] > norms_n[0] * norms_n[1]:
            (a, b), (na, nb) = positive, norms_p
        else:
            (a, b), (na, nb) = negative, norms_n
        scale = np.sqrt(S[j] * na * nb)
        with np.errstate(divide="ignore", invalid="ignore"):
            W[:, j] = np.nan_to_num(scale * a / na)
            H[j] = np.nan_to_num(scale * b / nb)
    W[W < eps] = 0
    H[H < eps] = 0
    return W, H


def _check_custom(W, H, n_components, X):
    n_samples, n_features = X.shape
    if W is None or H is None:
        raise ValueError("init='custom' needs both W and H.")
    out = []
    for A, shape, whom in ((H, (n_components, n_features), "NMF (input H)"),
                           (W, (n_samples, n_components), "NMF (input W)")):
        A = check_array(A, dtype=None)
        if A.shape != shape:
            raise ValueError(
                f"Array with wrong shape passed to {whom}. Expected {shape}, but got "
                f"{A.shape}."
            )
        check_non_negative(A, whom)
        out.append(A)
    H, W = out
    if H.dtype != X.dtype or W.dtype != X.dtype:
        raise TypeError(
            f"H and W should have the same dtype as X. Got H.dtype = {H.dtype} and "
            f"W.dtype = {W.dtype}."
        )
    return W.copy(), H.copy()


def _check_non_negative(X):
    """scikit-learn's check, for any ``X``: a NormalizedMatrix finds its smallest cell over
    its sources, on their device (see ``NormalizedMatrix.min``)."""
    if TrainingMatrix(X).min() < 0:
        raise ValueError("Negative values in data passed to NMF (input X)")


# ---------------------------------------------------------------------- solvers
def _multiplicative_update(matrix, W, H, tol, max_iter, reg_W, reg_H, update_H, progress):
    """Lee and Seung's updates for the Frobenius loss, with scikit-learn's schedule.

    ``progress`` (an :class:`~sklearn_ilargi.utils._progress.IterationProgress`) is told of
    every iteration, with the error where it is computed (every 10th).
    """
    (l1_W, l2_W), (l1_H, l2_H) = reg_W, reg_H
    xht = _xht(matrix, H)
    error_at_init = _reconstruction_error(matrix, W, H, xht)
    previous_error = error_at_init
    for n_iter in range(1, max_iter + 1):
        if xht is None:
            xht = _xht(matrix, H)
        denominator = W @ (H @ H.T)
        if l1_W > 0:
            denominator += l1_W
        if l2_W > 0:
            denominator = denominator + l2_W * W
        denominator[denominator == 0] = _EPSILON
        W = W * (xht / denominator)
        if update_H:
            numerator = _xtw(matrix, W).T
            denominator = (W.T @ W) @ H
            if l1_H > 0:
                denominator += l1_H
            if l2_H > 0:
                denominator = denominator + l2_H * H
            denominator[denominator == 0] = _EPSILON
            H = H * (numerator / denominator)
            xht = None
        if tol > 0 and n_iter % 10 == 0:
            if xht is None and not isinstance(matrix.X, np.ndarray):
                xht = _xht(matrix, H)
            error = _reconstruction_error(matrix, W, H, xht)
            progress(error=error)
            with np.errstate(divide="ignore", invalid="ignore"):
                change = np.float64(previous_error - error) / error_at_init
            if change < tol:
                break
            previous_error = error
        else:
            progress()
    return W, H, n_iter


def _coordinate_descent(matrix, W, H, tol, max_iter, reg_W, reg_H, update_H, shuffle,
                        random_state, progress):
    """Cyclic coordinate descent (Cichocki and Phan), with scikit-learn's schedule.

    ``progress`` (an :class:`~sklearn_ilargi.utils._progress.IterationProgress`) is told of
    every iteration, with the violation relative to the first one's.
    """
    # Row-major, as scikit-learn's compiled sweep updates them (in place).
    W = np.array(W, order="C")
    Ht = np.array(H.T, order="C")
    rng = check_random_state(random_state)
    violation_init = xht = None
    for n_iter in range(1, max_iter + 1):
        xht = _xht(matrix, Ht.T, out=xht)
        violation = _cd_pass(W, Ht, xht, *reg_W, shuffle, rng)
        if update_H:
            violation += _cd_pass(Ht, W, _xtw(matrix, W), *reg_H, shuffle, rng)
        if n_iter == 1:
            violation_init = violation
        if violation_init == 0:
            progress(violation=0.0)
            break
        progress(violation=violation / violation_init)
        if violation / violation_init <= tol:
            progress.note(f"Converged at iteration {n_iter}")
            break
    return W, np.ascontiguousarray(Ht.T), n_iter


def _cd_pass(W, Ht, xht, l1, l2, shuffle, rng):
    """One sweep over the columns of ``W`` (in place); returns the projected-gradient norm.

    scikit-learn's ``_update_coordinate_descent`` with ``X @ Ht`` given (``xht``, factorized
    where ``X`` is a NormalizedMatrix): the regularization enters through ``Ht.T @ Ht`` and
    ``xht``, and scikit-learn's compiled sweep does the rest.
    """
    k = Ht.shape[1]
    hht = (Ht.T @ Ht).astype(W.dtype, copy=False)
    if l2 != 0.0:
        hht.flat[:: k + 1] += l2
    xht = np.asarray(xht, dtype=W.dtype)
    if l1 != 0.0:
        xht = xht - l1
    order = rng.permutation(k) if shuffle else np.arange(k)
    return float(_update_cdnmf_fast(W, hht, xht, order.astype(np.intp)))


__all__ = ["FactorizedNMF"]

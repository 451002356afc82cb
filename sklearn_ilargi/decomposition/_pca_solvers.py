"""The solvers of FactorizedPCA on a NormalizedMatrix: scikit-learn's ``svd_solver`` options.

``"full"`` and ``"covariance_eigh"`` decompose the dense ``c x c`` covariance (the one
factorized form of a full decomposition): exact, but a ``c**2`` array and a ``c**3`` solve.
``"arpack"`` and ``"randomized"`` are scikit-learn's truncated solvers run on a
:class:`scipy.sparse.linalg.LinearOperator` of the centered matrix, whose products
``Xc @ V`` and ``Xc.T @ U`` are factorized: they never form the covariance, so they serve
one-hot dimensions of many thousands of columns. The same ``random_state`` draws the same
start vectors as scikit-learn's ``PCA`` on the joined matrix, in the same order, so the
results agree to rounding error.
"""

import numbers

import numpy as np
import scipy.sparse.linalg
from sklearn.utils import check_random_state

from ..cost import OperationProfile, expected_iterations
from ..utils._sklearn_compat import _init_arpack_v0, _randomized_svd

#: The solvers that decompose the dense covariance.
CLOSED_FORMS = ("full", "covariance_eigh")
#: The solvers that work through products of the centered matrix.
TRUNCATED = ("arpack", "randomized")


def resolve_svd_solver(svd_solver, n_components, shape):
    """The solver that ``svd_solver`` means for a matrix of ``shape``: scikit-learn's rule
    for ``"auto"`` on dense input (a NormalizedMatrix is its joined matrix, whatever the
    storage of its sources).

    Tall and narrow matrices take the covariance; small ones, and ``n_components="mle"``,
    the full decomposition; an integer ``n_components`` below 80% of the smaller side the
    randomized SVD; any other the full decomposition.

    Parameters
    ----------
    svd_solver : {"auto", "full", "covariance_eigh", "arpack", "randomized"}
    n_components : int, float, "mle" or None
    shape : tuple of int

    Returns
    -------
    str
        ``svd_solver`` itself unless it is ``"auto"``.
    """
    if svd_solver != "auto":
        return svd_solver
    n_samples, n_features = shape
    if n_features <= 1_000 and n_samples >= 10 * n_features:
        return "covariance_eigh"
    if max(shape) <= 500 or n_components == "mle":
        return "full"
    count = min(shape) if n_components is None else n_components
    if isinstance(count, numbers.Integral) and 1 <= count < 0.8 * min(shape):
        return "randomized"
    return "full"


def check_truncated_components(n_components, solver, shape):
    """``n_components`` as an int, checked as scikit-learn checks it for ``solver``."""
    limit = min(shape)
    if isinstance(n_components, str):
        raise ValueError(f"n_components={n_components!r} cannot be a string with "
                         f"svd_solver='{solver}'")
    if not (isinstance(n_components, numbers.Integral) and 1 <= n_components <= limit):
        raise ValueError(f"n_components={n_components!r} must be between 1 and "
                         f"min(n_samples, n_features)={limit} with svd_solver='{solver}'")
    if solver == "arpack" and n_components == limit:
        raise ValueError(f"n_components={n_components!r} must be strictly less than "
                         f"min(n_samples, n_features)={limit} with svd_solver='{solver}'")
    return int(n_components)


def pca_profile(solver, n_components, shape, *, tol, iterated_power, n_oversamples, name,
                own_covariance=False):
    """The operations of one PCA solver, for the dispatcher.

    The materialized path builds the join dense only for the closed forms: the covariance
    (``own_covariance``, summed over slices of the join's rows, each centered as it is read:
    no copy) and scikit-learn's full SVD (a centered copy, LAPACK's copy and the left
    singular vectors: about three copies). The
    truncated solvers run on the CSR join where the sources are sparse: scikit-learn's PCA
    for ``"arpack"``, this module's products for ``"randomized"`` (which scikit-learn
    refuses on sparse input); on a dense join they take one centered copy.
    """
    if solver in CLOSED_FORMS:
        copies = 0 if own_covariance else 3
    else:
        copies = 1
    common = dict(sklearn_fit=solver != "randomized", dense_join=solver in CLOSED_FORMS,
                  join_copies=copies, name=name, solver=solver, solver_parameter="svd_solver")
    if solver in CLOSED_FORMS:
        return OperationProfile(gram=1, **common)
    # One pass for the means and one for the total variance, then the solver's own.
    if solver == "arpack":
        # About three Lanczos restarts of ARPACK's ``ncv`` vectors, one product each way.
        ncv = min(min(shape), max(2 * n_components + 1, 20))
        steps = expected_iterations(3 * ncv, tol)
        return OperationProfile(matmul=steps, rmatmul=steps + 2, iterations=steps,
                                max_iter=10 * min(shape), **common)
    power = _power_iterations(iterated_power, n_components, shape)
    # The range finder's power iterations, then B = Q.T @ Xc: block products of width
    # n_components + n_oversamples.
    return OperationProfile(matmul=power + 1, rmatmul=power + 3,
                            width=n_components + n_oversamples, iterations=power,
                            max_iter=power, **common)


def truncated_svd(centered, n_components, solver, *, tol, iterated_power, n_oversamples,
                  power_iteration_normalizer, random_state):
    """The largest singular values and right singular vectors of the centered matrix.

    As scikit-learn's ``PCA._fit_truncated``: ARPACK's ``svds`` from
    ``_init_arpack_v0``'s start vector, or ``_randomized_svd``, with the same draws of
    ``random_state`` in the same order.

    Parameters
    ----------
    centered : TrainingMatrix
        ``X - 1 mean^T`` (see :meth:`TrainingMatrix.centered`).
    n_components : int
    solver : {"arpack", "randomized"}
    tol, iterated_power, n_oversamples, power_iteration_normalizer, random_state
        The PCA's parameters.

    Returns
    -------
    singular_values : ndarray of shape (n_components,)
        Largest first.
    components : ndarray of shape (n_components, n_features)
        Their right singular vectors, signs as the solver left them.
    """
    operator = _operator(centered)
    random_state = check_random_state(random_state)
    if solver == "arpack":
        start = _init_arpack_v0(min(centered.shape), random_state)
        _, values, vectors = scipy.sparse.linalg.svds(operator, k=n_components, tol=tol,
                                                      v0=start)
        return values[::-1], vectors[::-1]  # svds gives them smallest first
    _, values, vectors = _randomized_svd(
        operator, n_components=n_components, n_oversamples=n_oversamples,
        n_iter=iterated_power, power_iteration_normalizer=power_iteration_normalizer,
        flip_sign=False, random_state=random_state,
    )
    return values, vectors


def _operator(centered):
    """``Xc`` as a LinearOperator whose block products are one factorized product each."""
    return scipy.sparse.linalg.LinearOperator(
        centered.shape, dtype=np.float64,
        matvec=lambda v: centered.matmul(np.ravel(v)),
        rmatvec=lambda u: centered.rmatmul(np.ravel(u)),
        matmat=centered.matmul,
        rmatmat=centered.rmatmul,
    )


def _power_iterations(iterated_power, n_components, shape):
    """scikit-learn's ``n_iter="auto"`` of the randomized SVD: 7 for few components (below
    10% of the smaller side), else 4."""
    if iterated_power != "auto":
        return int(iterated_power)
    return 7 if n_components < 0.1 * min(shape) else 4

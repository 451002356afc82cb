"""Every public estimator through scikit-learn's estimator contract, with no expected failure."""

import inspect

from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import sklearn_ilargi


#: Parameters for the checks, as scikit-learn sets them for its counterparts
#: (``sklearn/utils/_test_common/instance_generator.py``): NMF's ``fit_transform`` and
#: ``transform`` agree to the checks' tolerance once the fit has converged; the
#: cross-validated logistic regression tries 3 Cs on 3 folds (scikit-learn's, on 3 folds).
CHECK_PARAMS = {"FactorizedNMF": {"max_iter": 500},
                "FactorizedLogisticRegressionCV": {"Cs": 3, "cv": 3}}


def public_estimators():
    """Instances of every estimator class that ``sklearn_ilargi`` exports."""
    classes = [getattr(sklearn_ilargi, name) for name in sorted(sklearn_ilargi.__all__)]
    return [cls(**CHECK_PARAMS.get(cls.__name__, {})) for cls in classes
            if inspect.isclass(cls) and issubclass(cls, BaseEstimator)]


def iterative_variants():
    """The iterative solvers (gradient descent, LSQR, conjugate gradients, the truncated
    SVDs), which take other code paths."""
    return [
        sklearn_ilargi.FactorizedLinearRegression(solver="gd"),
        sklearn_ilargi.FactorizedLinearRegression(solver="lsqr"),
        sklearn_ilargi.FactorizedRidge(solver="gd"),
        sklearn_ilargi.FactorizedRidge(solver="lsqr"),
        sklearn_ilargi.FactorizedRidge(solver="sparse_cg"),
        sklearn_ilargi.FactorizedLogisticRegression(solver="gd"),
        sklearn_ilargi.FactorizedPCA(svd_solver="randomized", random_state=0),
    ]


def cross_validation_variants():
    """k-fold cross-validation, where the default is leave-one-out (the path with wide data,
    conjugate gradients per fold, is checked in ``linear_model/tests/test_ridge_cv.py``
    under a setting)."""
    return [sklearn_ilargi.FactorizedRidgeCV(cv=3)]


@parametrize_with_checks(public_estimators() + iterative_variants()
                         + cross_validation_variants())
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)

"""Every public estimator through scikit-learn's estimator contract, with no expected failure."""

import inspect

from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import sklearn_ilargi


#: Parameters for the checks, as scikit-learn sets them for its counterparts
#: (``sklearn/utils/_test_common/instance_generator.py``): NMF's ``fit_transform`` and
#: ``transform`` agree to the checks' tolerance once the fit has converged.
CHECK_PARAMS = {"FactorizedNMF": {"max_iter": 500}}


def public_estimators():
    """Instances of every estimator class that ``sklearn_ilargi`` exports."""
    classes = [getattr(sklearn_ilargi, name) for name in sorted(sklearn_ilargi.__all__)]
    return [cls(**CHECK_PARAMS.get(cls.__name__, {})) for cls in classes
            if inspect.isclass(cls) and issubclass(cls, BaseEstimator)]


def iterative_variants():
    """The gradient-descent solvers, which take another code path."""
    return [
        sklearn_ilargi.FactorizedLinearRegression(solver="gd"),
        sklearn_ilargi.FactorizedRidge(solver="gd"),
        sklearn_ilargi.FactorizedLogisticRegression(solver="gd"),
    ]


@parametrize_with_checks(public_estimators() + iterative_variants())
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)

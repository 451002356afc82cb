"""The estimator classes that the device and backend tests run over."""

import inspect

from sklearn.base import BaseEstimator

import sklearn_ilargi


def estimator_classes():
    """Every exported estimator class that takes a ``backend`` parameter."""
    out = []
    for name in sorted(sklearn_ilargi.__all__):
        cls = getattr(sklearn_ilargi, name)
        if (inspect.isclass(cls) and issubclass(cls, BaseEstimator)
                and "backend" in inspect.signature(cls).parameters):
            out.append(cls)
    return out

"""Every private scikit-learn API that sklearn-ilargi uses, in one place.

scikit-learn's private helpers can move or change between releases; importing them only from
here keeps each such dependency visible and its version differences absorbed once. The tests
in ``sklearn_ilargi/utils/tests/test_sklearn_compat.py`` check each name against the installed
scikit-learn.

The array-api-compat that scikit-learn vendors (``sklearn.externals.array_api_compat``) is
imported in ``sklearn_ilargi/backend/_array_api.py`` instead: ``utils`` imports the backend, so
the backend cannot import this module.
"""

from sklearn.base import _fit_context
from sklearn.decomposition._pca import _infer_dimension
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import _check_sample_weight

__all__ = [
    "Interval",
    "Options",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "_get_output_config",
    "_infer_dimension",
]

"""Every private scikit-learn API that sklearn-ilargi uses, in one place.

scikit-learn's private helpers can move or change between releases; importing them only from
here keeps each such dependency visible and its version differences absorbed once. The tests
in ``sklearn_ilargi/utils/tests/test_sklearn_compat.py`` check each name against the installed
scikit-learn.
"""

from sklearn.base import _fit_context
from sklearn.decomposition._pca import _infer_dimension
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import _check_sample_weight

__all__ = [
    "Interval",
    "Options",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "_infer_dimension",
]

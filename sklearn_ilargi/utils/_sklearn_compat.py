"""Every private scikit-learn API that sklearn-ilargi uses, in one place.

scikit-learn's private helpers can move or change between releases; importing them only from
here keeps each such dependency visible and its version differences absorbed once. The tests
in ``sklearn_ilargi/utils/tests/test_sklearn_compat.py`` check each name against the installed
scikit-learn.

The array-api-compat that scikit-learn vendors (``sklearn.externals.array_api_compat``) is
imported in ``sklearn_ilargi/backend/_array_api.py`` instead: ``utils`` imports the backend, so
the backend cannot import this module.
"""

from sklearn._loss import HalfBinomialLoss, HalfMultinomialLoss
from sklearn.base import _fit_context
from sklearn.cluster._kmeans import _kmeans_single_elkan, _kmeans_single_lloyd
from sklearn.decomposition._cdnmf_fast import _update_cdnmf_fast
from sklearn.decomposition._pca import _infer_dimension
from sklearn.preprocessing._data import _handle_zeros_in_scale, _is_constant_feature
from sklearn.utils import _safe_indexing
from sklearn.utils._arpack import _init_arpack_v0
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
)
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.extmath import _randomized_svd
from sklearn.utils.fixes import _sparse_linalg_cg
from sklearn.utils.validation import _check_sample_weight

__all__ = [
    "HalfBinomialLoss",
    "HalfMultinomialLoss",
    "Interval",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "_get_output_config",
    "_handle_zeros_in_scale",
    "_infer_dimension",
    "_kmeans_single_elkan",
    "_kmeans_single_lloyd",
    "_init_arpack_v0",
    "_is_constant_feature",
    "_openmp_effective_n_threads",
    "_randomized_svd",
    "_safe_indexing",
    "_sparse_linalg_cg",
    "_update_cdnmf_fast",
]

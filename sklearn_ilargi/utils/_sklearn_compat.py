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
from sklearn.linear_model._ridge import _IdentityRegressor
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
    "_IdentityRegressor",
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
    "scorer_accepts_sample_weight",
    "scorer_knowing_labels",
]


def scorer_knowing_labels(scorer, labels):
    """``scorer`` with its metric told every label, as ``LogisticRegressionCV`` scores a fold.

    A held-out fold may lack a class; metrics that take ``labels`` (``log_loss``, ...) then
    get ``labels=labels``, and, for two labels, ``pos_label=labels[-1]`` where they take it.
    This rebuilds the scorer from the private attributes of scikit-learn's scorers
    (``_score_func``, ``_sign``, ``_response_method``, ``_kwargs``); a scorer without them
    (any other callable), or whose metric takes no ``labels``, is returned as it is.
    """
    # Imported here, so that the module's own names stay the private ones it lists.
    from inspect import signature

    from sklearn.metrics import make_scorer

    score_func = getattr(scorer, "_score_func", None)
    if score_func is None:
        return scorer
    parameters = signature(score_func).parameters
    if "labels" not in parameters:
        return scorer
    told = {"labels": labels}
    if len(labels) == 2 and "pos_label" in parameters:
        told["pos_label"] = labels[-1]
    return make_scorer(score_func, greater_is_better=scorer._sign == 1,
                       response_method=scorer._response_method,
                       **{**told, **getattr(scorer, "_kwargs", {})})


def scorer_accepts_sample_weight(scorer):
    """Whether ``GridSearchCV`` (scikit-learn 1.7 and later, without metadata routing) hands
    a fit's ``sample_weight`` on to ``scorer`` on each held-out fold.

    A scikit-learn scorer says so itself (its private ``_accept_sample_weight``); any other
    callable does where its signature names ``sample_weight``.
    """
    from inspect import signature

    accepts = getattr(scorer, "_accept_sample_weight", None)
    if accepts is not None:
        return bool(accepts())
    return "sample_weight" in signature(scorer).parameters

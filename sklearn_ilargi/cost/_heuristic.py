"""The fallback when no cost model is usable: a roofline estimate of each candidate's time.

The estimate is a sum of terms, each in seconds at a nominal rate: a fixed cost per fit and
per operation (the Python around the products), a fixed price per library call (which is
what makes many small factorized operations slow), compute (FLOPs over a nominal peak, a far
lower one for sparse kernels), memory traffic (bytes over the measured bandwidth), building
the materialized matrix, moving data to the GPU, and scikit-learn's own fit where the
materialized path hands the join to it. Calibration fits a weight per term to the measured
times (``fit_heuristic_weights`` in ``_train``); the nominal weights are all 1.
"""

# Nominal rates; only their ratios matter for the choice.
CPU_FLOPS_PER_CORE = 8e9
GPU_FLOPS_PER_SM = 5e10
HOST_TO_DEVICE_BYTES = 12e9
CPU_CALL_SECONDS = 2e-5
GPU_CALL_SECONDS = 5e-5
FIT_SECONDS = 1e-3
"""Validation and the solver's own small arrays: paid once per fit, on every path."""
OPERATION_SECONDS = 1e-4
"""The Python around one product of the fit's profile."""
BUILD_PASSES = 3  # gather, write, and the page faults of a fresh array
SPARSE_FLOPS = 1e9
"""scipy.sparse's products: one thread, an index read per value."""
SPARSE_GRAM_FLOPS = 2e8
"""scipy.sparse's ``T.T @ T``: a sparse accumulator per row of the result."""

TERMS = ("fit", "operations", "calls", "dense_compute", "sparse_compute", "sparse_gram",
         "memory", "build", "transfer", "sklearn_fit")
NOMINAL_WEIGHTS = (1.0,) * len(TERMS)


def cost_terms(features):
    """The estimate of one candidate term by term (``TERMS``), in seconds at nominal rates.

    Parameters
    ----------
    features : dict
        ``fit_features`` merged with ``candidate_features``.

    Returns
    -------
    list of float
    """
    fixed = [FIT_SECONDS, features["n_ops"] * OPERATION_SECONDS]
    bandwidth = max(features["bandwidth_gbs"], 1.0) * 1e9
    build = features["path_build_bytes"] * BUILD_PASSES / bandwidth
    # scikit-learn's fit on the join (on the host): its own fixed cost and validating pass.
    sklearn_fit = 0.0
    if features["sklearn_fit"] and not features["is_factorized"]:
        sklearn_fit = FIT_SECONDS + features["mat_bytes"] / bandwidth
    if features["is_gpu"]:
        peak = max(features["gpu_sms"], 1.0) * GPU_FLOPS_PER_SM
        device_bandwidth = max(features["gpu_bandwidth_gbs"], 1.0) * 1e9
        return fixed + [features["path_calls"] * GPU_CALL_SECONDS,
                        features["path_flops"] / peak, 0.0, 0.0,
                        features["path_bytes"] / device_bandwidth, build,
                        features["path_transfer_bytes"] / HOST_TO_DEVICE_BYTES, sklearn_fit]
    dense, sparse, sparse_gram = _cpu_compute_seconds(features)
    return fixed + [features["path_calls"] * CPU_CALL_SECONDS, dense, sparse, sparse_gram,
                    features["path_bytes"] / bandwidth, build, 0.0, sklearn_fit]


def heuristic_seconds(features, weights=NOMINAL_WEIGHTS):
    """Estimated seconds of one candidate: the weighted sum of its :func:`cost_terms`.

    Parameters
    ----------
    features : dict
        ``fit_features`` merged with ``candidate_features``.
    weights : sequence of float
        One per term of ``TERMS`` (the nominal ones by default, or fitted by calibration).

    Returns
    -------
    float
    """
    return sum(term * weight for term, weight in zip(cost_terms(features), weights))


def _cpu_compute_seconds(features):
    """(dense, sparse, sparse gram) seconds: FLOPs over BLAS's peak, and those that
    scipy.sparse computes (``path_sparse_flops``: products of sparse sources, or of a CSR
    materialized ``T``, whose gram, ``2 nnz^2 / n`` FLOPs, is the slowest) over its far lower
    rates."""
    flops, sparse = features["path_flops"], features["path_sparse_flops"]
    dense = (flops - sparse) / (max(features["cores"], 1.0) * CPU_FLOPS_PER_CORE)
    if features["is_factorized"] or not features["mat_sparse"]:
        return dense, sparse / SPARSE_FLOPS, 0.0
    gram = min(sparse, features["gram"] * 2.0 * features["mat_nnz"] ** 2
               / max(features["n_rows"], 1.0))
    return dense, (sparse - gram) / SPARSE_FLOPS, gram / SPARSE_GRAM_FLOPS

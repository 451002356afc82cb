"""The fallback when no cost model is usable: a roofline estimate of each candidate's time.

Time is the larger of compute (FLOPs over a nominal peak, a far lower one for sparse kernels)
and memory traffic (bytes over the measured bandwidth), plus building the materialized matrix,
moving data to the GPU, and a fixed price per library call (which is what makes many small
factorized operations slow).
"""

# Nominal rates; only their ratios matter for the choice.
CPU_FLOPS_PER_CORE = 8e9
GPU_FLOPS_PER_SM = 5e10
HOST_TO_DEVICE_BYTES = 12e9
CPU_CALL_SECONDS = 2e-5
GPU_CALL_SECONDS = 5e-5
BUILD_PASSES = 3  # gather, write, and the page faults of a fresh array
SPARSE_FLOPS = 1e9
"""scipy.sparse's products: one thread, an index read per value."""
SPARSE_GRAM_FLOPS = 2e8
"""scipy.sparse's ``T.T @ T``: a sparse accumulator per row of the result."""
MOSTLY_SPARSE_DENSITY = 0.5
"""Sources whose stored values fill less than this share of their cells are mostly sparse
(a dense fact table with a few one-hot dimensions, as TPC-H's, is not)."""


def heuristic_seconds(features):
    """Estimated seconds of one candidate from its merged shared and candidate features.

    Parameters
    ----------
    features : dict
        ``fit_features`` merged with ``candidate_features``.

    Returns
    -------
    float
    """
    bandwidth = max(features["bandwidth_gbs"], 1.0) * 1e9
    build = features["path_build_bytes"] * BUILD_PASSES / bandwidth
    if features["is_gpu"]:
        peak = max(features["gpu_sms"], 1.0) * GPU_FLOPS_PER_SM
        device_bandwidth = max(features["gpu_bandwidth_gbs"], 1.0) * 1e9
        run = max(features["path_flops"] / peak, features["path_bytes"] / device_bandwidth)
        transfer = features["path_transfer_bytes"] / HOST_TO_DEVICE_BYTES
        return run + build + transfer + features["path_calls"] * GPU_CALL_SECONDS
    run = max(_cpu_compute_seconds(features), features["path_bytes"] / bandwidth)
    return run + build + features["path_calls"] * CPU_CALL_SECONDS


def _cpu_compute_seconds(features):
    """FLOPs over BLAS's peak, or over scipy.sparse's far lower rates where the path computes
    on sparse matrices: a factorized path whose sources are mostly sparse, a CSR materialized
    ``T`` (whose gram, ``2 nnz^2 / n`` FLOPs, is the slowest)."""
    flops = features["path_flops"]
    if features["is_factorized"] and features["source_density"] < MOSTLY_SPARSE_DENSITY:
        return flops / SPARSE_FLOPS
    if features["is_factorized"] or not features["mat_sparse"]:
        return flops / (max(features["cores"], 1.0) * CPU_FLOPS_PER_CORE)
    gram = min(flops, features["gram"] * 2.0 * features["mat_nnz"] ** 2
               / max(features["n_rows"], 1.0))
    return gram / SPARSE_GRAM_FLOPS + (flops - gram) / SPARSE_FLOPS

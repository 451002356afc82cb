"""The fallback when no cost model is usable: a roofline estimate of each candidate's time.

Time is the larger of compute (FLOPs over a nominal peak) and memory traffic (bytes over the
measured bandwidth), plus building the materialized matrix, moving data to the GPU, and a
fixed price per library call (which is what makes many small factorized operations slow).
"""

# Nominal rates; only their ratios matter for the choice.
CPU_FLOPS_PER_CORE = 8e9
GPU_FLOPS_PER_SM = 5e10
HOST_TO_DEVICE_BYTES = 12e9
CPU_CALL_SECONDS = 2e-5
GPU_CALL_SECONDS = 5e-5
BUILD_PASSES = 3  # gather, write, and the page faults of a fresh array


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
    peak = max(features["cores"], 1.0) * CPU_FLOPS_PER_CORE
    run = max(features["path_flops"] / peak, features["path_bytes"] / bandwidth)
    return run + build + features["path_calls"] * CPU_CALL_SECONDS

"""The numbers a fit is judged by: its data, its operation profile and the cost of each path.

Everything here reads shapes, counts and the cached row-map summaries only, never the values,
so its cost does not grow with the number of target rows. The cost estimates
follow the rewrite rules of the factorized operations (`sklearn_ilargi.ops`): FLOPs count one
multiply-add as two, bytes count what one pass reads and writes.
"""

import math

import numpy as np

from ..ops._products import csr_pays, join_bytes, joined_in_gram

DATA_FEATURES = (
    "n_rows", "n_columns", "n_blocks", "n_sources", "itemsize",
    "fact_columns", "dim_columns", "dim_rows_sum", "dim_rows_max", "dim_rows_min",
    "widest_block", "source_nnz", "source_density", "sparse_sources",
    "tuple_ratio", "tuple_ratio_max", "feature_ratio", "missing_share",
    "mat_nnz", "mat_sparse", "mat_bytes", "fact_bytes", "byte_ratio",
)
PROFILE_FEATURES = (
    "matmul", "rmatmul", "gram", "width", "iterations", "classes", "n_ops", "sklearn_fit",
)
COST_FEATURES = (
    "mat_flops", "fact_flops", "fact_sparse_flops", "flop_ratio", "mat_bytes_moved",
    "fact_bytes_moved", "moved_ratio", "build_flops", "build_bytes", "complexity_ratio", "fact_overhead_calls",
)
HARDWARE_FEATURES = ("cores", "blas_threads", "bandwidth_gbs", "gpu_memory", "gpu_sms",
                     "gpu_bandwidth_gbs")
CANDIDATE_FEATURES = (
    "is_gpu", "is_factorized", "path_flops", "path_sparse_flops", "path_bytes",
    "path_build_bytes", "path_transfer_bytes", "path_calls", "path_memory",
)
#: The columns of one model row, in order: the fit's shared features, then the candidate's.
FEATURE_NAMES = (DATA_FEATURES + PROFILE_FEATURES + COST_FEATURES + HARDWARE_FEATURES
                 + CANDIDATE_FEATURES)
# Sizes span orders of magnitude; the model sees their log10 (+1), counts and flags as they are.
_LOG_FEATURES = frozenset((
    "n_rows", "n_columns", "fact_columns", "dim_columns", "dim_rows_sum", "dim_rows_max",
    "dim_rows_min", "widest_block", "source_nnz", "mat_nnz", "mat_bytes", "fact_bytes",
    "mat_flops", "fact_flops", "fact_sparse_flops", "path_sparse_flops", "mat_bytes_moved",
    "fact_bytes_moved", "build_flops", "build_bytes", "gpu_memory", "path_flops", "path_bytes", "path_build_bytes",
    "path_transfer_bytes", "path_memory", "tuple_ratio", "tuple_ratio_max", "feature_ratio",
    "byte_ratio", "flop_ratio", "moved_ratio", "complexity_ratio",
))


def _present_rows(row_map):
    """Target rows that have a row of this map's source; cached on the (immutable) map."""
    if row_map.indices is None or not row_map.has_missing:
        return row_map.n_target
    return row_map.cached("n_present", lambda: int((row_map.indices >= 0).sum()))


def _block_summary(block):
    source = block.source
    n_b, c_b = source.shape
    sparse = hasattr(source, "nnz")
    return {
        "rows": n_b,
        "columns": c_b,
        "nnz": int(source.nnz) if sparse else n_b * c_b,
        "sparse": sparse,
        "present": _present_rows(block.row_map),
        "identity": block.row_map.is_identity,
        "source_id": id(source),
        "map_id": id(block.row_map),
    }


def block_summaries(nm):
    """Per block: rows, columns, nnz, sparse, present target rows, identity map, ids."""
    return [_block_summary(block) for block in nm.blocks]


def data_features(nm, blocks=None, dense_join=False):
    """Features of a normalized matrix's data.

    Parameters
    ----------
    nm : NormalizedMatrix
    blocks : list of dict, optional
        :func:`block_summaries` of ``nm``, when already computed.
    dense_join : bool
        Whether the materialized path builds the join dense whatever its sparsity.

    Returns
    -------
    dict
        One float per name of ``DATA_FEATURES``. The *fact* blocks are those whose row map
        is the identity; the others are *dimension* blocks. ``tuple_ratio`` is the target
        rows over all dimension rows (``tuple_ratio_max`` over the smallest dimension),
        ``feature_ratio`` the dimension columns over the fact columns, ``missing_share`` the
        share of the blocks' target cells that have no source row (outer joins, unions).
    """
    blocks = block_summaries(nm) if blocks is None else blocks
    n_rows, n_columns = nm.shape
    itemsize = nm.dtype.itemsize
    dims = [b for b in blocks if not b["identity"]]
    fact_columns = sum(b["columns"] for b in blocks if b["identity"])
    dim_columns = sum(b["columns"] for b in dims)
    dim_rows = [b["rows"] for b in dims]
    seen, source_nnz, source_cells = set(), 0, 0
    for b in blocks:
        if b["source_id"] not in seen:
            seen.add(b["source_id"])
            source_nnz += b["nnz"]
            source_cells += b["rows"] * b["columns"]
    mat_nnz = sum(b["present"] * b["nnz"] / max(b["rows"], 1) for b in blocks)
    dense_bytes, csr_bytes = join_bytes(mat_nnz, (n_rows, n_columns), itemsize)
    sparse_sources = any(b["sparse"] for b in blocks)
    # prepare() builds the materialized matrix as CSR exactly when this says so.
    mat_sparse = sparse_sources and csr_pays(dense_bytes, csr_bytes) and not dense_join
    mat_bytes = csr_bytes if mat_sparse else dense_bytes
    fact_bytes = nm.nbytes
    covered = sum(b["columns"] * n_rows for b in blocks)
    filled = sum(b["columns"] * b["present"] for b in blocks)
    return {
        "n_rows": float(n_rows),
        "n_columns": float(n_columns),
        "n_blocks": float(len(blocks)),
        "n_sources": float(len(seen)),
        "itemsize": float(itemsize),
        "fact_columns": float(fact_columns),
        "dim_columns": float(dim_columns),
        "dim_rows_sum": float(sum(dim_rows)),
        "dim_rows_max": float(max(dim_rows, default=0)),
        "dim_rows_min": float(min(dim_rows, default=0)),
        "widest_block": float(max((b["columns"] for b in blocks), default=0)),
        "source_nnz": float(source_nnz),
        "source_density": source_nnz / max(source_cells, 1),
        "sparse_sources": float(sparse_sources),
        "tuple_ratio": n_rows / max(sum(dim_rows), 1) if dims else 1.0,
        "tuple_ratio_max": n_rows / max(min(dim_rows), 1) if dims else 1.0,
        "feature_ratio": dim_columns / max(fact_columns, 1),
        "missing_share": 1.0 - filled / max(covered, 1),
        "mat_nnz": float(mat_nnz),
        "mat_sparse": float(mat_sparse),
        "mat_bytes": float(max(mat_bytes, 1)),
        "fact_bytes": float(max(fact_bytes, 1)),
        "byte_ratio": max(mat_bytes, 1) / max(fact_bytes, 1),
    }


def profile_features(profile):
    """The operation profile as features (``PROFILE_FEATURES``)."""
    matmul, rmatmul, gram = profile.matmul, profile.rmatmul, profile.gram
    return {
        "matmul": float(matmul),
        "rmatmul": float(rmatmul),
        "gram": float(gram),
        "width": float(max(profile.width, 1)),
        "iterations": float(getattr(profile, "iterations", 1)),
        "classes": float(getattr(profile, "classes", 0)),
        "n_ops": float(matmul + rmatmul + gram),
        "sklearn_fit": float(getattr(profile, "sklearn_fit", False)),
    }


def _per_row(b):
    """Stored values per source row: the columns of a dense source."""
    return b["nnz"] / max(b["rows"], 1)


def _kept_apart(blocks):
    """``{id(block): whether the gram keeps it apart}``, not joined in slices of rows
    (:func:`sklearn_ilargi.ops._products.joined_in_gram`)."""
    joined = joined_in_gram([(b["sparse"], b["identity"], b["columns"]) for b in blocks])
    return {id(b): not join for b, join in zip(blocks, joined)}


def _fact_gram_flops(blocks, n_rows):
    """(all, on sparse sources) FLOPs of the factorized gram.

    A block's own gram multiplies each row's stored values pairwise (``2 nnz x nnz / rows``,
    which is ``2 rows c^2`` when dense); two identity blocks multiply row by row
    (``2 n_T`` times the product of their values per row). Two dimension blocks that the gram
    keeps apart (not joined in slices, see :func:`_kept_apart`) meet over the target rows in
    scipy.sparse (their co-occurrence matrix's product, or a scatter): sparse work even for
    dense sources.
    """
    apart = _kept_apart(blocks)
    flops = sum(2.0 * b["nnz"] * _per_row(b) + b["present"] for b in blocks)
    sparse = sum(2.0 * b["nnz"] * _per_row(b) for b in blocks if b["sparse"])
    for i, a in enumerate(blocks):
        for b in blocks[i + 1:]:
            if a["identity"] and b["identity"]:
                product = 2.0 * n_rows * _per_row(a) * _per_row(b)
                flops += product
                sparse += product if a["sparse"] or b["sparse"] else 0.0
                continue
            # Scatter (or co-occurrence) over the target rows, then a product of source size.
            density = min(a["nnz"] / max(a["rows"] * a["columns"], 1),
                          b["nnz"] / max(b["rows"] * b["columns"], 1))
            over_rows = 2.0 * n_rows * min(a["columns"], b["columns"])
            product = 2.0 * min(a["rows"], b["rows"]) * a["columns"] * b["columns"] * density
            flops += over_rows + product
            sparse += product if a["sparse"] or b["sparse"] else 0.0
            sparse += over_rows if apart[id(a)] and apart[id(b)] else 0.0
    return flops, sparse


def cost_features(data, profile, blocks):
    """FLOPs and bytes of each path for the whole fit (``COST_FEATURES``).

    Parameters
    ----------
    data : dict
        :func:`data_features`.
    profile : dict
        :func:`profile_features`.
    blocks : list of dict
        :func:`block_summaries`.
    """
    n_rows, n_columns = data["n_rows"], data["n_columns"]
    width, passes, gram = profile["width"], profile["matmul"] + profile["rmatmul"], profile["gram"]
    mat_nnz, itemsize = data["mat_nnz"], data["itemsize"]
    mat_cells = mat_nnz if data["mat_sparse"] else n_rows * n_columns
    per_row = mat_cells / max(n_rows, 1)
    mat_gram = 2.0 * n_rows * per_row * per_row if data["mat_sparse"] else \
        2.0 * n_rows * n_columns * n_columns
    mat_flops = passes * 2.0 * mat_cells * width + gram * mat_gram
    fact_pass = sum(2.0 * b["nnz"] * width + b["present"] * width for b in blocks)
    sparse_pass = sum(2.0 * b["nnz"] * width for b in blocks if b["sparse"])
    gram_flops, sparse_gram = _fact_gram_flops(blocks, n_rows)
    fact_flops = passes * fact_pass + gram * gram_flops
    vector_bytes = n_rows * width * itemsize
    mat_moved = passes * (data["mat_bytes"] + vector_bytes) + gram * data["mat_bytes"]
    gathered = sum(b["present"] for b in blocks) * width * itemsize
    fact_moved = passes * (data["fact_bytes"] + gathered + vector_bytes) \
        + gram * (data["fact_bytes"] + len(blocks) * n_rows * itemsize)
    build_flops = mat_cells
    build_bytes = data["fact_bytes"] + data["mat_bytes"]
    mat_total = mat_flops + build_flops
    return {
        "mat_flops": mat_flops,
        "fact_flops": fact_flops,
        # What scipy.sparse computes of it: the products of sparse sources (gathers and
        # scatters, at dense rates whatever the source, are not).
        "fact_sparse_flops": passes * sparse_pass + gram * sparse_gram,
        "flop_ratio": mat_flops / max(fact_flops, 1.0),
        "mat_bytes_moved": mat_moved,
        "fact_bytes_moved": fact_moved,
        "moved_ratio": (mat_moved + build_bytes) / max(fact_moved, 1.0),
        "build_flops": build_flops,
        "build_bytes": build_bytes,
        "complexity_ratio": mat_total / max(fact_flops, 1.0),
        # Each factorized operation is a handful of calls per block (gather, product, scatter).
        "fact_overhead_calls": (profile["n_ops"]) * len(blocks),
    }


def fit_features(nm, profile, hardware):
    """Every shared feature of one fit: data, profile, path costs and hardware.

    Parameters
    ----------
    nm : NormalizedMatrix
    profile : OperationProfile
    hardware : dict
        :func:`sklearn_ilargi.cost._hardware.hardware_info`.

    Returns
    -------
    dict
    """
    blocks = block_summaries(nm)
    data = data_features(nm, blocks, getattr(profile, "dense_join", False))
    prof = profile_features(profile)
    features = {**data, **prof, **cost_features(data, prof, blocks)}
    for name in HARDWARE_FEATURES:
        features[name] = float(hardware.get(name, 0.0))
    return features


def candidate_features(shared, backend, strategy):
    """The per-candidate features (``CANDIDATE_FEATURES``) of ``(backend, strategy)``.

    ``path_memory`` is the peak memory the path needs on its device: the sources, the
    materialized matrix where built, and the work arrays (vectors of the target's rows, a gram).
    """
    factorized = strategy == "factorized"
    gpu = backend == "gpu"
    work = (shared["n_rows"] * shared["width"] * shared["itemsize"] * 3
            + (shared["n_columns"] ** 2 * 8 if shared["gram"] else 0.0))
    if factorized:
        memory = shared["fact_bytes"] + work
        transfer = shared["fact_bytes"] if gpu else 0.0
    else:
        memory = shared["fact_bytes"] + shared["mat_bytes"] + work
        transfer = shared["mat_bytes"] if gpu else 0.0
    return {
        "is_gpu": float(gpu),
        "is_factorized": float(factorized),
        "path_flops": shared["fact_flops"] if factorized else shared["mat_flops"],
        "path_sparse_flops": (shared["fact_sparse_flops"] if factorized
                              else shared["mat_flops"] * shared["mat_sparse"]),
        "path_bytes": shared["fact_bytes_moved"] if factorized else shared["mat_bytes_moved"],
        "path_build_bytes": 0.0 if factorized else shared["build_bytes"],
        "path_transfer_bytes": transfer,
        "path_calls": shared["fact_overhead_calls"] if factorized else shared["n_ops"],
        "path_memory": memory,
    }


def model_row(shared, candidate):
    """One model input row (floats in ``FEATURE_NAMES`` order) for a candidate's features."""
    return _transformed({**shared, **candidate}, FEATURE_NAMES)


def model_rows(shared, candidates):
    """The model input rows of a fit's candidates, as :func:`model_row` makes them.

    The shared features come first in ``FEATURE_NAMES`` and are transformed once for all the
    candidates (``shared`` holds no candidate feature, nor a candidate a shared one).

    Parameters
    ----------
    shared : dict
        :func:`fit_features`.
    candidates : list of dict
        :func:`candidate_features` of each candidate.

    Returns
    -------
    ndarray of shape (len(candidates), len(FEATURE_NAMES))
    """
    head = _transformed(shared, _SHARED_NAMES)
    return np.array([head + _transformed(c, CANDIDATE_FEATURES) for c in candidates],
                    dtype=np.float64).reshape(len(candidates), len(FEATURE_NAMES))


_SHARED_NAMES = FEATURE_NAMES[:len(FEATURE_NAMES) - len(CANDIDATE_FEATURES)]


def _transformed(features, names):
    return [math.log10(1.0 + features[name]) if name in _LOG_FEATURES else features[name]
            for name in names]

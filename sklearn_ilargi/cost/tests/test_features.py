"""Feature extraction of the cost model on scenarios whose numbers are known by hand."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ilargi import NormalizedMatrix
from sklearn_ilargi.cost import OperationProfile
from sklearn_ilargi.cost._candidates import Candidate, candidates, infeasibility
from sklearn_ilargi.cost._features import (
    FEATURE_NAMES,
    candidate_features,
    data_features,
    fit_features,
    model_row,
)
from sklearn_ilargi.cost._heuristic import heuristic_seconds
from sklearn_ilargi.tests._scenarios import sources_as_given

HARDWARE = {"cores": 2.0, "blas_threads": 2.0, "bandwidth_gbs": 10.0, "gpu_memory": 0.0,
            "gpu_sms": 0.0, "gpu_bandwidth_gbs": 0.0}


def star(n_target=100, n_dim=10, fact_columns=3, dim_columns=4, missing=0.0, sparse_dim=False):
    """A fact table and one dimension, stored as given (so the counts by hand hold)."""
    rng = np.random.default_rng(0)
    fact = rng.random((n_target, fact_columns))
    dim = rng.random((n_dim, dim_columns))
    if sparse_dim:
        dim[:, 1:] = 0.0
        dim[5:, 0] = 0.0  # 5 nonzeros of 40: too sparse to be stored dense
        dim = sp.csr_matrix(dim)
    row_map = np.arange(n_target) % n_dim
    row_map[: int(missing * n_target)] = -1
    with sources_as_given():
        return NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_target), row_map])


def test_star_data_features():
    f = data_features(star())
    assert f["n_rows"] == 100 and f["n_columns"] == 7
    assert f["n_blocks"] == 2 and f["n_sources"] == 2
    assert f["fact_columns"] == 3 and f["dim_columns"] == 4
    assert f["dim_rows_sum"] == 10 and f["dim_rows_max"] == 10
    assert f["tuple_ratio"] == pytest.approx(10.0)
    assert f["feature_ratio"] == pytest.approx(4 / 3)
    assert f["missing_share"] == 0.0
    assert f["mat_bytes"] == 100 * 7 * 8
    assert f["fact_bytes"] == (100 * 3 + 10 * 4) * 8 + 100 * np.dtype(np.int32).itemsize
    assert f["byte_ratio"] == pytest.approx(f["mat_bytes"] / f["fact_bytes"])
    assert f["source_density"] == 1.0 and f["mat_sparse"] == 0.0


def test_missing_rows_and_sparsity():
    f = data_features(star(missing=0.5, sparse_dim=True))
    # Half of the dimension's 4 columns' cells are missing: 200 of 700 cells.
    assert f["missing_share"] == pytest.approx(200 / 700)
    assert f["sparse_sources"] == 1.0
    assert f["source_nnz"] == 100 * 3 + 5
    # 50 present target rows, half of them on a dimension row with a nonzero.
    assert f["mat_nnz"] == pytest.approx(300 + 25)


def test_fact_only_has_unit_ratios():
    nm = NormalizedMatrix.from_matrices([np.ones((5, 2))], [np.arange(5)])
    f = data_features(nm)
    assert f["tuple_ratio"] == 1.0 and f["feature_ratio"] == 0.0 and f["dim_columns"] == 0


def test_costs_grow_with_the_profile():
    nm = star(n_target=1000)
    one = fit_features(nm, OperationProfile(matmul=1, rmatmul=1), HARDWARE)
    ten = fit_features(nm, OperationProfile(matmul=10, rmatmul=10), HARDWARE)
    assert ten["mat_flops"] == pytest.approx(10 * one["mat_flops"])
    assert ten["fact_flops"] == pytest.approx(10 * one["fact_flops"])
    # Building T is paid once, whatever the number of passes.
    assert ten["build_bytes"] == one["build_bytes"]
    # Dense materialized matmul: 2 * n * c FLOPs per pass.
    assert one["mat_flops"] == pytest.approx(2 * 2 * 1000 * 7)
    gram = fit_features(nm, OperationProfile(gram=1), HARDWARE)
    assert gram["mat_flops"] == pytest.approx(2 * 1000 * 7 * 7)
    assert gram["n_ops"] == 1 and gram["gram"] == 1


def test_redundancy_shows_in_the_ratios():
    low = fit_features(star(n_target=100, n_dim=100), OperationProfile(matmul=5), HARDWARE)
    high = fit_features(star(n_target=10000, n_dim=10, dim_columns=40),
                        OperationProfile(matmul=5), HARDWARE)
    assert high["flop_ratio"] > low["flop_ratio"]
    assert high["byte_ratio"] > 2 > low["byte_ratio"]


def test_candidate_rows():
    shared = fit_features(star(), OperationProfile(matmul=3, rmatmul=3), HARDWARE)
    fact = candidate_features(shared, "cpu", "factorized")
    mat = candidate_features(shared, "cpu", "materialized")
    assert fact["path_build_bytes"] == 0 and mat["path_build_bytes"] > 0
    assert fact["path_flops"] == shared["fact_flops"]
    assert mat["path_memory"] > fact["path_memory"]
    gpu = candidate_features(shared, "gpu", "factorized")
    assert gpu["is_gpu"] == 1 and gpu["path_transfer_bytes"] == shared["fact_bytes"]
    row = model_row(shared, fact)
    assert len(row) == len(FEATURE_NAMES) and all(np.isfinite(row))
    assert heuristic_seconds({**shared, **fact}) > 0
    assert heuristic_seconds({**shared, **gpu}) > 0


def test_the_heuristic_prices_sparse_kernels_lower():
    """The same FLOPs cost more on sparse matrices, the materialized CSR gram the most."""
    shared = fit_features(star(), OperationProfile(gram=1, rmatmul=2), HARDWARE)
    mat = {**shared, **candidate_features(shared, "cpu", "materialized")}
    fact = {**shared, **candidate_features(shared, "cpu", "factorized")}
    assert fact["path_sparse_flops"] == mat["path_sparse_flops"] == 0.0
    sparse_mat = {**mat, "mat_sparse": 1.0, "mat_nnz": mat["n_rows"] * 3,
                  "path_sparse_flops": mat["path_flops"]}
    assert heuristic_seconds(sparse_mat) > heuristic_seconds(mat)
    assert heuristic_seconds({**sparse_mat, "gram": 0.0}) < heuristic_seconds(sparse_mat)
    sparse_fact = {**fact, "path_sparse_flops": fact["path_flops"]}
    assert heuristic_seconds(sparse_fact) > heuristic_seconds(fact)


def test_only_the_products_of_sparse_sources_count_as_sparse_work():
    shared = fit_features(star(sparse_dim=True), OperationProfile(gram=1, rmatmul=2), HARDWARE)
    # rmatmul: 2 x 2 nnz of the dimension (5 stored values); its gram: 2 nnz x nnz / 10 rows;
    # its cross product with the fact table: 2 x 10 rows x 3 x 4 columns x density 5/40.
    assert shared["fact_sparse_flops"] == pytest.approx(2 * 2 * 5 + 2 * 5 * 0.5 + 30)
    assert shared["fact_sparse_flops"] < shared["fact_flops"]
    assert candidate_features(shared, "cpu", "factorized")["path_sparse_flops"] == \
        shared["fact_sparse_flops"]


def test_a_fit_by_scikit_learn_on_the_join_is_priced_on_the_materialized_path():
    plain = fit_features(star(), OperationProfile(gram=1), HARDWARE)
    by_sklearn = fit_features(star(), OperationProfile(gram=1, sklearn_fit=True), HARDWARE)
    assert (plain["sklearn_fit"], by_sklearn["sklearn_fit"]) == (0.0, 1.0)
    for strategy, dearer in (("materialized", True), ("factorized", False)):
        before = heuristic_seconds({**plain, **candidate_features(plain, "cpu", strategy)})
        after = heuristic_seconds({**by_sklearn,
                                   **candidate_features(by_sklearn, "cpu", strategy)})
        assert (after > before) == dearer


def test_pca_and_the_scaler_declare_their_materialized_path():
    from sklearn_ilargi import FactorizedPCA, FactorizedStandardScaler
    from sklearn_ilargi.cost import record_decisions

    for estimator in (FactorizedPCA(n_components=2), FactorizedStandardScaler()):
        with record_decisions() as decisions:
            estimator.fit(star())
        assert decisions[-1].features["sklearn_fit"] == 1.0


def test_candidates_follow_what_is_forced():
    assert candidates(gpu=False) == [Candidate("cpu", "factorized"),
                                     Candidate("cpu", "materialized")]
    assert len(candidates(gpu=True)) == 4
    assert candidates("materialized", "auto", gpu=True) == [
        Candidate("cpu", "materialized"), Candidate("gpu", "materialized")]
    assert candidates("factorized", "gpu", gpu=True) == [Candidate("gpu", "factorized")]


def test_infeasibility():
    mat = Candidate("cpu", "materialized")
    assert infeasibility(mat, 10, host_available=1e9, device_available=0, mat_bytes=5) is None
    why = infeasibility(mat, 2e9, host_available=1e9, device_available=0, mat_bytes=2e9)
    assert "materialized matrix" in why
    gpu = Candidate("gpu", "factorized")
    why = infeasibility(gpu, 5e9, host_available=1e12, device_available=1e9, mat_bytes=1)
    assert "GPU" in why
    # The sources already held on the host do not count twice.
    fact = Candidate("cpu", "factorized")
    assert infeasibility(fact, 1e9, host_available=0.5e9, device_available=0, mat_bytes=1,
                         resident_bytes=0.9e9) is None
    # 90% of the memory: beyond the 80% a path may plan to take, within all of it.
    why = infeasibility(fact, 0.9e9, host_available=1e9, device_available=0, mat_bytes=1)
    assert "it may take (80% of the" in why
    assert infeasibility(fact, 0.9e9, host_available=1e9, device_available=0, mat_bytes=1,
                         headroom=1.0) is None
    why = infeasibility(fact, 1.1e9, host_available=1e9, device_available=0, mat_bytes=1,
                        headroom=1.0)
    assert why.endswith("more than the 953.67 MiB available on the host")


def test_the_gram_of_sparse_identity_blocks_counts_their_stored_values():
    """A sparse block on the identity map (a sparse fact table, or thin sources gathered)
    multiplies its stored values, not its columns, in the gram."""
    rng = np.random.default_rng(0)
    fact = rng.random((100, 3))
    thin = sp.csr_matrix((np.ones(20), (np.arange(0, 100, 5), np.arange(20) % 8)),
                         shape=(100, 8))  # 20 values: 0.2 a row
    with sources_as_given():  # small enough to be stored dense otherwise
        nm = NormalizedMatrix.from_matrices([fact, thin], [np.arange(100), np.arange(100)])
    shared = fit_features(nm, OperationProfile(gram=1), HARDWARE)
    # Its own gram 2 x 20 x 0.2; with the fact table 2 x 100 rows x 3 x 0.2.
    assert shared["fact_sparse_flops"] == pytest.approx(2 * 20 * 0.2 + 2 * 100 * 3 * 0.2)
    assert shared["fact_flops"] == pytest.approx(
        2 * 300 * 3 + 100 + 2 * 20 * 0.2 + 100 + 2 * 100 * 3 * 0.2)


@pytest.mark.parametrize("widths, sparse_pairs", [
    ((20, 30), [(20, 30)]),  # both kept apart: their pair is scipy.sparse work
    ((4, 6), []),  # both narrow: joined in slices, multiplied by BLAS
    ((4, 30), [(4, 30)]),  # a single narrow one is kept apart too
    ((4, 6, 30), []),  # the narrow two are joined; the wide one meets them by scatters
])
def test_dimension_pairs_kept_apart_are_sparse_work(widths, sparse_pairs):
    """Two dimensions that the gram keeps apart meet over the target rows in scipy.sparse,
    dense as they are; joined ones are multiplied by BLAS."""
    rng = np.random.default_rng(0)
    sources = [rng.random((100, 3))] + [rng.random((10, c)) for c in widths]
    row_maps = [np.arange(100)] + [rng.integers(0, 10, 100) for _ in widths]
    nm = NormalizedMatrix.from_matrices(sources, row_maps)
    shared = fit_features(nm, OperationProfile(gram=1), HARDWARE)
    assert shared["fact_sparse_flops"] == pytest.approx(
        sum(2 * 100 * min(pair) for pair in sparse_pairs))

"""PartitionedMatrix: every operation over Dask partitions equals the in-memory matrix's.

Each test runs on dask's synchronous scheduler; those marked with the ``cluster`` fixture run
on a ``LocalCluster(processes=False, n_workers=2)`` too (one for the module).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

dask = pytest.importorskip("dask", reason="the distributed extra (dask) is not installed")
da = pytest.importorskip("dask.array", reason="the distributed extra (dask) is not installed")

from sklearn_ilargi import NormalizedMatrix  # noqa: E402
from sklearn_ilargi.exceptions import MaterializationWarning  # noqa: E402
from sklearn_ilargi.normalized import PartitionedMatrix  # noqa: E402
from sklearn_ilargi.normalized._row_map import RowMap  # noqa: E402
from sklearn_ilargi.tests._clusters import in_process_client  # noqa: E402
from sklearn_ilargi.tests._scenarios import (  # noqa: E402
    build, partitioned, random_partitions, random_scenario, sources_as_given)
from sklearn_ilargi.utils import TrainingMatrix  # noqa: E402

RTOL = 1e-9
#: Unequal partitions, two of them empty.
CHUNKS = (9, 0, 17, 0, 14)


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed", reason="the distributed extra is not installed")
    with in_process_client() as client:
        yield client


@pytest.fixture(params=["synchronous", "cluster"])
def scheduler(request):
    """Runs the test on dask's synchronous scheduler, then on the module's LocalCluster."""
    if request.param == "synchronous":
        with dask.config.set(scheduler="synchronous"):
            yield None
        return
    client = request.getfixturevalue("client")
    with client.as_current(), dask.config.set(scheduler=client.get):
        yield client


@pytest.fixture
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def star(seed=0, n=sum(CHUNKS), offset=1e6):
    """A fact table (its values offset by ``offset``), a dense dimension with left-join
    misses and a sparse one-hot dimension: the in-memory matrix and the partitioned one."""
    rng = np.random.default_rng(seed)
    fact = rng.standard_normal((n, 3)) + offset
    dense = rng.standard_normal((6, 2))
    onehot = sp.csr_matrix(np.eye(5)[rng.integers(0, 5, 7)])
    g_dense = rng.integers(-1, 6, n)
    g_onehot = rng.integers(0, 7, n)
    names = [f"c{j}" for j in range(10)]
    with sources_as_given():
        reference = NormalizedMatrix.from_matrices(
            [fact, dense, onehot], [np.arange(n), g_dense, g_onehot], feature_names=names)
        partitioned = NormalizedMatrix.from_matrices(
            [da.from_array(fact, chunks=(CHUNKS, 3)), dense, onehot],
            [da.arange(n, chunks=(CHUNKS,)), g_dense, da.from_array(g_onehot, chunks=11)],
            feature_names=names)
    return reference, partitioned


def joined(X):
    return X.materialize(sparse=False)


def test_construction_and_repr(synchronous):
    reference, X = star()
    assert isinstance(X, PartitionedMatrix)
    assert X.shape == reference.shape and X.dtype == reference.dtype
    assert X.npartitions == len(CHUNKS) and X.row_counts == CHUNKS
    assert list(X.feature_names) == list(reference.feature_names)
    assert repr(X) == ("PartitionedMatrix(shape=(40, 10), dtype=float64, npartitions=5, "
                       "partitions='lazy')")
    persisted = X.persist()
    assert "partitions='persisted'" in repr(persisted)
    assert_allclose(persisted.gram(), reference.gram(), rtol=RTOL)


def test_products(scheduler):
    reference, X = star()
    T = joined(reference)
    rng = np.random.default_rng(1)
    W, Y = rng.standard_normal((10, 3)), rng.standard_normal((40, 2))
    product = X @ W
    # one block per non-empty partition (dask leaves empty blocks out of a concatenation)
    assert isinstance(product, da.Array) and product.chunks[0] == (9, 17, 14)
    assert_allclose(product.compute(), T @ W, rtol=RTOL)
    assert_allclose((X @ W[:, 0]).compute(), T @ W[:, 0], rtol=RTOL)
    assert_allclose(X.T @ Y, T.T @ Y, rtol=RTOL)
    # a Dask operand of other chunks is cut into the matrix's partitions
    assert_allclose(X.T @ da.from_array(Y, chunks=(7, 2)), T.T @ Y, rtol=RTOL)
    assert_allclose(Y.T @ X, Y.T @ T, rtol=RTOL)
    assert_allclose(X.gram(), T.T @ T, rtol=RTOL)
    assert_allclose(X.T @ X[:, :4], T.T @ T[:, :4], rtol=RTOL)  # over the same partitions


def test_reductions():
    with dask.config.set(scheduler="synchronous"):
        reference, X = star()
        T = joined(reference)
        rng = np.random.default_rng(2)
        weights, labels = rng.random(40), rng.integers(0, 4, 40)
        assert_allclose(X.gram(weights), T.T @ (weights[:, None] * T), rtol=RTOL)
        assert_allclose(X.group_sums(labels, 4, weights),
                        reference.group_sums(labels, 4, weights), rtol=RTOL)
        assert_allclose(X.sum(axis=0), T.sum(axis=0), rtol=RTOL)
        assert_allclose(X.sum(), T.sum(), rtol=RTOL)
        assert_allclose(X.sum(axis=1).compute(), T.sum(axis=1), rtol=RTOL)
        assert_allclose(X.mean(axis=0), T.mean(axis=0), rtol=RTOL)
        assert_allclose(X.mean(), T.mean(), rtol=RTOL)
        assert_allclose(X.row_norms(squared=True).compute(), (T * T).sum(axis=1), rtol=RTOL)
        assert_allclose(X.row_norms().compute(), np.sqrt((T * T).sum(axis=1)), rtol=RTOL)
        assert_allclose(X.min(axis=0), T.min(axis=0))
        assert_allclose(X.max(axis=0), T.max(axis=0))
        assert X.min() == T.min() and X.max() == T.max()
        with pytest.raises(ValueError, match="no factorized form"):
            X.max(axis=1)
        assert X.all_finite()


def test_centered_squares_keep_their_digits(synchronous):
    """Each partition is centered by the global mean before its gram squares it: the fact's
    columns of 1e6 +- 1 keep their digits."""
    reference, X = star()
    T = joined(reference)
    mean = T.mean(axis=0)
    centered = T - mean
    expected = centered.T @ centered
    partitioned = TrainingMatrix(X)
    assert_allclose(partitioned.centered(mean).gram(), expected, rtol=1e-9, atol=1e-8)
    assert_allclose(partitioned.centered(mean).column_sums_of_squares(),
                    (centered ** 2).sum(axis=0), rtol=1e-9)
    assert_allclose(partitioned.centered_gram(mean),
                    TrainingMatrix(reference).centered_gram(mean), rtol=1e-9, atol=1e-8)


def test_training_matrix_per_partition(synchronous):
    reference, X = star()
    rng = np.random.default_rng(3)
    offset, W = rng.standard_normal(10), rng.standard_normal((10, 2))
    R, weights = rng.standard_normal((40, 2)), rng.random(40)
    labels = rng.integers(0, 3, 40)
    expected, got = TrainingMatrix(reference, offset), TrainingMatrix(X, offset)
    assert_allclose(got.matmul(W), expected.matmul(W), rtol=RTOL)
    assert isinstance(got.matmul(W, lazy=True), da.Array)
    assert_allclose(got.rmatmul(R), expected.rmatmul(R), rtol=RTOL)
    assert_allclose(got.column_sums(weights), expected.column_sums(weights), rtol=RTOL)
    assert_allclose(got.group_sums(labels, 3, weights), expected.group_sums(labels, 3, weights),
                    rtol=RTOL)
    assert_allclose(got.column_magnitudes(), expected.column_magnitudes(), rtol=RTOL)
    assert_allclose(got.constant_columns(), expected.constant_columns())
    assert got.min() == pytest.approx(expected.min(), rel=RTOL)
    assert got.mean() == pytest.approx(expected.mean(), rel=RTOL)
    plain, plain_expected = TrainingMatrix(X), TrainingMatrix(reference)
    assert_allclose(plain.gram(weights), plain_expected.gram(weights), rtol=RTOL)
    assert_allclose(plain.row_norms_squared(), plain_expected.row_norms_squared(), rtol=RTOL)
    columns, smallest = plain.argmin_of_product(W, np.zeros(2))
    columns_expected, smallest_expected = plain_expected.argmin_of_product(W, np.zeros(2))
    assert_allclose(columns, columns_expected)
    assert_allclose(smallest, smallest_expected, rtol=RTOL)
    slices = list(plain.product_slices(W, np.ones(2)))
    assert slices[0][0] == 0 and slices[-1][1] == 40
    stacked = np.hstack([values for _, _, values in slices])
    assert_allclose(stacked, (joined(reference) @ W + 1).T, rtol=RTOL)
    rows = [5, 30, 1]
    assert_allclose(got.rows(rows), expected.rows(rows), rtol=RTOL)
    assert_allclose(got.select_rows(rows).matmul(W), expected.select_rows(rows).matmul(W),
                    rtol=RTOL)
    scale = rng.random(10) + 0.5
    assert_allclose(plain.scale_columns(scale).gram(), plain_expected.scale_columns(scale).gram(),
                    rtol=RTOL)


def test_per_partition_transformations(synchronous):
    reference, X = star()
    T = joined(reference)
    factors = np.arange(1.0, 11.0)
    assert_allclose(joined(X * factors).compute(), T * factors, rtol=RTOL)
    assert_allclose(joined(X / factors).compute(), T / factors, rtol=RTOL)
    assert_allclose(joined(-X).compute(), -T)
    assert_allclose(joined(abs(X)).compute(), np.abs(T))
    shift = np.linspace(-1, 1, 10)
    assert_allclose((X.with_shift(shift).T @ np.ones(40)), (T + shift).T @ np.ones(40),
                    rtol=RTOL)
    assert_allclose(joined(X - shift).compute(), T - shift, rtol=RTOL)
    assert_allclose(joined(X.apply(np.sin)).compute(), np.sin(T), rtol=RTOL)


def test_row_and_column_selection(synchronous):
    reference, X = star()
    T = joined(reference)
    order = np.random.default_rng(4).permutation(40)[:25]  # across partitions, shuffled
    picked = X[order]
    assert isinstance(picked, PartitionedMatrix) and picked.shape == (25, 10)
    assert_allclose(joined(picked).compute(), T[order])
    assert_allclose(joined(X[order, ["c4", "c1"]]).compute(), T[order][:, [4, 1]])
    mask = T[:, 0] > 1e6
    assert_allclose(joined(X[mask]).compute(), T[mask])
    assert_allclose(joined(X[10:30:3]).compute(), T[10:30:3])
    assert X[[]].shape == (0, 10) and joined(X[[]]).compute().shape == (0, 10)
    assert_allclose(X[12], T[12])
    assert_allclose(X[:, 3].compute(), T[:, 3])
    assert X[7, 2] == T[7, 2]


def test_materialize(synchronous):
    reference, X = star()
    T = joined(reference)
    dense = X.materialize(sparse=False)
    assert isinstance(dense, da.Array) and dense.chunks[0] == (9, 17, 14)
    assert_allclose(dense.compute(), T)
    csr = X[:, 5:].materialize(sparse=True)  # the one-hot dimension: CSR chunks
    assert sp.issparse(csr.blocks[0].compute())
    assert_allclose(sp.vstack([block.compute() for block in csr.blocks]).toarray(),
                    T[:, 5:])
    with pytest.warns(MaterializationWarning, match="PartitionedMatrix"):
        assert_allclose(np.asarray(X), T)

def test_materialize_keeps_a_sparse_join_csr_and_says_so(synchronous):
    """On a wide one-hot dimension reached by a left join, ``materialize()`` (``"auto"``)
    builds CSR chunks, decided once for every partition, and the Dask array's meta is an
    empty CSR matrix; the joined partitions are CSR too. A dense join keeps a dense meta."""
    rng = np.random.default_rng(0)
    n, n_ids = sum(CHUNKS), 300
    fact = rng.standard_normal((n, 2)) + 1e6
    onehot = sp.identity(n_ids, format="csr")
    keys = rng.integers(-1, n_ids, n)
    with sources_as_given():
        reference = NormalizedMatrix.from_matrices([fact, onehot], [np.arange(n), keys])
        X = NormalizedMatrix.from_matrices(
            [da.from_array(fact, chunks=(CHUNKS, 2)), onehot],
            [da.arange(n, chunks=(CHUNKS,)), da.from_array(keys, chunks=11)])
    assert sp.issparse(reference.materialize()) and X.join_is_sparse()
    joined = X.materialize()
    assert sp.issparse(joined._meta) and joined._meta.format == "csr"
    assert joined.shape == (n, n_ids + 2) and joined._meta.dtype == np.float64
    assert all(sp.issparse(block.compute()) for block in joined.blocks)
    computed = joined.compute()
    assert sp.issparse(computed)
    assert_allclose(computed.toarray(), reference.materialize(sparse=False))
    parts = X.materialize_partitions()
    assert sp.issparse(parts.template) and parts.join_is_sparse()
    assert all(sp.issparse(part) for part in dask.compute(*parts.partitions))
    _, dense = star()
    assert not dense.join_is_sparse()
    assert isinstance(dense.materialize()._meta, np.ndarray)


def test_joined_partitions(synchronous):
    """The materialized path: every partition joined where it lives, never collected."""
    reference, X = star()
    T = joined(reference)
    labels = np.arange(40) % 3
    for sparse in (False, True):
        parts = X.materialize_partitions(sparse=sparse)
        assert not parts.is_factorized and "joined" in repr(parts)
        assert_allclose(parts.gram(), T.T @ T, rtol=RTOL)
        assert_allclose(parts.group_sums(labels, 3), reference.group_sums(labels, 3),
                        rtol=RTOL)
        assert_allclose(parts.row_norms(squared=True).compute(), (T * T).sum(axis=1),
                        rtol=RTOL)
        assert_allclose(parts.min(axis=0), T.min(axis=0))
        assert parts.all_finite()
        assert_allclose(parts.materialize(sparse=False).compute(), T)
        matrix, expected = TrainingMatrix(parts), TrainingMatrix(reference)
        if not sparse:  # a CSR join centers by rank-one terms, as scikit-learn's sparse input
            assert_allclose(matrix.centered(T.mean(axis=0)).gram(),
                            expected.centered(T.mean(axis=0)).gram(), rtol=1e-9, atol=1e-8)
        assert_allclose(matrix.column_magnitudes(), expected.column_magnitudes())
        assert matrix.all_finite() and matrix.min() == expected.min()
    with pytest.raises(TypeError, match="joined partitions"):
        parts * 2.0


def test_row_maps_only_partitioned(synchronous):
    """In-memory sources and Dask row maps: the target's rows come from the row maps."""
    rng = np.random.default_rng(5)
    left, right = rng.standard_normal((6, 2)), rng.standard_normal((4, 3))
    g_left, g_right = rng.integers(0, 6, 30), rng.integers(-1, 4, 30)
    reference = NormalizedMatrix.from_matrices([left, right], [g_left, g_right])
    X = NormalizedMatrix.from_matrices([left, right],
                                       [da.from_array(g_left, chunks=8), g_right])
    assert X.row_counts == (8, 8, 8, 6)
    assert_allclose(X.gram(), reference.gram(), rtol=RTOL)
    assert_allclose((X @ np.ones(5)).compute(), reference @ np.ones(5), rtol=RTOL)


def test_indicators_of_every_kind(synchronous):
    """A RowMap, a list and an indicator matrix, as NormalizedMatrix.from_matrices takes."""
    rng = np.random.default_rng(7)
    fact, dim = rng.standard_normal((12, 2)), rng.standard_normal((3, 2))
    keys = rng.integers(0, 3, 12)
    reference = NormalizedMatrix.from_matrices([fact, dim], [np.arange(12), keys])
    for indicator in (keys.tolist(), np.eye(3)[keys], sp.csr_matrix(np.eye(3)[keys])):
        X = NormalizedMatrix.from_matrices([da.from_array(fact, chunks=(5, 2)), dim],
                                           [RowMap.identity(12), indicator])
        assert_allclose(X.gram(), reference.gram(), rtol=RTOL)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_scenarios_equal_the_in_memory_matrix(seed):
    """Inner, left, outer, many-to-many, union, snowflake and overlapping sources, cut into
    random partitions (some empty), give the in-memory matrix's products."""
    rng = np.random.default_rng(seed)
    scenario = random_scenario(rng, n_target=int(rng.integers(1, 30)))
    n, n_columns = len(scenario[1][0]), scenario[3]
    with dask.config.set(scheduler="synchronous"), sources_as_given():
        reference = build(scenario)
        X = partitioned(scenario, random_partitions(rng, n))
        W = rng.standard_normal(n_columns)
        Y = rng.standard_normal((n, 2))
        weights = rng.random(n)
        assert_allclose((X @ W).compute(), reference @ W, rtol=RTOL, atol=1e-12)
        assert_allclose(X.T @ Y, reference.T @ Y, rtol=RTOL, atol=1e-12)
        assert_allclose(X.gram(weights), reference.gram(weights), rtol=RTOL, atol=1e-12)
        assert_allclose(X.sum(axis=0), reference.sum(axis=0), rtol=RTOL, atol=1e-12)


def test_float32_stays_float32(synchronous):
    fact = np.arange(12, dtype=np.float32).reshape(6, 2)
    dim = np.ones((2, 1), dtype=np.float32)
    X = NormalizedMatrix.from_matrices([da.from_array(fact, chunks=(3, 2)), dim],
                                       [da.arange(6, chunks=3), [0, 1, 0, 1, 0, 1]])
    assert X.dtype == np.float32
    assert (X @ np.ones(3, dtype=np.float32)).dtype == np.float32


def test_dims_are_broadcast_once_on_a_cluster(client):
    """On a distributed client the dimension sources are scattered to every worker: every
    partition's task reads that one object, not a copy of its own."""
    with client.as_current(), dask.config.set(scheduler=client.get):
        reference, X = star()
        read = [set(part.dask[part.key].dependencies) for part in X.partitions]
        on_every_worker = set.intersection(*[set(keys) for keys in client.has_what().values()])
        shared = set.intersection(*read) & on_every_worker
        assert len(shared) == 1
        assert_allclose(X.gram(), reference.gram(), rtol=RTOL)



def test_row_operands_are_scattered_on_a_cluster(client):
    """On a distributed client an in-memory operand of the rows (``T.T @ Y``'s ``Y``, the
    weights) is sent to the workers in pieces, once, not inside the graph."""
    with client.as_current(), dask.config.set(scheduler=client.get):
        reference, X = star()
        Y = np.random.default_rng(7).random((X.shape[0], 2))
        pieces = X.split_rows(Y)
        assert all(type(p).__name__ == "Future" for p in pieces)
        assert_allclose(np.vstack(client.gather(pieces)), Y)
        assert_allclose(X.T @ Y, reference.T @ Y, rtol=RTOL)
        weights = np.random.default_rng(8).random(X.shape[0])
        assert_allclose(X.gram(weights), reference.gram(weights), rtol=RTOL)


# ---------------------------------------------------------------------- errors
def test_errors_name_what_is_wrong(synchronous):
    rng = np.random.default_rng(6)
    fact = da.from_array(rng.random((10, 2)), chunks=5)
    with pytest.raises(ValueError, match="indicator of source 1 has 9 rows"):
        NormalizedMatrix.from_matrices([fact, np.ones((2, 1))],
                                       [da.arange(10, chunks=5), np.zeros(9, dtype=int)])
    with pytest.raises(ValueError, match="indicator of 'orders' has 10 rows but the "
                                         "partitioned target has 8"):
        NormalizedMatrix.from_matrices([da.from_array(rng.random((8, 2)), chunks=4),
                                        np.ones((2, 1))],
                                       [da.arange(10, chunks=5), np.zeros(10, dtype=int)],
                                       source_names=["orders", "dim"])
    with pytest.raises(ValueError, match="Got 2 sources but 1 indicators"):
        NormalizedMatrix.from_matrices([fact, np.ones((2, 1))], [da.arange(10, chunks=5)])
    with pytest.raises(ValueError, match="mappings"):  # checked before anything runs
        NormalizedMatrix.from_matrices([fact, np.ones((2, 1))],
                                       [da.arange(10, chunks=5), np.zeros(10, dtype=int)],
                                       [[0, 1]])
    with pytest.raises(ValueError, match="dim"):  # a dimension is checked at construction
        NormalizedMatrix.from_matrices([fact, np.array([[np.nan]])],
                                       [da.arange(10, chunks=5), np.zeros(10, dtype=int)],
                                       source_names=["fact", "dim"])
    with pytest.raises(ValueError, match="partitioned source 0 must be a row map"):
        NormalizedMatrix.from_matrices([fact], [np.eye(10)])
    X = NormalizedMatrix.from_matrices([fact, np.ones((2, 1))],
                                       [da.arange(10, chunks=5), np.zeros(10, dtype=int)])
    with pytest.raises(ValueError, match="runs on the CPU"):
        X.to("gpu")
    with pytest.raises(ValueError, match="operand of 9 rows"):
        X.T @ np.ones(9)
    with pytest.raises(ValueError, match="expected \\(3,\\)"):
        (X @ np.ones(4)).compute()


def test_dask_dataframe_goes_to_from_tables(synchronous):
    dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")
    import pandas as pd

    frame = dd.from_pandas(pd.DataFrame({"a": [1.0, 2.0]}), npartitions=1)
    with pytest.raises(TypeError, match="to_dask_array"):
        NormalizedMatrix.from_matrices([frame], [np.arange(2)])


def test_a_row_map_out_of_its_partition_is_refused_when_it_runs(synchronous):
    fact = da.from_array(np.ones((4, 1)), chunks=2)
    X = NormalizedMatrix.from_matrices([fact], [da.from_array(np.array([1, 0, 0, 3]),
                                                              chunks=2)])
    with pytest.raises((ValueError, IndexError)):
        X.gram()


def test_without_dask_nothing_changes():
    """An in-memory matrix never imports Dask's array module for its own work."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X = NormalizedMatrix.from_matrices([np.ones((2, 1))], [np.arange(2)])
    assert type(X) is NormalizedMatrix


def test_tasks_run_in_worker_processes():
    """Every task's inputs and results travel between processes (dask's process scheduler
    pickles them): partitions, and arrays, never a TrainingMatrix."""
    reference, X = star()
    mean = joined(reference).mean(axis=0)
    with dask.config.set(scheduler="processes", num_workers=2):
        got = TrainingMatrix(X.persist()).centered(mean)
        assert_allclose(got.gram(), TrainingMatrix(reference).centered(mean).gram(),
                        rtol=1e-9, atol=1e-8)
        assert_allclose(got.rows([3, 30]), TrainingMatrix(reference).centered(mean).rows(
            [3, 30]), rtol=1e-9)


def _source_buffers(part, position):
    """Where the values of a partition's block at ``position`` are (a set, for unions)."""
    source = part.blocks[position].source
    return {(source.data if sp.issparse(source) else source).__array_interface__["data"][0]}


def test_partitions_share_the_broadcast_dimensions(scheduler):
    """Each dimension is checked and laid out once, before it is sent: every partition's
    matrix stores the broadcast array itself (not a copy of its own), and the template none
    of the dimensions' rows, each stored as the partitions store it."""
    rng = np.random.default_rng(4)
    n = sum(CHUNKS)
    fact = rng.standard_normal((n, 2))
    narrow = rng.standard_normal((300, 4))  # row-major here, column-major as stored
    full = sp.csr_matrix(np.eye(3)[rng.integers(0, 3, 300)])  # dense enough: stored dense
    onehot = sp.csr_matrix(np.eye(60)[rng.integers(0, 60, 2000)])  # stored sparse
    maps = [rng.integers(-1, 300, n), rng.integers(0, 300, n), rng.integers(0, 2000, n)]
    reference = NormalizedMatrix.from_matrices([fact, narrow, full, onehot],
                                               [np.arange(n), *maps])
    X = NormalizedMatrix.from_matrices(
        [da.from_array(fact, chunks=(CHUNKS, 2)), narrow, full, onehot],
        [da.arange(n, chunks=(CHUNKS,)), *maps])
    assert all(b.source.shape[0] == 0 for b in X.template.blocks[1:])
    assert [sp.issparse(b.source) for b in X.template.blocks] == \
        [sp.issparse(b.source) for b in reference.blocks] == [False, False, False, True]
    processes = 1 if scheduler is None else len(scheduler.scheduler_info()["workers"])
    kept = X.persist()  # every partition alive at once: no address is reused
    for position in (1, 2, 3):
        # The partitions themselves (a task of reduce_partitions sees a working copy).
        per_partition = dask.compute(*[dask.delayed(_source_buffers)(part, position)
                                       for part in kept.partitions])
        buffers = set().union(*per_partition)
        assert len(buffers) <= processes  # one copy per process, whatever the partitions
    assert_allclose(X.materialize(sparse=False).compute(),
                    reference.materialize(sparse=False), rtol=RTOL)
    assert_allclose(X.gram(), reference.gram(), rtol=RTOL)


def _taller_sources(part):
    """How many of a partition's sources have more rows than the partition."""
    return sum(b.source.shape[0] > part.shape[0] for b in part.blocks)


def _cached_helpers(part):
    """How many helpers the products keep on a partition's row maps."""
    return sum(len(b.row_map._cache) for b in part.blocks)


def test_tasks_run_on_the_dimension_rows_their_partition_reads(scheduler):
    """Every task computes on its partition cut down to the dimension rows that it reads,
    with row maps of its own: the results are the in-memory matrix's, and the kept
    partitions hold no helper of the products afterwards."""
    rng = np.random.default_rng(5)
    n = sum(CHUNKS)
    fact = rng.standard_normal((n, 2)) + 1e6
    wide = sp.csr_matrix(np.eye(80)[rng.integers(0, 80, 5000)])  # taller than any partition
    tall = rng.standard_normal((4000, 3)) - 1e6
    maps = [rng.integers(0, 5000, n), rng.integers(-1, 4000, n)]
    reference = NormalizedMatrix.from_matrices([fact, wide, tall], [np.arange(n), *maps])
    X = NormalizedMatrix.from_matrices([da.from_array(fact, chunks=(CHUNKS, 2)), wide, tall],
                                       [da.arange(n, chunks=(CHUNKS,)), *maps])
    kept = X.persist()
    assert sum(dask.compute(*[dask.delayed(_taller_sources)(p)
                              for p in kept.partitions])) > 0
    assert kept.reduce_partitions(_taller_sources) == 0

    w, y = rng.standard_normal(X.shape[1]), rng.standard_normal(n)
    assert_allclose((kept @ w).compute(), reference @ w, rtol=RTOL)
    assert_allclose(kept.T @ y, reference.T @ y, rtol=RTOL)
    mean = np.asarray(reference.mean(axis=0)).ravel()
    centered = TrainingMatrix(kept).centered(mean)
    assert_allclose(centered.gram(), TrainingMatrix(reference).centered(mean).gram(),
                    rtol=RTOL, atol=1e-6)
    assert sum(dask.compute(*[dask.delayed(_cached_helpers)(p)
                              for p in kept.partitions])) == 0


@pytest.mark.parametrize("monitors_off", [False, True])
def test_in_process_workers_that_would_spill_are_warned_of(monitors_off):
    """Workers that are threads of this process, with a memory limit and spilling or pausing
    on, get a warning that says how to turn those off (once per client); without them, no
    warning."""
    distributed = pytest.importorskip("distributed", reason="the distributed extra is not "
                                      "installed")
    from sklearn_ilargi.tests._clusters import MONITORS_OFF

    # Given either way: the module's cluster has them off while it lives.
    monitors_on = {"distributed.worker.memory.spill": 0.7, "distributed.worker.memory.pause": 0.8}
    with dask.config.set(MONITORS_OFF if monitors_off else monitors_on), \
            distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                     memory_limit="4GB", dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client, client.as_current(), \
            dask.config.set(scheduler=client.get), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(2):
            star()
    messages = [str(w.message) for w in seen if "threads of this process" in str(w.message)]
    assert len(messages) == (0 if monitors_off else 1)
    assert monitors_off or 'distributed.worker.memory.' in messages[0]

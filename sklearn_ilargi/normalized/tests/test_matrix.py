"""Every NormalizedMatrix operation against the same operation on the reference join."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from sklearn_ilargi.tests._scenarios import build, random_scenario, reference_matrix, scenarios
from sklearn_ilargi import (
    MaterializationWarning,
    NormalizedMatrix,
    NotFactorizableError,
    config_context,
)

RTOL = 1e-9
ATOL = 1e-12
SETTINGS = settings(max_examples=60, deadline=None)


def close(actual, expected, rtol=RTOL, atol=ATOL):
    """Values of ``actual`` (a CSR join compared as its dense array) close to ``expected``."""
    actual = actual.toarray() if sp.issparse(actual) else actual
    assert np.shape(actual) == np.shape(expected)
    assert_allclose(actual, expected, rtol=rtol, atol=atol)


def operands(T, seed=0, width=3):
    rng = np.random.default_rng(seed)
    n, c = T.shape
    return rng.standard_normal(c), rng.standard_normal((c, width)), rng.standard_normal(n), \
        rng.standard_normal((n, width))


@SETTINGS
@given(scenarios())
def test_products(case):
    nm, T = case
    x, X, y, Y = operands(T)
    close(nm @ x, T @ x)
    close(nm @ X, T @ X)
    close(nm.T @ y, T.T @ y)
    close(nm.T @ Y, T.T @ Y)
    close(y @ nm, y @ T)
    close(Y.T @ nm, Y.T @ T)
    close(X.T @ nm.T, X.T @ T.T)
    close(nm.T.T @ x, T @ x)


@SETTINGS
@given(scenarios())
def test_gram(case):
    nm, T = case
    weights = np.random.default_rng(1).random(T.shape[0])
    close(nm.T @ nm, T.T @ T)
    close(nm.gram(), T.T @ T)
    close(nm.gram(sample_weight=weights), T.T @ (weights[:, None] * T))


@SETTINGS
@given(scenarios(), st.integers(1, 12))
def test_group_sums(case, n_groups):
    nm, T = case
    rng = np.random.default_rng(n_groups)
    labels = rng.integers(0, n_groups, T.shape[0])
    weights = rng.random(T.shape[0])
    one_hot = np.eye(n_groups)[labels]
    close(nm.group_sums(labels, n_groups), T.T @ one_hot)
    close(nm.group_sums(labels.astype(np.int32), n_groups, weights),
          T.T @ (weights[:, None] * one_hot))


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.sampled_from([np.float64, np.float32]),
       st.booleans(), st.sampled_from([0.0, 1e6]))
def test_group_sums_of_column_major_sources_and_of_selections(seed, n_groups, dtype,
                                                              column_major, offset):
    # The fact table's rows and a selection's gathered rows are scattered by label: a
    # bincount per column where they are stored column-major.
    rng = np.random.default_rng(seed)
    sources, *maps = random_scenario(rng, dtype=dtype)
    sources = [s + dtype(offset) if isinstance(s, np.ndarray) else s for s in sources]
    scenario = (sources, *maps)
    with config_context(column_major_min_rows=0 if column_major else 1 << 16):
        nm = build(scenario)
    T = reference_matrix(*scenario)
    n = T.shape[0]
    labels = rng.integers(0, n_groups, n)
    weights = rng.random(n)
    rows = rng.integers(0, n, n // 2 + 1) if n else np.array([], dtype=int)
    tolerance = {"rtol": 1e-5, "atol": 1e-5 * max(offset, 1)} if dtype == np.float32 else {}
    for sub, S, group, weight in [(nm, T, labels, weights),
                                  (nm[rows], T[rows], labels[rows], weights[rows])]:
        one_hot = np.eye(n_groups)[group]
        close(sub.group_sums(group, n_groups), S.T @ one_hot, **tolerance)
        close(sub.group_sums(group.astype(np.int32), n_groups, weight),
              S.T @ (weight[:, None] * one_hot), **tolerance)


def test_group_sums_checks_its_labels():
    nm = NormalizedMatrix.from_matrices([np.ones((4, 2)), np.ones((2, 1))],
                                        [np.arange(4), [0, 1, 1, 0]])
    with pytest.raises(ValueError, match=r"labels must be integers of shape \(4,\)"):
        nm.group_sums(np.zeros(3, dtype=int), 2)
    with pytest.raises(ValueError, match=r"labels must be integers"):
        nm.group_sums(np.zeros(4), 2)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        nm.group_sums(np.array([0, 1, 2, 0]), 2)


@SETTINGS
@given(scenarios())
def test_reductions(case):
    nm, T = case
    close(nm.sum(), T.sum())
    close(nm.sum(axis=0), T.sum(axis=0))
    close(nm.sum(axis=1), T.sum(axis=1))
    close(nm.row_norms(squared=True), (T * T).sum(axis=1))
    close(nm.row_norms(), np.sqrt((T * T).sum(axis=1)))
    if T.shape[0]:
        close(nm.mean(axis=0), T.mean(axis=0))
        close(nm.mean(axis=1), T.mean(axis=1))
        close(nm.mean(), T.mean())


@SETTINGS
@given(scenarios())
def test_materialize(case):
    nm, T = case
    close(nm.materialize(), T)
    dense_csr = nm.materialize(sparse=True)
    assert sp.issparse(dense_csr)
    close(dense_csr.toarray(), T)
    close(nm.toarray(), T)


@SETTINGS
@given(scenarios())
def test_elementwise(case):
    nm, T = case
    factors = np.random.default_rng(2).uniform(0.5, 2, T.shape[1])
    close((nm * 3).materialize(), T * 3)
    close((3 * nm).materialize(), 3 * T)
    close((nm / 4).materialize(), T / 4)
    close((nm * factors).materialize(), T * factors)
    close((nm / factors).materialize(), T / factors)
    close((-nm).materialize(), -T)
    close(abs(nm).materialize(), abs(T))
    close((nm**2).materialize(), T**2)
    close((abs(nm) ** 0.5).materialize(), abs(T) ** 0.5)
    close(nm.apply(np.sin).materialize(), np.sin(T))
    close(nm.apply(np.tanh).gram(), np.tanh(T).T @ np.tanh(T))


@SETTINGS
@given(scenarios())
def test_shift_is_exact(case):
    """Centering and scaling keep a rank-one shift; every product corrects for it."""
    nm, T = case
    rng = np.random.default_rng(3)
    mu = rng.standard_normal(T.shape[1])
    scale = rng.uniform(0.5, 2, T.shape[1])
    weights = rng.random(T.shape[0])
    shifted, S = (nm - mu) / scale, (T - mu) / scale
    x, X, y, Y = operands(T)
    close(shifted.materialize(), S)
    close(shifted @ X, S @ X)
    close(shifted.T @ Y, S.T @ Y)
    close(shifted.gram(), S.T @ S)
    close(shifted.gram(weights), S.T @ (weights[:, None] * S))
    labels = rng.integers(0, 3, T.shape[0])
    close(shifted.group_sums(labels, 3, weights), S.T @ (weights[:, None] * np.eye(3)[labels]))
    close(shifted.sum(axis=0), S.sum(axis=0))
    close(shifted.sum(axis=1), S.sum(axis=1))
    close(shifted.row_norms(squared=True), (S * S).sum(axis=1))
    close((nm + 1.5).materialize(), T + 1.5)
    close((2 - nm).materialize(), 2 - T)
    close((shifted * 2)[::2].materialize(), (S * 2)[::2])


@SETTINGS
@given(scenarios())
def test_row_selection_shares_sources(case):
    nm, T = case
    n = T.shape[0]
    rng = np.random.default_rng(4)
    rows = rng.integers(0, n, n // 2 + 1) if n else np.array([], dtype=int)
    mask = rng.random(n) < 0.5
    for key, expected in [
        (rows, T[rows]),
        (mask, T[mask]),
        (slice(1, None, 2), T[1::2]),
        ((rows, Ellipsis), T[rows, ...]),
        ((mask, slice(None)), T[mask, :]),
        (np.array([], dtype=int), T[:0]),
    ]:
        sub = nm[key]
        assert isinstance(sub, NormalizedMatrix)
        close(sub.materialize(), expected)
        close(sub.gram(), expected.T @ expected)
        assert all(a.source is b.source for a, b in zip(sub.blocks, nm.blocks))
    if n:
        close(nm[n - 1], T[n - 1])
        close(nm[-1], T[-1])


@SETTINGS
@given(scenarios())
def test_column_selection(case):
    nm, T = case
    c = T.shape[1]
    columns = np.random.default_rng(5).integers(0, max(c, 1), c + 1) if c else np.arange(0)
    close(nm[:, columns].materialize(), T[:, columns])
    close(nm[:, columns].gram(), T[:, columns].T @ T[:, columns])
    close(nm[::2, 1:].materialize(), T[::2, 1:])
    close((nm - 1)[:, columns].materialize(), (T - 1)[:, columns])


@settings(max_examples=30, deadline=None)
@given(scenarios(dtype=np.float32))
def test_float32(case):
    nm, T = case
    assert nm.dtype == np.float32
    assert (nm @ np.ones(T.shape[1], np.float32)).dtype == np.float32
    x, X, y, Y = (a.astype(np.float32) for a in operands(T))
    close(nm.materialize(), T, rtol=1e-6)
    close(nm @ X, T @ X, rtol=1e-4, atol=1e-4)
    close(nm.T @ Y, T.T @ Y, rtol=1e-4, atol=1e-4)
    close(nm.gram(), T.T @ T, rtol=1e-4, atol=1e-4)


def test_mixed_dtypes_promote_to_float64():
    nm = NormalizedMatrix.from_matrices(
        [np.ones((3, 2), np.float32), np.ones((2, 1), np.int64)], [np.arange(3), [0, 1, 1]]
    )
    assert nm.dtype == np.float64


def test_one_source_is_the_source():
    rng = np.random.default_rng(0)
    S = rng.standard_normal((6, 3))
    nm = NormalizedMatrix.from_matrices([S], [np.arange(6)])
    assert len(nm.blocks) == 1 and nm.blocks[0].source is S
    close(nm.gram(), S.T @ S)


def test_pickle_round_trip():
    rng = np.random.default_rng(7)
    scenario = random_scenario(rng, n_sources=3, n_target=20)
    nm = build(scenario) - 0.5
    T = reference_matrix(*scenario) - 0.5
    nm @ np.ones(T.shape[1])  # fills per-row-map caches, which must not break pickling
    nm.T @ np.ones(T.shape[0])
    again = pickle.loads(pickle.dumps(nm))
    close(again.materialize(), T)
    close(again.gram(), T.T @ T)


def test_asarray_warns_and_materializes():
    nm = build(random_scenario(np.random.default_rng(8), n_target=10))
    with pytest.warns(MaterializationWarning, match="materialize"):
        dense = np.asarray(nm)
    close(dense, nm.materialize())


def test_not_factorizable_operations_raise():
    nm = build(random_scenario(np.random.default_rng(9), n_target=10))
    with pytest.raises(NotFactorizableError, match="f\\(0\\) == 0"):
        nm.apply(np.exp)
    with pytest.raises(NotFactorizableError, match="maps 0"):
        nm**0
    with pytest.raises(NotFactorizableError):
        nm ** -1
    with pytest.raises(NotFactorizableError, match="shifted"):
        abs(nm - 1)
    with pytest.raises(NotFactorizableError, match="shape"):
        nm * np.ones(nm.shape)
    with pytest.raises(NotFactorizableError):
        nm + np.ones((nm.shape[0], 1))
    with pytest.raises(NotFactorizableError):
        nm * nm
    with pytest.raises(NotFactorizableError):
        1 / nm
    with pytest.raises(ZeroDivisionError):
        nm / 0


def test_apply_producing_nan_raises():
    nm = NormalizedMatrix.from_matrices([np.array([[-1.0], [4.0]])], [np.arange(2)])
    with pytest.raises(ValueError, match="NaN or infinity"):
        nm.apply(np.sqrt)


def test_operand_shape_errors():
    nm = build(random_scenario(np.random.default_rng(10), n_target=10))
    with pytest.raises(ValueError, match="expected"):
        nm @ np.ones(nm.shape[1] + 1)
    with pytest.raises(ValueError, match="expected"):
        nm.T @ np.ones(nm.shape[0] + 1)
    with pytest.raises(ValueError, match="sample_weight"):
        nm.gram(np.ones(nm.shape[0] + 1))
    with pytest.raises(TypeError, match="dtype"):
        nm @ np.array(["a"] * nm.shape[1])
    with pytest.raises(IndexError, match="out of range"):
        nm[[nm.shape[0]]]
    with pytest.raises(IndexError, match="Boolean"):
        nm[np.ones(nm.shape[0] + 1, dtype=bool)]
    with pytest.raises(ValueError, match="axis"):
        nm.sum(axis=2)


@pytest.mark.parametrize("shift", [0.0, 1.5])
def test_sparse_operands_are_accepted(shift):
    scenario = random_scenario(np.random.default_rng(11), n_target=12)
    nm, T = build(scenario) + shift, reference_matrix(*scenario) + shift
    X = sp.random(T.shape[1], 2, density=0.5, random_state=0, format="csr")
    close(nm @ X, T @ X.toarray())
    one_hot = sp.csr_matrix((np.ones(12), (np.arange(12), np.arange(12) % 3)), shape=(12, 3))
    close(nm.T @ one_hot, T.T @ one_hot.toarray())


def test_attributes():
    nm = NormalizedMatrix.from_matrices(
        [np.ones((4, 2)), sp.csr_matrix(np.eye(3))], [np.arange(4), [0, 1, 2, -1]],
        feature_names=["a", "b", "c0", "c1", "c2"],
    )
    assert nm.shape == (4, 5) and nm.ndim == 2 and len(nm) == 4 and nm.size == 20
    assert nm.T.shape == (5, 4)
    assert list(nm[:, [4, 0]].feature_names) == ["c2", "a"]
    assert "NormalizedMatrix(shape=(4, 5)" in repr(nm)
    assert nm.nbytes > 0


@pytest.mark.parametrize("max_columns, values_per_slice, join_max_columns, dense_cells",
                         [(0, 1 << 24, 0, 0), (10**6, 7, 0, 0), (0, 11, 10**6, 0),
                          (10**6, 1 << 24, 3, 0), (0, 1 << 24, 0, 10**6)])
def test_every_way_of_pairing_blocks_in_the_gram(max_columns, values_per_slice,
                                                 join_max_columns, dense_cells):
    """Joined in slices, sparse or dense co-occurrence matrix, or gather-and-scatter (in
    slices on threads): the same gram."""
    plan = dict(dense_cooccurrence_cells_per_row=dense_cells,
                gather_scatter_max_columns=max_columns,
                gathered_values_per_slice=values_per_slice,
                gram_join_max_columns=join_max_columns)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        scenario = random_scenario(rng, n_sources=4, n_target=30)
        weights = rng.random(30)
        T = reference_matrix(*scenario)
        with config_context(**plan):
            nm = build(scenario)
            close(nm.gram(), T.T @ T)
            close(nm.gram(weights), T.T @ (weights[:, None] * T))


@pytest.mark.parametrize("kind", ["sparse", "sparse, left join", "dense", "dense by columns",
                                  "sparse, few rows"])
def test_blocks_apart_meet_the_slices_by_gathers_or_scatters(kind):
    """A block kept apart from the joined slices meets them by gathering its rows for each
    slice where that touches fewer values (a sparse block of one value a row over about as
    many rows as the target, a single narrow dense block offset by 1e6), else by a scatter
    onto its rows: the same gram either way, with weights and a shift, in slices of a few
    rows."""
    from sklearn_ilargi.ops._products import _gathered_for_slices

    rng = np.random.default_rng(4)
    n = 3000
    n_source = 300 if kind == "sparse, few rows" else n
    if kind.startswith("sparse"):  # wide enough to be stored sparse
        source = sp.csr_matrix((rng.random(n_source) + 1, (np.arange(n_source),
                                rng.integers(0, 500, n_source))), shape=(n_source, 500))
    else:
        source = rng.standard_normal((n_source, 1)) + 1e6
        if kind == "dense by columns":
            source = np.asfortranarray(np.repeat(source, 2, axis=1) * [1, -2])
    rows = rng.integers(-1 if "left" in kind else 0, n_source, n)
    weights = rng.random(n)
    with config_context(column_major_min_rows=0, gathered_values_per_slice=400,
                        parallel_slice_rows=0):
        nm = NormalizedMatrix.from_matrices([rng.standard_normal((n, 3)), source],
                                            [np.arange(n), rows])
        T = nm.toarray()
        assert sp.issparse(nm.blocks[1].source) == kind.startswith("sparse")
        assert _gathered_for_slices(nm.backend, nm.blocks[1], 3) == (kind != "sparse, few rows")
        close(nm.gram(), T.T @ T)
        close(nm.gram(weights), T.T @ (weights[:, None] * T))
        shifted, S = nm - 2.5, T - 2.5
        close(shifted.gram(weights), S.T @ (weights[:, None] * S), atol=1e-9)


@pytest.mark.parametrize("slice_rows", [0, 10**9])
@pytest.mark.parametrize("dots_max_columns", [0, 10**6])
@pytest.mark.parametrize("one_thread_cells", [0, 10**9])
def test_gram_on_threads_by_column_dots_and_beside(slice_rows, dots_max_columns,
                                                    one_thread_cells):
    """Every way of running the gram: slices cut one per thread (or not), column-major
    blocks by one dot product per pair of columns (or by BLAS), the small factorized blocks'
    products beside the slices' threads (or after them); with and without weights, a shift,
    and ``gathered_values_per_slice`` cutting slices of a few rows. The same gram."""
    plan = dict(parallel_slice_rows=slice_rows, gram_column_dots_max_columns=dots_max_columns,
                one_thread_cells=one_thread_cells)
    for seed in range(12):
        rng = np.random.default_rng(seed)
        scenario = random_scenario(rng, n_sources=4, n_target=int(rng.integers(20, 40)))
        T = reference_matrix(*scenario)
        weights = rng.random(T.shape[0])
        with config_context(column_major_min_rows=0, **plan):
            nm = build(scenario)
            close(nm.gram(), T.T @ T)
            close(nm.gram(weights), T.T @ (weights[:, None] * T))
            shifted, S = nm - 1.5, T - 1.5
            close(shifted.gram(weights), S.T @ (weights[:, None] * S), atol=1e-10)
            with config_context(gathered_values_per_slice=7):
                close(nm.gram(weights), T.T @ (weights[:, None] * T))


def test_fact_table_gram_in_column_major_order_on_threads():
    """A column-major fact table cut one slice per thread, paired by column dots, beside a
    dimension that misses rows: the same gram, and again from the slices' kept row maps."""
    rng = np.random.default_rng(3)
    n = 1000
    with config_context(column_major_min_rows=0, parallel_slice_rows=0):
        nm = NormalizedMatrix.from_matrices(
            [rng.standard_normal((n, 4)), rng.standard_normal((20, 30))],
            [np.arange(n), rng.integers(-1, 20, n)])
        assert nm.blocks[0].source.flags.f_contiguous
        T = nm.materialize()
        weights = rng.random(n)
        for _ in range(2):
            close(nm.gram(), T.T @ T)
            close(nm.gram(weights), T.T @ (weights[:, None] * T))


def test_groups_of_blocks_on_threads():
    """Products over tall targets scatter each row map on its own thread: the same numbers."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        scenario = random_scenario(rng, n_sources=4, n_target=30)
        nm, T = build(scenario), reference_matrix(*scenario)
        _, _, y, Y = operands(T, seed)
        weights = rng.random(30)
        with config_context(parallel_group_rows=0):
            close(nm.T @ y, T.T @ y)
            close(nm.T @ Y, T.T @ Y)
            close(nm.T @ sp.csr_matrix(Y), T.T @ Y)
            close(nm.sum(axis=0), T.sum(axis=0))
            close(nm.gram(weights), T.T @ (weights[:, None] * T))


def test_tall_fact_table_in_column_major_order():
    """Large enough to take the column-major layout of tall, narrow sources."""
    rng = np.random.default_rng(12)
    n = (1 << 16) + 5
    fact = rng.standard_normal((n, 3))
    dim = rng.standard_normal((50, 4))
    row_map = rng.integers(-1, 50, n)
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n), row_map])
    assert nm.blocks[0].source.flags.f_contiguous  # tall and narrow
    assert nm.blocks[1].source.flags.f_contiguous  # narrow enough to be joined in the gram
    T = nm.materialize()
    x, X, y, Y = operands(T)
    weights = rng.random(n)
    close(nm @ x, T @ x)
    close(nm @ X, T @ X)
    close(nm.T @ Y, T.T @ Y, rtol=1e-9, atol=1e-9)
    close(nm.gram(weights), T.T @ (weights[:, None] * T), rtol=1e-9, atol=1e-8)


def test_small_sparse_sources_are_stored_dense():
    """The shipped storage policy: a sparse source of few cells is stored dense."""
    rng = np.random.default_rng(5)
    small = sp.random(100, 5, density=0.05, format="csr", random_state=rng)
    large = sp.random(70_000, 1, density=0.05, format="csr", random_state=rng)
    for source, stays_sparse in ((small, False), (large, True)):
        n = source.shape[0]
        nm = NormalizedMatrix.from_matrices([source], [np.arange(n)])
        assert sp.issparse(nm.blocks[0].source) == stays_sparse
        close(nm.materialize(), source.toarray())


def test_thin_sources_are_stored_gathered():
    """Sparse sources with fewer than one value per target row, joined, become one gathered
    CSR block, and dense sources of one column one gathered dense block, both on the fact
    table's identity map; the others keep their row maps."""
    rng = np.random.default_rng(6)
    n = 200
    fact = rng.standard_normal((n, 2))
    thin = [sp.random(50, 3, density=0.1, format="csr", random_state=rng) for _ in range(2)]
    full = sp.random(50, 30, density=0.1, format="csr", random_state=rng)  # 3 values a row
    shared_dense = rng.standard_normal((40, 2))
    shared_sparse = sp.random(40, 2, density=0.1, format="csr", random_state=rng)
    shared_map = rng.integers(-1, 40, n)
    one_column = [rng.standard_normal((30, 1)) for _ in range(2)]
    two_columns = rng.standard_normal((30, 2))
    sources = [fact, *thin, full, shared_dense, shared_sparse, *one_column, two_columns]
    maps = [np.arange(n), rng.integers(-1, 50, n), rng.integers(0, 50, n), rng.integers(0, 50, n),
            shared_map, shared_map, rng.integers(-1, 30, n), rng.integers(0, 30, n),
            rng.integers(0, 30, n)]
    with config_context(dense_storage_max_cells=0):  # these small sparse sources stay sparse
        nm = NormalizedMatrix.from_matrices(sources, maps)
    widths = [s.shape[1] for s in sources]
    columns = [np.arange(w) + o for w, o in zip(widths, np.cumsum([0, *widths]))]
    T = reference_matrix(sources, maps, columns, sum(widths))
    identity = [b for b in nm.blocks if b.row_map.is_identity]
    assert len(nm.blocks) == 7 and len(identity) == 3
    assert all(b.row_map is identity[0].row_map for b in identity)  # one group: no gathers
    gathered_sparse, gathered_dense = identity[1:]
    assert sp.issparse(gathered_sparse.source) and gathered_sparse.source.shape == (n, 6)
    assert list(gathered_sparse.columns) == list(range(2, 8))
    assert isinstance(gathered_dense.source, np.ndarray)
    assert gathered_dense.source.shape == (n, 2) and list(gathered_dense.columns) == [42, 43]
    assert [b.source.shape[1] for b in nm.blocks if not b.row_map.is_identity] == [30, 2, 2, 2]
    x, X, y, Y = operands(T)
    close(nm.materialize(), T)
    close(nm @ X, T @ X)
    close(nm.T @ Y, T.T @ Y)
    close(nm.gram(), T.T @ T)
    close(nm[::3].gram(), T[::3].T @ T[::3])

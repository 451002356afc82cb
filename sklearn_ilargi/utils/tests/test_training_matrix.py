"""The training matrix adapter against the same operations on the joined matrix.

Every operation runs on a NormalizedMatrix (random scenarios), on its join as an ndarray and
as CSR, with and without a row offset, and must give the join's numbers.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import NormalizedMatrix, cache_info, clear_cache, config_context
from sklearn_ilargi.tests._scenarios import scenarios
from sklearn_ilargi.utils import TrainingMatrix

RTOL = 1e-9
ATOL = 1e-12
SETTINGS = settings(max_examples=40, deadline=None)
KINDS = ("normalized", "dense", "csr")


def close(actual, expected):
    assert isinstance(actual, np.ndarray)
    assert actual.shape == np.shape(expected)
    assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


def as_kind(nm, T, kind):
    return {"normalized": nm, "dense": T, "csr": sp.csr_matrix(T)}[kind]


def operands(T, width=3):
    rng = np.random.default_rng(0)
    n, c = T.shape
    return (rng.standard_normal(c), rng.standard_normal((c, width)),
            rng.standard_normal(n), rng.standard_normal((n, width)), rng.random(n),
            rng.standard_normal(c))


@SETTINGS
@given(scenarios())
def test_products_and_sums_are_the_joins(case):
    nm, T = case
    w, W, r, R, weights, mu = operands(T)
    labels = np.arange(T.shape[0]) % 3
    one_hot = np.eye(3)[labels]
    for kind in KINDS:
        for offset in (None, mu):
            matrix = TrainingMatrix(as_kind(nm, T, kind), offset)
            C = T if offset is None else T - mu
            close(matrix.matmul(w), C @ w)
            close(matrix.matmul(W), C @ W)
            close(matrix.rmatmul(r), C.T @ r)
            close(matrix.rmatmul(R), C.T @ R)
            close(matrix.column_sums(), C.sum(axis=0))
            close(matrix.column_sums(weights), C.T @ weights)
            close(matrix.group_sums(labels, 3), C.T @ one_hot)
            close(matrix.group_sums(labels, 3, weights), C.T @ (weights[:, None] * one_hot))
            rows = np.arange(T.shape[0])[::2]
            close(matrix.rows(rows), C[rows])
            if T.size:
                assert matrix.mean() == pytest.approx(C.mean(), rel=RTOL, abs=ATOL)


@SETTINGS
@given(scenarios())
def test_squares_are_the_joins(case):
    nm, T = case
    weights = operands(T)[4]
    for kind in KINDS:
        matrix = TrainingMatrix(as_kind(nm, T, kind))
        close(matrix.gram(), T.T @ T)
        close(matrix.gram(weights), T.T @ (weights[:, None] * T))
        close(matrix.row_norms_squared(), (T * T).sum(axis=1))


@SETTINGS
@given(scenarios())
def test_gram_with_columns_is_the_joins(case):
    """``gram_with(E)`` is the gram of the join beside ``E`` and a column of ones (weighted
    or not), on every kind, centered ones included (a NormalizedMatrix in its sources, CSR by
    its offset)."""
    nm, T = case
    weights, mu = operands(T)[4], operands(T)[5]
    E = np.random.default_rng(3).standard_normal((T.shape[0], 2))
    for kind in KINDS:
        for matrix, joined in ((TrainingMatrix(as_kind(nm, T, kind)), T),
                               (TrainingMatrix(as_kind(nm, T, kind)).centered(mu), T - mu)):
            both = np.hstack([joined, E, np.ones((len(T), 1))])
            for weight in (None, weights):
                W = np.ones(len(T)) if weight is None else weight
                close(matrix.gram_with(E, weight), both.T @ (W[:, None] * both))


@SETTINGS
@given(scenarios())
def test_centered_squares_are_the_joins(case):
    """``centered(mean)`` centers a NormalizedMatrix in its dense sources, an ndarray itself
    and CSR by its offset; their squares, and a CSR's squares with an offset, are the
    centered join's."""
    nm, T = case
    weights, mu = operands(T)[4], operands(T)[5]
    C = T - mu
    squares = C * C
    for kind in KINDS:
        matrix = TrainingMatrix(as_kind(nm, T, kind))
        centered = matrix.centered(mu)
        assert (centered.offset is not None) == (kind == "csr")
        assert type(centered.X) is type(matrix.X)
        for weight in (None, weights):
            W = np.ones(len(T)) if weight is None else weight
            close(centered.gram(weight), C.T @ (W[:, None] * C))
            close(matrix.centered_gram(mu, weight), C.T @ (W[:, None] * C))
            close(centered.column_sums_of_squares(weight), W @ squares)
        close(matrix.column_sums_of_squares(), (T * T).sum(axis=0))
        close(centered.row_norms_squared(), squares.sum(axis=1))
        close(centered.matmul(np.ones(T.shape[1])), C.sum(axis=1))
        # The offset counts into the mean.
        close(TrainingMatrix(as_kind(nm, T, kind), mu).centered_gram(-mu), T.T @ T)
        if T.shape[0]:
            assert_array_equal(matrix.constant_columns(), (T == T[:1]).all(axis=0))


@pytest.mark.parametrize("working_memory", [1e-9, 64.0])
@pytest.mark.parametrize("parallel_rows", [1, 1 << 30])
@pytest.mark.parametrize("weighted", [False, True])
def test_centered_array_sums_its_rows_without_a_copy(working_memory, parallel_rows,
                                                     weighted):
    """A centered ndarray's sums over its rows (the gram, the sums of squares, the closed
    forms' ``X.T @ y``, the gram beside more columns) come from slices of its rows, each
    centered as it is read, with the centered copy's digits next to a mean of 1e7; the copy
    is built for the products of an iterative solver, and serves the sums after them."""
    gen = np.random.default_rng(0)
    T = gen.standard_normal((50, 3)) * [1.0, 1e-3, 10.0] + 1e7
    T_before = T.copy()
    mu = T.mean(axis=0)
    C = T - mu
    weight = gen.random(50) if weighted else None
    W = np.ones(50) if weight is None else weight
    R = gen.standard_normal((50, 2))
    both = np.hstack([C, R, np.ones((50, 1))])
    with config_context(slice_working_memory=working_memory,
                        parallel_slice_rows=parallel_rows):
        centered = TrainingMatrix(T).centered(mu)
        close(centered.gram(weight), C.T @ (W[:, None] * C))
        close(centered.column_sums_of_squares(weight), W @ (C * C))
        close(centered.reused_rmatmul(R), C.T @ R)
        close(centered.gram_with(R, weight), both.T @ (W[:, None] * both))
        assert centered._X is None  # no copy
        close(centered.matmul(np.ones(3)), C.sum(axis=1))
        assert centered._X is not None
        close(centered.gram(weight), C.T @ (W[:, None] * C))
    assert_array_equal(T, T_before)


@SETTINGS
@given(scenarios())
def test_extremes_are_the_joins(case):
    nm, T = case
    if T.size == 0:
        return
    mu = operands(T)[5]
    for kind in KINDS:
        for offset in (None, mu):
            matrix = TrainingMatrix(as_kind(nm, T, kind), offset)
            C = T if offset is None else T - mu
            assert matrix.min() == C.min()
            close(matrix.column_magnitudes(), np.abs(C).max(axis=0))
            assert matrix.all_finite()


@SETTINGS
@given(scenarios())
def test_scaled_columns_are_the_joins(case):
    nm, T = case
    factors = np.random.default_rng(1).uniform(0.5, 2.0, T.shape[1])
    mu = operands(T)[5]
    for kind in KINDS:
        scaled = TrainingMatrix(as_kind(nm, T, kind), mu).scale_columns(factors)
        assert type(scaled.X) is type(as_kind(nm, T, kind))
        close(scaled.matmul(np.ones(T.shape[1])), ((T - mu) * factors).sum(axis=1))


def star(dtype=np.float64):
    fact = np.array([[1.0, -2.0], [3.0, 4.0], [5.0, 6.0]], dtype=dtype)
    dim = np.array([[10.0], [-30.0]], dtype=dtype)
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(3), [0, 1, -1]])


def test_gram_with_columns_corrects_the_shift_of_sparse_columns():
    """Centered, a sparse dimension keeps its mean as a rank-one term; ``gram_with``
    corrects it from the sums of the same pass, to the centered join's digits (offsets of
    1e6 on the fact table's columns, which its sources take)."""
    rng = np.random.default_rng(0)
    n = 3000
    fact = rng.standard_normal((n, 2)) + 1e6
    dim = sp.random(2000, 300, density=0.01, random_state=0, format="csr")
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n), rng.integers(0, 2000, n)])
    T = nm.materialize()
    T = T.toarray() if sp.issparse(T) else T
    mu = T.mean(axis=0)
    centered = TrainingMatrix(nm).centered(mu)
    assert centered.X.with_shift_in_sources().shift is not None  # the rank-one term is left
    E = rng.standard_normal((n, 2))
    weights = rng.random(n)
    both = np.hstack([T - mu, E, np.ones((n, 1))])
    for weight, W in ((None, np.ones(n)), (weights, weights)):
        expected = both.T @ (W[:, None] * both)
        assert_allclose(centered.gram_with(E, weight), expected, rtol=1e-9,
                        atol=1e-12 * np.abs(expected).max())


def test_gram_with_columns_of_a_float32_matrix():
    """A float32 NormalizedMatrix keeps ``E`` out of its sources (they would round it):
    the gram and a product, in float64."""
    nm = star(np.float32)
    T = nm.materialize().astype(np.float64)
    E = np.array([[1e-9], [2.0], [-3.0]])
    out = TrainingMatrix(nm).gram_with(E)
    assert out.dtype == np.float64
    both = np.hstack([T, E, np.ones((3, 1))])
    assert_allclose(out, both.T @ both, rtol=1e-6)
    assert out[-2, -2] == (E[:, 0] ** 2).sum()  # E's own gram in float64


def test_results_are_numpy_arrays_and_reductions_float64():
    nm = star(np.float32)
    matrix = TrainingMatrix(nm)
    assert matrix.dtype == np.float32 and matrix.shape == (3, 3)
    # Products follow numpy's promotion: the operand sets the precision.
    assert matrix.matmul(np.ones(3, dtype=np.float32)).dtype == np.float32
    assert matrix.matmul(np.ones(3)).dtype == np.float64
    assert matrix.rmatmul(np.ones((3, 2), dtype=np.float32)).dtype == np.float32
    for reduction in (matrix.gram(), matrix.column_sums(), matrix.group_sums(
            np.array([0, 1, 0]), 2), matrix.row_norms_squared(), matrix.column_magnitudes()):
        assert isinstance(reduction, np.ndarray) and reduction.dtype == np.float64
    assert isinstance(matrix.mean(), float) and isinstance(matrix.min(), float)
    assert matrix.rows([2]).dtype == np.float32


def test_row_norms_are_computed_once():
    matrix = TrainingMatrix(star())
    assert matrix.row_norms_squared() is matrix.row_norms_squared()


def test_squares_refuse_an_offset():
    """On dense data (and a NormalizedMatrix) a square with an offset would cancel digits:
    it is refused, and ``centered`` named; a sparse matrix takes the rank-one terms."""
    for X in (star(), star().materialize()):
        matrix = TrainingMatrix(X, offset=np.ones(3))
        with pytest.raises(ValueError, match="gram of a TrainingMatrix with an offset.*"
                                             "centered"):
            matrix.gram()
        with pytest.raises(ValueError, match="row norms of a TrainingMatrix with an offset"):
            matrix.row_norms_squared()
        with pytest.raises(ValueError, match="column sums of squares of a TrainingMatrix"):
            matrix.column_sums_of_squares()
    T = star().materialize()
    sparse = TrainingMatrix(sp.csr_matrix(T), offset=np.ones(3))
    close(sparse.gram(), (T - 1).T @ (T - 1))
    close(sparse.row_norms_squared(), ((T - 1) ** 2).sum(axis=1))


def test_min_sees_the_zeros_of_missing_rows_on_every_kind():
    nm = star()
    T = nm.materialize()
    assert T[2, 2] == 0 and T[:, 2].min() == -30
    for X in (nm, T, sp.csr_matrix(T)):
        assert TrainingMatrix(abs(X)).min() == 0.0
        assert TrainingMatrix(X).min() == -30.0


def test_all_finite_on_plain_matrices_and_offsets():
    T = star().materialize()
    assert TrainingMatrix(T).all_finite() and TrainingMatrix(sp.csr_matrix(T)).all_finite()
    bad = T.copy()
    bad[0, 0] = np.nan
    assert not TrainingMatrix(bad).all_finite()
    assert not TrainingMatrix(sp.csr_matrix(bad)).all_finite()
    assert not TrainingMatrix(T, offset=np.array([0.0, np.inf, 0.0])).all_finite()


def test_rows_of_a_normalized_matrix_stay_rows_of_the_join():
    nm = star()
    assert_array_equal(TrainingMatrix(nm).rows([2, 0]), nm.materialize()[[2, 0]])


# ---------------------------------------------------------------------- compacted selections
@st.composite
def selections(draw):
    """A scenario, its join, and rows of it: consecutive, a sorted subset, or any rows in any
    order (repeats included)."""
    nm, T = draw(scenarios())
    n = T.shape[0]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["consecutive", "sorted", "any"]))
    size = draw(st.integers(0, n))
    if kind == "consecutive":
        start = int(rng.integers(0, n - size + 1))
        rows = np.arange(start, start + size)
    elif kind == "sorted":
        rows = np.sort(rng.choice(n, size, replace=False)) if n else np.arange(0)
    else:
        rows = rng.integers(0, n, size) if n else np.arange(0)
    return nm, T, rows


@SETTINGS
@given(selections(), st.booleans())
def test_compacted_rows_are_the_joins_rows(case, offset):
    """``compact_rows`` gives the rows' numbers (products, sums, squares, centered squares),
    and no source of the result has more rows than it does, unless a source did not or the
    rows are consecutive (a view of the matrix, which keeps its sources)."""
    nm, T, rows = case
    w, W, _, _, _, mu = operands(T)
    parent = TrainingMatrix(nm, mu if offset else None)
    picked = parent.compact_rows(rows)
    C = (T - mu if offset else T)[rows]
    r = np.random.default_rng(1).standard_normal((len(rows), 2))
    weights = np.random.default_rng(2).random(len(rows))
    assert picked.shape == C.shape
    close(picked.matmul(W), C @ W)
    close(picked.rmatmul(r), C.T @ r)
    close(picked.column_sums(weights), C.T @ weights)
    close(picked.rows(np.arange(len(rows))[::-1]), C[::-1])
    centered = TrainingMatrix(nm).compact_rows(rows).centered(mu)
    D = T[rows] - mu
    close(centered.gram(weights), D.T @ (weights[:, None] * D))
    close(TrainingMatrix(nm).compact_rows(rows).gram(), T[rows].T @ T[rows])
    consecutive = len(rows) > 0 and np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows)))
    for block, before in zip(picked.X.blocks, nm[rows].blocks):
        taller = before.row_map.n_source > before.row_map.n_target and not consecutive
        assert block.source.shape[0] <= (len(rows) if taller else before.source.shape[0])
    close(TrainingMatrix(nm[rows]).compacted().matmul(w), T[rows] @ w)


def test_compacted_fact_rows_are_a_table_again():
    """A sorted selection of the fact table's rows maps through the identity and a dimension
    keeps only the rows read; consecutive rows are a view of the matrix: the fact table's
    rows, the dimension itself, and a slice of its map."""
    fact = np.arange(20.0).reshape(10, 2)
    dim = np.arange(24.0).reshape(4, 6)
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(10), np.arange(10) % 4])
    for rows, view in ((np.arange(2, 5), True), (np.array([1, 4, 8]), False)):
        compacted = TrainingMatrix(nm).compact_rows(rows).X
        fact_block, dim_block = compacted.blocks
        assert fact_block.row_map.is_identity
        assert np.shares_memory(fact_block.source, fact) == view
        if view:
            assert dim_block.source is nm.blocks[1].source
            assert np.shares_memory(dim_block.row_map.indices, nm.blocks[1].row_map.indices)
        else:
            assert dim_block.source.shape[0] == len(np.unique(rows % 4))
        assert_array_equal(compacted.materialize(), nm.materialize()[rows])
    assert TrainingMatrix(nm).compacted().X is nm  # no source has more rows than nm


def test_compacted_rows_share_their_parents_key():
    """A compacted selection's key in the cache is its parent's and the rows: the same rows
    of the same matrix find the results that an earlier fit kept."""
    nm = star()
    rows = np.array([0, 2])
    first, again = (TrainingMatrix(nm).compact_rows(rows) for _ in range(2))
    assert first._key() == again._key()
    assert TrainingMatrix(nm).compact_rows(rows[:1])._key() != first._key()
    clear_cache()
    with config_context(cache="memory"):
        close(first.gram(), again.gram())
        assert cache_info().misses["gram"] == 1 and cache_info().hits["gram"] == 1
    clear_cache()


def test_compacted_selection_is_built_only_where_a_result_is_not_kept():
    """The training fold of a search is compacted when a result is first computed: a fit
    whose results all come from the cache copies no rows."""
    fact = np.arange(20.0).reshape(10, 2)
    nm = NormalizedMatrix.from_matrices([fact, np.arange(24.0).reshape(4, 6)],
                                        [np.arange(10), np.arange(10) % 4])
    rows = np.array([0, 3, 4, 9])
    clear_cache()
    with config_context(cache="memory"):
        first = TrainingMatrix(nm[rows]).compacted()
        close(first.gram(), nm.materialize()[rows].T @ nm.materialize()[rows])
        assert first._X is not None and first.X.blocks[0].row_map.is_identity
        again = TrainingMatrix(nm[rows]).compacted()
        close(again.gram(), first.gram())
        assert again._X is None  # from the cache: nothing copied
        assert cache_info().hits["gram"] == 2
    clear_cache()


def test_centered_selection_is_built_only_where_a_result_is_not_kept():
    """Centering a compacted fold (what every candidate of a search does) copies neither
    the fold's rows nor the centered sources where the centered results come from the
    cache."""
    fact = np.arange(20.0).reshape(10, 2)
    nm = NormalizedMatrix.from_matrices([fact, np.arange(24.0).reshape(4, 6)],
                                        [np.arange(10), np.arange(10) % 4])
    rows = np.array([0, 3, 4, 9])
    mean = nm.materialize()[rows].mean(axis=0)
    D = nm.materialize()[rows] - mean
    clear_cache()
    with config_context(cache="memory"):
        first = TrainingMatrix(nm[rows]).compacted().centered(mean)
        close(first.gram(), D.T @ D)
        fold = TrainingMatrix(nm[rows]).compacted()
        again = fold.centered(mean)
        close(again.gram(), D.T @ D)
        assert fold._X is None and again._X is None  # from the cache: nothing copied
        assert cache_info().hits["gram"] == 1
    clear_cache()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("derived", ["none", "offset", "compacted and centered"])
def test_pickled_matrix_gives_the_same_products(kind, derived):
    """A TrainingMatrix survives pickling (its backend travels by name; a deferred one is
    built first): the unpickled one gives the same products, reductions and cache key."""
    nm = star()
    T = nm.materialize()
    mu = np.array([0.5, -1.0, 2.0])
    matrix = TrainingMatrix(as_kind(nm, T, kind), mu if derived == "offset" else None)
    if derived == "compacted and centered":
        matrix = matrix.compact_rows(np.array([0, 2])).centered(mu)
    copy = pickle.loads(pickle.dumps(matrix))
    assert copy._backend is matrix._backend and copy.shape == matrix.shape
    W, R = np.arange(6.0).reshape(3, 2), np.arange(2.0 * matrix.shape[0]).reshape(-1, 2)
    assert_array_equal(copy.matmul(W), matrix.matmul(W))
    assert_array_equal(copy.rmatmul(R), matrix.rmatmul(R))
    assert_array_equal(copy.column_sums(), matrix.column_sums())
    if derived != "offset" or kind == "csr":  # squares of dense data refuse an offset
        assert_array_equal(copy.gram(), matrix.gram())
    assert copy._key() == matrix._key()


@pytest.mark.parametrize("settings", [{}, dict(slice_working_memory=1e-4,
                                                parallel_slice_rows=0)],
                         ids=["one slice", "many slices on threads"])
def test_sum_over_row_slices_sums_the_rows_minus_the_offset(settings):
    rng = np.random.default_rng(8)
    X = rng.standard_normal((120, 4)) + 1e6
    original, offset = X.copy(), X.mean(axis=0)

    def squares(start, stop, rows):
        return np.array([float((rows ** 2).sum()), float(stop - start)])

    expected = [((X - offset) ** 2).sum(), 120.0]
    with config_context(**settings):
        for matrix in (TrainingMatrix(X, offset), TrainingMatrix(X).centered(offset)):
            assert_allclose(matrix.sum_over_row_slices(squares), expected, rtol=1e-9)
        assert_allclose(TrainingMatrix(X).sum_over_row_slices(squares),
                        [(X ** 2).sum(), 120.0], rtol=1e-12)
    assert_array_equal(X, original)

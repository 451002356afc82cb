"""``T @ X``, ``T.T @ Y``, the gram and the sums, over disjoint blocks plus a rank-one shift.

Every function takes a normalized matrix ``nm`` for its ``blocks``, ``shape``, ``dtype``,
``shift`` (``None`` or a length-``c_T`` vector) and ``backend``. Operands are arrays of that
backend. Each block contributes independently, so a row partition of the target could run each
function per partition and add (or stack) the results. Column bookkeeping (which target
columns a block fills) is host-side numpy; the arrays themselves stay on the backend.
"""


import numpy as np

from .._config import get_config



def _groups(blocks):
    """Blocks grouped by the row map object they share, in first-seen order."""
    groups = {}
    for block in blocks:
        groups.setdefault(id(block.row_map), []).append(block)
    return list(groups.values())


def _per_group(nm, func):
    """``(group, func(group))`` for each group of blocks sharing a row map, on threads when
    the target is tall and there are several groups."""
    groups = _groups(nm.blocks)
    if nm.shape[0] >= get_config()["parallel_group_rows"] and len(groups) > 1:
        return zip(groups, nm.backend.map_in_threads(func, groups))
    return ((group, func(group)) for group in groups)


def matmul(nm, x):
    """``T @ x`` for ``x`` of shape (c_T,) or (c_T, p)."""
    be = nm.backend
    out = None
    # The fact table's group first: its product is the output, with no gather and no copy.
    for group in sorted(_groups(nm.blocks), key=lambda g: not g[0].row_map.is_identity):
        z = be.dot(group[0].source, x[group[0].columns])
        for block in group[1:]:
            z += be.dot(block.source, x[block.columns])
        if out is None:
            out = be.gather_rows(z, group[0].row_map)  # a new array: free to accumulate into
        else:
            be.add_gathered_rows(out, z, group[0].row_map)
    if out is None:
        out = be.xp.zeros((nm.shape[0],) + x.shape[1:], dtype=be.xp.result_type(nm.dtype, x.dtype))
    if nm.shift is not None:
        out += nm.shift @ x
    return out


def rmatmul(nm, y):
    """``T.T @ y`` for ``y`` of shape (n_T,) or (n_T, p), dense or sparse (e.g. a one-hot)."""
    be = nm.backend
    out = be.xp.zeros((nm.shape[1],) + y.shape[1:], dtype=be.xp.result_type(nm.dtype, y.dtype))
    for group, summed in _per_group(nm, lambda g: be.scatter_add_rows(y, g[0].row_map)):
        for block in group:
            out[block.columns] += be.dot(block.source.T, summed)
    if nm.shift is not None:
        totals = y.sum() if y.ndim == 1 else be.column_sums(y)
        out += be.xp.multiply.outer(nm.shift, totals)
    return out


def group_sums(nm, labels, n_groups, sample_weight=None):
    """``T.T @ R`` for ``R`` the (weighted) one-hot of ``labels``: each group's column sums.

    Each row map is summed into per-source-row group counts by one bincount
    (``be.group_counts``), and each block multiplies them: no one-hot of the target's rows.
    A block with a row per target row (the fact table), or whose source is taller than the
    target (a selection of a table's rows, ``X[rows]``, whose rows are gathered: the counts
    would take a row per source row), has its rows scattered by label instead when they are
    dense (``be.label_sums``: a column at a time, a column-major source read in place), and
    multiplied by the target's one-hot when they are sparse.

    Parameters
    ----------
    labels : ndarray of int, shape (n_T,)
        Group of each target row, in ``[0, n_groups)`` (host or device array).
    n_groups : int
    sample_weight : ndarray of shape (n_T,), optional

    Returns
    -------
    ndarray of shape (c_T, n_groups)
    """
    be = nm.backend
    out = be.xp.zeros((nm.shape[1], n_groups), dtype=nm.dtype)

    def sums(group):
        row_map = group[0].row_map
        if row_map.n_target < row_map.n_source or row_map.is_identity:
            # One row of the block per target row: dense rows are scattered by label.
            rows = [block.source if row_map.is_identity else _gathered(be, block)
                    for block in group]
            if not any(be.is_sparse(r) for r in rows):
                return [be.label_sums(r, labels, n_groups, sample_weight).T for r in rows]
            one_hot = be.one_hot(labels, n_groups, sample_weight, nm.dtype)
            return [be.dot(r.T, one_hot) for r in rows]
        counts = be.group_counts(row_map, labels, n_groups, sample_weight, nm.dtype)
        with be.one_thread(_small(group)):
            return [be.dot(block.source.T, counts) for block in group]

    for group, summed in _per_group(nm, sums):
        for block, block_sums in zip(group, summed):
            out[block.columns] += block_sums
    if nm.shift is not None:
        totals = be.xp.bincount(be.xp.asarray(labels), weights=sample_weight, minlength=n_groups)
        out += be.xp.multiply.outer(nm.shift, totals.astype(nm.dtype))
    return out


def _gathered(be, block):
    """The block's rows of the target, ``G_b S_b``: sparse for a sparse source."""
    if be.is_sparse(block.source):
        return be.gather_sparse_rows(block.source, block.row_map)
    return be.gather_rows(block.source, block.row_map)


def column_sums(nm, sample_weight=None):
    """``T.T @ w`` (``w`` defaults to ones): each block's column sums weighted by row counts."""
    be = nm.backend
    out = be.xp.zeros(nm.shape[1], dtype=nm.dtype)

    def row_weights(group):
        return _row_weights(be, group[0].row_map, sample_weight, nm.dtype)

    for group, weights in _per_group(nm, row_weights):
        for block in group:
            out[block.columns] += be.column_sums(block.source, weights)
    if nm.shift is not None:
        total = nm.shape[0] if sample_weight is None else sample_weight.sum()
        out += total * nm.shift
    return out


def row_sums(nm):
    """``T @ 1``."""
    be = nm.backend
    out = be.xp.zeros(nm.shape[0], dtype=nm.dtype)
    for group in _groups(nm.blocks):
        z = sum(be.row_sums(block.source) for block in group)
        out += be.gather_rows(z, group[0].row_map)
    if nm.shift is not None:
        out += nm.shift.sum()
    return out


def row_sums_of_squares(nm):
    """Squared Euclidean norm of each row of ``T``.

    A shift is first added into the dense sources (``nm.with_shift_in_sources()``), so that
    a centered matrix's norms keep the digits of columns whose mean is large against their
    spread; what is left of it (on sparse columns) is a rank-one correction.
    """
    nm = nm.with_shift_in_sources()
    be = nm.backend
    out = be.xp.zeros(nm.shape[0], dtype=nm.dtype)
    for group in _groups(nm.blocks):
        z = sum(be.row_sums_of_squares(block.source) for block in group)
        out += be.gather_rows(z, group[0].row_map)
    if nm.shift is not None:
        base = nm.with_shift(None)
        out += 2 * matmul(base, nm.shift) + nm.shift @ nm.shift
    return out


def column_extremes(nm, kind):
    """The smallest (``kind="min"``) or largest (``kind="max"``) cell of each column of ``T``.

    A column that one block fills takes the extreme of the source rows that some target row
    reads (a source row that no target row reads is no cell), and a 0 if some target row gets
    no row of that block. A column that several blocks share (overlapping sources, or thin
    sources gathered onto the target's rows, whose zeros may be another block's cells) is
    joined, as CSR, and reduced there. The shift moves every cell of its column.

    Returns
    -------
    ndarray of shape (c_T,)
    """
    be = nm.backend
    n_rows, n_columns = nm.shape
    if n_rows == 0:
        raise ValueError(f"zero-size array to reduction operation {kind}imum which has no "
                         "identity: the matrix has no rows.")
    blocks_per_column = np.zeros(n_columns, dtype=np.int64)
    for block in nm.blocks:
        blocks_per_column[block.columns] += 1
    shared = blocks_per_column > 1
    out = be.xp.zeros(n_columns, dtype=nm.dtype)  # a column that no block fills holds zeros
    for block in nm.blocks:
        own = np.flatnonzero(~shared[block.columns])  # positions of the block's own columns
        if own.size == 0:
            continue
        source, n_read = _rows_read(be, block)
        if n_read == 0:
            continue
        extreme = be.to_dense(getattr(source, kind)(axis=0)).ravel().astype(nm.dtype)
        if n_read < n_rows:  # the target rows without a row of this block hold zeros
            extreme = (be.xp.minimum if kind == "min" else be.xp.maximum)(extreme, 0)
        out[block.columns[own]] = extreme[own]
    if shared.any():
        columns = np.flatnonzero(shared)
        joined = nm.with_shift(None)[:, columns].materialize(sparse=True)
        out[columns] = be.to_dense(getattr(joined, kind)(axis=0)).ravel().astype(nm.dtype)
    if nm.shift is not None:
        out += nm.shift
    return out


def _rows_read(be, block):
    """(the rows of ``block``'s source that some target row reads, how many target rows read
    one)."""
    row_map = block.row_map
    if row_map.is_identity:
        return block.source, row_map.n_target
    counts = be.counts(row_map)
    n_read = int(counts.sum())
    read = counts > 0
    if bool(read.all()):
        return block.source, n_read
    return block.source[be.xp.flatnonzero(read)], n_read


def gram(nm, sample_weight=None):
    """``T.T @ diag(w) @ T`` (``w`` defaults to ones), as a dense (c_T, c_T) array.

    The fact table and the narrow blocks are joined a slice of rows at a time and multiplied
    by BLAS (Morpheus' "gather" side: their pairs cost little more than reading them); every
    other block stays factorized, paired with the joined slices by a scatter and with each
    other through their row maps. Where those products are small (:func:`_small`), they run
    on one BLAS thread. The joined slices are summed on the backend's threads; the other
    blocks' products follow, on the calling thread (work handed to the threads from one of
    them would run on that one thread alone).

    A shift is first added into the dense sources (``nm.with_shift_in_sources()``): a
    rank-one correction of the gram, ``T^T T + s (1^T T) + ...``, would cancel the digits of
    every column whose shift is large against its spread. What is left of it (on sparse
    columns, where the mean is small against the spread) is corrected by rank-one terms.
    """
    nm = nm.with_shift_in_sources()
    be = nm.backend
    joined = _blocks_to_join(be, nm.blocks)
    apart = [b for b in nm.blocks if not any(b is j for j in joined)]
    small = _small(apart)
    terms = _terms_of_joined_slices(be, nm, joined, apart, sample_weight, small) if joined else []
    with be.one_thread(small):
        terms += _terms_apart(be, apart, sample_weight, nm.dtype)
    out = be.xp.zeros((nm.shape[1], nm.shape[1]), dtype=nm.dtype)
    for rows, columns, values in terms:
        _add(out, rows, columns, values)
    with be.one_thread(small):
        _add_shift_terms(out, nm, nm, sample_weight)
    return out


def _terms_apart(be, apart, sample_weight, dtype):
    """The gram's terms ``(rows, columns, values)`` of every pair among ``apart``."""
    terms = []
    for i, a in enumerate(apart):
        weights = _row_weights(be, a.row_map, sample_weight, dtype)
        terms.append((a.columns, a.columns, be.weighted_gram(a.source, weights)))
        for b in apart[i + 1:]:
            cross = _cross_gram(be, a, b, sample_weight, dtype)
            terms += [(a.columns, b.columns, cross), (b.columns, a.columns, cross.T)]
    return terms


def cross_product(a, b, sample_weight=None):
    """``A.T @ diag(w) @ B`` (``w`` defaults to ones) for two normalized matrices over the same
    target rows, as a dense (c_A, c_B) array.

    Each block of ``A`` pairs with each block of ``B`` as two blocks of one matrix pair in the
    gram (:func:`_cross_gram`: through a shared row map, a scatter onto the other's rows, or
    their co-occurrence), so neither matrix is joined. Row maps that are equal in value count
    as shared (``X[rows]`` taken twice gives two). The shifts go into the dense sources, as
    in :func:`gram`, and what is left of them adds its rank-one terms.
    """
    same = b is a
    a = a.with_shift_in_sources()
    b = a if same else b.with_shift_in_sources()
    be = a.backend
    dtype = np.result_type(a.dtype, b.dtype)
    out = be.xp.zeros((a.shape[1], b.shape[1]), dtype=dtype)
    b_blocks = _sharing_row_maps(a.blocks, b.blocks)
    for block_a in a.blocks:
        for block_b in b_blocks:
            _add(out, block_a.columns, block_b.columns,
                 _cross_gram(be, block_a, block_b, sample_weight, dtype))
    _add_shift_terms(out, a, b, sample_weight)
    return out


def _sharing_row_maps(blocks, others):
    """``others`` with each row map that equals one of ``blocks``' replaced by that one."""
    maps = list({id(block.row_map): block.row_map for block in blocks}.values())
    replaced = {}
    out = []
    for block in others:
        key = id(block.row_map)
        if key not in replaced:
            replaced[key] = next((m for m in maps if m.equals(block.row_map)), block.row_map)
        out.append(block.with_(row_map=replaced[key]))
    return out


def _add_shift_terms(out, a, b, sample_weight):
    """Add the shifts' terms to ``out``, which holds ``A.T @ diag(w) @ B`` of the unshifted
    matrices: with ``A + 1 s_a^T`` and ``B + 1 s_b^T``, they are
    ``s_a (w^T B) + (A^T w) s_b^T + (sum w) s_a s_b^T``."""
    if a.shift is None and b.shift is None:
        return
    xp = a.backend.xp
    sums_a = column_sums(a.with_shift(None), sample_weight)
    sums_b = sums_a if b is a else column_sums(b.with_shift(None), sample_weight)
    shift_a = xp.zeros(a.shape[1], a.dtype) if a.shift is None else a.shift
    shift_b = xp.zeros(b.shape[1], b.dtype) if b.shift is None else b.shift
    total = a.shape[0] if sample_weight is None else sample_weight.sum()
    outer = xp.multiply.outer
    out += outer(shift_a, sums_b) + outer(sums_a, shift_b) + total * outer(shift_a, shift_b)


def joined_in_gram(layout):
    """Which blocks the gram joins in slices of rows, from each block's ``(sparse, identity,
    columns)``: the dense fact table, plus the narrow dense blocks when at least two of them
    pair up (the cost features follow the same plan).

    Joining narrow blocks pays off through their pairs with each other, which BLAS then does
    in one product instead of a gather and a scatter each; a single narrow block is cheaper
    to keep factorized.
    """
    max_columns = get_config()["gram_join_max_columns"]
    narrow = [not sparse and not identity and columns <= max_columns
              for sparse, identity, columns in layout]
    pair_up = sum(narrow) > 1
    return [(not sparse and identity) or (is_narrow and pair_up)
            for (sparse, identity, _), is_narrow in zip(layout, narrow)]


def _blocks_to_join(be, blocks):
    """The blocks that :func:`joined_in_gram` joins, the fact table's first."""
    joined = joined_in_gram([(be.is_sparse(b.source), b.row_map.is_identity, b.shape[1])
                             for b in blocks])
    chosen = [b for b, join in zip(blocks, joined) if join]
    return sorted(chosen, key=lambda b: not b.row_map.is_identity)  # stable


def _terms_of_joined_slices(be, nm, joined, apart, sample_weight, small):
    """The gram's terms ``(rows, columns, values)`` of every pair among ``joined`` and
    between ``joined`` and ``apart`` (whose products run on one BLAS thread if ``small``).

    A slice of target rows at a time, the joined blocks' rows (the fact table's, the others
    gathered) are put side by side, multiplied by BLAS and scattered into the ``apart``
    blocks' rows. One wide product beats a product per pair of blocks: each pair would read
    its operands again. The slice is column-major: a column-major source then fills it a
    long column at a time, where row-major rows of a few values each copy slowly. The fact
    table joined alone is its own slice, a view: each slice of it is read by one product and
    the scatters into every ``apart`` block, on the thread that owns the slice.

    An ``apart`` block whose rows cost less to read for each slice than a scatter onto all
    of them (:func:`_gathered_for_slices`: a sparse block of a few values per row, say)
    meets each slice by the product of its gathered rows instead: its total is then
    ``(c_b, width)``, not one of ``(n_source, width)`` per thread.
    """
    columns = np.concatenate([b.columns for b in joined])
    overlapping = len(np.unique(columns)) < len(columns)
    if overlapping:  # blocks share target columns (in disjoint rows): add them up
        columns = np.unique(columns)
        position = np.full(nm.shape[1], -1)
        position[columns] = np.arange(len(columns))
    sources = [b.source if b.row_map.is_identity else be.xp.asfortranarray(be.to_dense(b.source))
               for b in joined]
    ends = np.cumsum([b.shape[1] for b in joined])
    width = len(columns)

    gathered = [_gathered_for_slices(be, b, width) for b in apart]

    def zeros():
        return [be.xp.zeros((width, width), nm.dtype)] + [
            be.xp.zeros((b.shape[1], width), nm.dtype) if gather
            else be.xp.zeros((b.row_map.n_source, width), nm.dtype, order="F")
            for b, gather in zip(apart, gathered)]

    def side_by_side(start, stop, scratch):
        if len(joined) == 1 and joined[0].row_map.is_identity:
            return _rows_of(be, joined[0], start, stop)
        Z = _scratch(be, scratch, "joined", (stop - start, width), nm.dtype, order="F")
        if overlapping:
            Z[...] = 0
        for block, source, end in zip(joined, sources, ends):
            if overlapping:
                be.add_at_columns(Z, position[block.columns],
                                  _rows_of(be, block, start, stop, source))
            else:
                _rows_of(be, block, start, stop, source, out=Z[:, end - block.shape[1]:end])
        return Z

    def add_slice(start, stop, scratch, totals):
        Z = side_by_side(start, stop, scratch)
        weights = None if sample_weight is None else sample_weight[start:stop]
        totals[0] += be.weighted_gram(Z, weights)
        weighted = be.scale_rows(Z, weights) if apart else None
        for block, gather, total in zip(apart, gathered, totals[1:]):
            if gather:
                total += be.dot(_gathered_rows(be, block, start, stop, scratch).T, weighted)
            else:
                be.scatter_add_rows(weighted, _rows_between(block.row_map, start, stop),
                                    out=total)

    summed = _sum_over_slices(be, add_slice, zeros, nm.shape[0], width)
    if summed is None:
        return []
    terms = [(columns, columns, summed[0])]
    with be.one_thread(small):
        for block, gather, total in zip(apart, gathered, summed[1:]):
            cross = total if gather else be.dot(block.source.T, total)
            terms += [(block.columns, columns, cross), (columns, block.columns, cross.T)]
    return terms


def _gathered_for_slices(be, block, width):
    """Whether the joined slices (``width`` columns) meet ``block``, kept apart, by gathering
    its rows for each slice rather than by scattering each slice onto its source rows.

    Each way is priced by the values it touches. A gather copies the values of the source
    row of every target row (with their column indices, where sparse), and multiplies each
    by a row of the slice. A scatter adds each target row into a total of every source row,
    zeroes and adds up one such total per thread, and multiplies the totals by the stored
    values.
    """
    row_map, sparse = block.row_map, be.is_sparse(block.source)
    stored = int(block.source.nnz) if sparse else block.source.size
    gathered = _gathered_values(be, block) * (width + (2 if sparse else 1))
    scattered = (row_map.n_target + be.threads() * row_map.n_source + stored) * width
    return gathered <= scattered


def _gathered_rows(be, block, start, stop, scratch):
    """The block's rows of target rows ``start:stop``: CSR for a sparse source, else dense
    (in a buffer of ``scratch``)."""
    if be.is_sparse(block.source):
        return be.gather_sparse_rows(block.source, _rows_between(block.row_map, start, stop))
    return _rows_of(be, block, start, stop, scratch=scratch)


def _small(blocks):
    """Whether the products of ``blocks`` are small enough for one BLAS thread: fewer than
    ``one_thread_cells`` cells in all (a setting). Such products gain little from more
    threads, and BLAS's idle threads would spin on the cores that the next threaded slices,
    or single-threaded scatters, need."""
    return sum(b.shape[0] * b.shape[1] for b in blocks) < get_config()["one_thread_cells"]


def _sum_over_slices(be, add_slice, zeros, n_rows, n_columns):
    """Sums over slices of target rows, each of the backend's threads summing its share.

    ``zeros()`` gives a thread its list of zero totals; ``add_slice(start, stop, scratch,
    totals)`` adds the contribution of rows ``start:stop`` to them. ``scratch`` is a dict of
    buffers it may keep for the thread's next slice (see :func:`_scratch`). The slices are
    those of :func:`_slices`. None when there are no rows.
    """
    slices = _slices(be, n_rows, n_columns)
    n_threads = max(1, min(be.threads(), len(slices)))

    def sum_share(share):
        scratch, totals = {}, zeros()
        for start, stop in share:
            add_slice(start, stop, scratch, totals)
        return totals

    shares = [slices[i::n_threads] for i in range(n_threads)]
    return _add_up(be.map_in_threads(sum_share, shares)) if slices else None


def _add_up(lists):
    """Element-wise sum of lists of arrays, adding into the first."""
    out = None
    for parts in lists:
        if out is None:
            out = parts
        else:
            for total, part in zip(out, parts):
                total += part
    return out


def _rows_of(be, block, start, stop, source=None, scratch=None, out=None):
    """The block's contribution to target rows ``start:stop`` (a view for the fact table).

    Gathered rows go to ``out``, or to a buffer of ``scratch`` when given.
    """
    source = block.source if source is None else source
    if block.row_map.is_identity:
        rows = be.to_dense(source[start:stop])
        if out is None:
            return rows
        out[...] = rows
        return out
    if out is None and scratch is not None:
        order = "F" if source.flags.f_contiguous and not source.flags.c_contiguous else "C"
        out = _scratch(be, scratch, id(block), (stop - start, source.shape[1]), source.dtype,
                       order=order)
    return be.gather_rows(source, _rows_between(block.row_map, start, stop), out=out)


def _rows_between(row_map, start, stop):
    """The map of the target rows ``start:stop``, kept on ``row_map``: a product's slices
    recur on every call, and so do the helpers that a backend keeps on each slice's map (its
    indices as ``np.intp``, say), which a new map would derive again."""
    return row_map.cached(("rows between", start, stop),
                          lambda: row_map.rows_between(start, stop))


def _scratch(be, scratch, key, shape, dtype, order="C"):
    """The first ``shape[0]`` rows of a buffer kept in ``scratch`` across slices.

    Slices reuse their buffers: touching fresh memory for every slice's gathered rows costs as
    much as gathering them where page faults are slow (virtual machines).
    """
    buffer = scratch.get(key)
    if buffer is None or buffer.shape[0] < shape[0]:
        buffer = scratch[key] = be.xp.empty(shape, dtype, order=order)
    return buffer[:shape[0]]


def _slices(be, n_rows, n_columns):
    """``(start, stop)`` of each slice of ``n_rows`` target rows that a product sums over.

    A slice holds about ``gathered_values_per_slice`` values (a setting) of ``n_columns``
    columns, which bounds its scratch memory. A target of at least ``parallel_slice_rows``
    rows (a setting) is cut into a multiple of the threads of slices of equal size, so that
    every core works, and as long as the others (three slices on two threads would leave
    one core idle for a third of the time).
    """
    config = get_config()
    step = max(1, config["gathered_values_per_slice"] // max(n_columns, 1))
    if n_rows >= config["parallel_slice_rows"]:
        threads = be.threads()
        n_slices = -(-(-(-n_rows // step)) // threads) * threads
        step = -(-n_rows // n_slices)
    return [(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]


def _gather_scatter_cost(be, n_rows, gathered_columns, n_out):
    """Values moved by :func:`_gather_scatter`: gather and scatter, plus adding up slices."""
    n_slices = len(_slices(be, n_rows, gathered_columns))
    return gathered_columns * (2 * n_rows + (n_slices - 1) * n_out)


def _gather_scatter(be, block, row_map, sample_weight):
    """``I.T @ diag(w) @ G_b S_b`` for another block's map ``I``, a slice of rows at a time.

    For narrow blocks this is cheaper than building the co-occurrence matrix (which sorts);
    slicing the target rows bounds the memory of the gathered rows.
    """
    source = be.to_dense(block.source)

    def zeros():
        return [be.xp.zeros((row_map.n_source, source.shape[1]), dtype=source.dtype)]

    def add_slice(start, stop, scratch, totals):
        gathered = _rows_of(be, block, start, stop, source, scratch)
        weights = None if sample_weight is None else sample_weight[start:stop]
        be.scatter_add_rows(gathered, _rows_between(row_map, start, stop), weights,
                            out=totals[0])

    summed = _sum_over_slices(be, add_slice, zeros, row_map.n_target, source.shape[1])
    return zeros()[0] if summed is None else summed[0]


def _row_weights(be, row_map, sample_weight, dtype):
    """Per source row, the (weighted) number of target rows it feeds; None for plain ones."""
    if row_map.is_identity and sample_weight is None:
        return None
    return be.counts(row_map, sample_weight, dtype)


def _add(out, rows, columns, values):
    out[rows[:, None], columns[None, :]] += values


def _cross_gram(be, a, b, sample_weight, dtype):
    """``(G_a S_a).T @ diag(w) @ (G_b S_b)`` without gathering either block."""
    if a.row_map is b.row_map:
        weights = _row_weights(be, a.row_map, sample_weight, dtype)
        return be.dot(a.source.T, be.scale_rows(b.source, weights))
    (n_a, c_a), (n_b, c_b) = a.shape, b.shape
    n_rows = a.row_map.n_target
    if a.row_map.is_identity:
        return be.dot(be.scatter_add_rows(a.source, b.row_map, sample_weight).T, b.source)
    if b.row_map.is_identity:
        return be.dot(a.source.T, be.scatter_add_rows(b.source, a.row_map, sample_weight))
    config = get_config()
    small = n_a * n_b <= config["dense_cooccurrence_cells_per_row"] * n_rows
    if not small and min(c_a, c_b) <= config["gather_scatter_max_columns"]:
        if _gather_scatter_cost(be, n_rows, c_b, n_a) <= _gather_scatter_cost(
                be, n_rows, c_a, n_b):
            return be.dot(a.source.T, _gather_scatter(be, b, a.row_map, sample_weight))
        return be.dot(_gather_scatter(be, a, b.row_map, sample_weight).T, b.source)
    co = be.cooccurrence(a.row_map, b.row_map, sample_weight, dtype, dense=small)  # n_a x n_b
    stored = co.size if small else co.nnz
    if stored * c_b + n_a * c_a * c_b <= stored * c_a + n_b * c_a * c_b:
        return be.dot(a.source.T, be.dot(co, b.source))
    return be.dot(be.dot(co.T, a.source).T, b.source)


def materialize(nm, sparse="auto"):
    """The target matrix itself: CSR or dense (``sparse`` as in ``NormalizedMatrix.materialize``).

    A sparse source is gathered as CSR, only the rows that the target reads, and densified
    after: a dense join of a few rows (``X[0]``, ``X[rows]``) never densifies a whole sparse
    source.
    """
    be = nm.backend
    n, c = nm.shape
    if sparse == "auto":
        sparse = join_is_sparse(nm)
    if sparse and nm.shift is None:
        out = be.as_csr((n, c), nm.dtype)
        for block in nm.blocks:
            gathered = be.gather_sparse_rows(block.source, block.row_map)
            out = out + gathered @ be.placement(block.columns, c, nm.dtype)
        return out.tocsr()
    out = be.xp.zeros((n, c), dtype=nm.dtype)
    for block in nm.blocks:
        if be.is_sparse(block.source):
            rows = be.to_dense(be.gather_sparse_rows(block.source, block.row_map))
        else:
            rows = be.gather_rows(block.source, block.row_map)
        be.add_at_columns(out, block.columns, rows)
    if nm.shift is not None:
        out += nm.shift
    return be.as_csr(out, nm.dtype) if sparse else out


def join_is_sparse(nm):
    """Whether ``materialize(sparse="auto")`` builds CSR: where some source is sparse, no
    shift fills every cell, and CSR takes less memory than dense (:func:`csr_pays`)."""
    be = nm.backend
    if nm.shift is not None or not any(be.is_sparse(b.source) for b in nm.blocks):
        return False
    nnz = sum(_gathered_values(be, block) for block in nm.blocks)
    return csr_pays(*join_bytes(nnz, nm.shape, nm.dtype.itemsize))


def _gathered_values(be, block):
    """The values that the join stores of ``block``: those of the source row that each
    target row reads (every cell of a dense source counts). Its cost is the target rows'."""
    source, row_map = block.source, block.row_map
    if row_map.is_identity:
        return int(source.nnz) if be.is_sparse(source) else source.size
    rows = row_map.indices[row_map.indices >= 0] if row_map.has_missing else row_map.indices
    if not be.is_sparse(source):
        return len(rows) * source.shape[1]
    return int((source.indptr[rows + 1] - source.indptr[rows]).sum())


def join_bytes(nnz, shape, itemsize):
    """``(dense, csr)``: the bytes of a join of ``shape`` with ``nnz`` stored values, as a
    dense array and as CSR (32-bit column indices, 64-bit row pointers)."""
    n_rows, n_columns = shape
    return n_rows * n_columns * itemsize, nnz * (itemsize + 4) + (n_rows + 1) * 8


def csr_pays(dense_bytes, csr_bytes):
    """Whether a join is built as CSR: when CSR takes less than the ``csr_join_max_share``
    (a setting) of its dense bytes. The cost features price the materialized path by the
    same rule, and the dispatcher builds the join as they priced it."""
    return csr_bytes < get_config()["csr_join_max_share"] * dense_bytes

"""From logical tables with target row maps to sources, row maps and column maps.

Columns become *attributes* (target features) by name. Two tables that share a non-key column
name either fail, share one attribute (coalesce: the first table in the description that has the
row wins) or keep two renamed ones (suffix). Each input table then becomes one source: a dense
block when all its features are numeric, else one block holding its numeric columns and its
one-hot columns (one gather per table in every product, where a dense and a CSR source
with separate row maps would gather twice): CSR, or dense straight away where the core would
store it dense. A dimension's categories cost per dimension row, never per target row.
"""

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs

from ..normalized._parse import is_identity
from ..normalized._storage import column_major, dense_enough
from ..normalized._row_map import index_dtype
from ._input import (
    CATEGORICAL, DATE, NUMERIC, OTHER, encode, numeric_values, stored_values)

_CATEGORICAL_CHOICES = ("onehot", "drop", "error")


def plan_attributes(nodes, overlaps, features, exclude, categorical, shared_keys):
    """Ordered attributes: final name -> (kind, [(node index, column), ...]).

    Parameters
    ----------
    nodes : list of Node
    overlaps : list of str
        The overlap rule of each node (the base's is never used).
    features : list of column names or None
        Columns to use; None for every encodable one except the join keys. A key named here
        is a feature too.
    exclude : set of (node index, column)
        Target column(s), never features. Key columns are read from ``node.keys``.
    categorical : {"onehot", "drop", "error"}
    shared_keys : dict
        Key name -> the nodes whose same-named key columns ``pandas.merge`` keeps as one
        column; named in ``features``, they are one attribute, coalesced like pandas' column.
    """
    if categorical not in _CATEGORICAL_CHOICES:
        raise ValueError(f"categorical must be one of {_CATEGORICAL_CHOICES}, got "
                         f"{categorical!r}.")
    wanted = None if features is None else list(dict.fromkeys(features))
    if wanted is not None:
        known = {c for node in nodes for c in node.columns}
        unknown = [c for c in wanted if c not in known]
        if unknown:
            raise KeyError(f"Feature column(s) {unknown} exist in no table "
                           f"({[n.name for n in nodes]}).")
    names, attributes = [], {}
    for i, node in enumerate(nodes):
        for column in node.columns:
            if not _is_candidate(i, column, nodes, wanted, exclude):
                continue
            kind = _attribute_kind(node, column)
            where = f"Table {node.name!r} column {column!r}"
            if kind == OTHER:
                raise TypeError(f"{where} {_why_not_encodable(node, column)}; leave it out "
                                "with features=[...].")
            if kind == CATEGORICAL and categorical != "onehot":
                if categorical == "error" or wanted is not None:
                    raise TypeError(f"{where} is categorical but categorical={categorical!r}.")
                continue
            if column not in attributes:
                names.append(column)
                attributes[column] = (kind, [(i, column)])
                continue
            earlier_kind, providers = attributes[column]
            same_key = _same_key(attributes, column, i, nodes, shared_keys)
            rule = "coalesce" if same_key else overlaps[i]
            if rule == "error":
                raise ValueError(
                    f"Tables {_provider(nodes, attributes, column)} and {node.name!r} both "
                    f"have the column {column!r}; pass overlap='coalesce' or 'suffix' to "
                    f"the join {node.name!r}, or leave the column out with features=[...]."
                )
            if rule == "coalesce":
                if earlier_kind != kind:
                    raise TypeError(
                        f"Cannot coalesce column {column!r}: it is {earlier_kind} in table "
                        f"{_provider(nodes, attributes, column)} but {kind} in {node.name!r}."
                    )
                providers.append((i, column))
                continue
            _suffix(names, attributes, column, kind, i, nodes, wanted, exclude)
    if not names:
        raise ValueError("No feature columns are left (keys and the target are not features).")
    return [(name,) + attributes[name] for name in names]


def _is_candidate(i, column, nodes, wanted, exclude):
    """Whether column ``column`` of node ``i`` is to be a feature: named in ``features``
    (keys included), or by default any column but the keys; never the target."""
    if (i, column) in exclude:
        return False
    return column not in nodes[i].keys if wanted is None else column in wanted


def _same_key(attributes, column, i, nodes, shared_keys):
    """Whether key ``column`` of node ``i`` and the attribute of that name are the same-named
    keys of joins, which ``pandas.merge`` keeps as one column."""
    first, first_column = attributes[column][1][0]
    group = shared_keys.get(column, ())
    return (column in nodes[i].keys and first_column == column and first in group
            and i in group)


def _provider(nodes, attributes, name):
    """The table of attribute ``name`` for messages, with its column where it was renamed."""
    i, column = attributes[name][1][0]
    if column == name:
        return repr(nodes[i].name)
    return f"{nodes[i].name!r} (column {column!r}, renamed {name!r})"


def _why_not_encodable(node, column):
    """Why a column of kind OTHER has no encoding, for the error."""
    for member in node.members:
        if not member.has(column):
            continue
        dtype = member.column(column).dtype
        # pandas' dtype checks raise on some Arrow types; Arrow has no complex numbers
        if not isinstance(dtype, pd.ArrowDtype) and pd.api.types.is_complex_dtype(dtype):
            return "holds complex numbers, which have no float64 encoding"
    return "cannot be encoded (not numeric, boolean, decimal, date, string or categorical)"


def _suffix(names, attributes, column, kind, i, nodes, wanted, exclude):
    """Keep both attributes named ``column``, renamed as pandas does: the earlier one
    ``<column>_x``, node ``i``'s ``<column>_y``. Refused, as ``pandas.merge`` refuses it, when
    either name is a feature already (an earlier attribute, or a feature column of node
    ``i``): feature names stay unique."""
    node, earlier, later = nodes[i], f"{column}_x", f"{column}_y"
    for name in (earlier, later):
        in_node = name in node.columns and _is_candidate(i, name, nodes, wanted, exclude)
        if in_node or name in attributes:
            owner = repr(node.name) if in_node else _provider(nodes, attributes, name)
            raise ValueError(
                f"overlap='suffix' on the join {node.name!r} would rename column {column!r} "
                f"to {name!r}, a name table {owner} has already (pandas.merge refuses this "
                "too); rename one of them, or leave one out with features=[...]."
            )
    names[names.index(column)] = earlier
    attributes[earlier] = attributes.pop(column)
    names.append(later)
    attributes[later] = (kind, [(i, column)])


def _attribute_kind(node, column):
    """The column's kind (dates are numeric); a union's members must agree."""
    kinds = {}
    for member in node.members:
        if member.has(column):
            kind = member.kind(column)
            kinds.setdefault(NUMERIC if kind == DATE else kind, []).append(member.name)
    if len(kinds) > 1:
        listed = "; ".join(f"{kind} in {members}" for kind, members in kinds.items())
        raise TypeError(f"Union {node.name!r} column {column!r} has different kinds in its "
                        f"members ({listed}); encode it alike in all of them.")
    return next(iter(kinds))


def build_sources(nodes, node_maps, attributes, fill_value):
    """Sources, row maps, column maps, target feature names and source names.

    ``node_maps[i]`` maps each target row to a row of ``nodes[i]`` (``-1`` for none).
    """
    _factorize_in_threads([(m, col) for _, kind, providers in attributes
                           if kind == CATEGORICAL for i, col in providers
                           for m in nodes[i].members if m.has(col)])
    feature_names, placement = _place_attributes(nodes, attributes)
    sources, row_maps, column_maps, source_names, numeric_providers = [], [], [], [], []
    for i, node in enumerate(nodes):
        for m, member in enumerate(node.members):
            used = [c for c in member.columns if (i, c) in placement]
            if not used:
                continue
            row_map = _member_map(node_maps[i], node, m)
            dense = [c for c in used if placement[(i, c)][0] != CATEGORICAL]
            onehot = [c for c in used if placement[(i, c)][0] == CATEGORICAL]
            numeric = [numeric_values(member.column(c), member.kind(c),
                                      fill_value, f"Table {member.name!r} column {c!r}")
                       for c in dense]
            # one block per table: its numeric and one-hot columns share one gather
            parts, columns, offset = [], [[placement[(i, c)][1] for c in dense]], 0
            for c in onehot:
                _, first, categories = placement[(i, c)]
                codes, names = member.factorized(c)
                parts.append((codes, names, categories, offset))
                columns.append(np.arange(first, first + len(categories)))
                offset += len(categories)
            shape = (member.n_rows, len(dense) + offset)
            # built as the core would store it: CSR unless dense enough, column-major if a
            # tall, narrow fact table
            order = "F" if column_major(shape, is_fact=is_identity(row_map, shape[0])) else "C"
            if onehot and not dense_enough(stored_values(numeric, parts), shape):
                order = None
            sources.append(encode(numeric, parts, member.n_rows, order))
            column_maps.append(np.concatenate(columns).astype(np.int64))
            source_names.append(member.name)
            row_maps.append(row_map)
            if dense:
                numeric_providers.append((len(sources) - 1, len(dense)))
            member.release()
    if fill_value != 0:
        _add_fill_sources(sources, row_maps, column_maps, source_names, numeric_providers,
                          fill_value)
    return sources, row_maps, column_maps, feature_names, source_names


def _place_attributes(nodes, attributes):
    """Target feature names (str, unique) and each provider's (kind, first target column,
    categories); a one-hot attribute has one column per category, ``"<name>_<category>"``."""
    feature_names, origins = [], []
    placement = {}  # (node index, column) -> (kind, first target column, categories)
    for name, kind, providers in attributes:
        categories = None
        i, column = providers[0]
        origin = f"column {column!r} of table {nodes[i].name!r}"
        if kind == CATEGORICAL:
            categories = sorted({c for i, col in providers for m in nodes[i].members
                                 if m.has(col) for c in m.factorized(col)[1]})
            cols = [f"{name}_{c}" for c in categories]
            origins += [f"{origin} (category {c!r})" for c in categories]
        else:
            cols = [str(name)]
            origins.append(origin)
        for provider in providers:
            placement[provider] = (kind, len(feature_names), categories)
        feature_names += cols
    first = {}
    for name, origin in zip(feature_names, origins):
        if name in first:
            raise ValueError(
                f"Two features would be named {name!r}: {first[name]} and {origin}; "
                "feature names must be unique: rename one, or leave one out with "
                "features=[...]."
            )
        first[name] = origin
    return feature_names, placement


def _factorize_in_threads(columns):
    """Factorize the (table, column) pairs side by side; each table caches its result.

    Columns are read one after the other (a Parquet reader is not shared across threads);
    pandas and pyarrow release the GIL while they hash the values.
    """
    for member, column in columns:
        member.column(column)
    # Threads whatever joblib is set to: the results are cached on the tables of this process,
    # which also makes the workers see its settings.
    Parallel(n_jobs=min(len(columns), effective_n_jobs(-1)) or 1, require="sharedmem")(
        delayed(member.factorized)(column) for member, column in columns)


def _member_map(node_map, node, m):
    """Target rows -> rows of member ``m`` of ``node`` (a union member holds a slice)."""
    if not node.is_union:
        return node_map
    lo, hi = node.offsets[m], node.offsets[m + 1]
    inside = (node_map >= lo) & (node_map < hi)
    return np.where(inside, node_map - lo, -1).astype(index_dtype(hi - lo))


def _add_fill_sources(sources, row_maps, column_maps, source_names, numeric_providers,
                      fill_value):
    """Constant one-row sources that fill a numeric column where no table has the row.

    They come after every real source, so the core's "first source with a row wins" lets
    each real source (and a coalesced one) take precedence.
    """
    providers = {}
    for s, n_numeric in numeric_providers:  # a source's numeric columns come first
        for column in column_maps[s][:n_numeric]:
            providers.setdefault(int(column), []).append(s)
    groups = {}
    for column, group in providers.items():
        groups.setdefault(tuple(group), []).append(column)
    for group, columns in groups.items():
        present = np.zeros(row_maps[group[0]].shape[0], dtype=bool)
        for s in group:
            present |= row_maps[s] >= 0
        if present.all():
            continue
        sources.append(np.full((1, len(columns)), float(fill_value)))
        row_maps.append(np.where(present, -1, 0).astype(np.int32))
        column_maps.append(np.array(columns))
        source_names.append(f"fill for {source_names[group[0]]}")

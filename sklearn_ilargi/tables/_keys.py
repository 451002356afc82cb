"""Match rows by keys only: key codes, match groups, and the target rows a join produces.

No feature column is touched here. Keys become integer codes (``-1`` for null: a null key matches
nothing, as in SQL), the joined table's rows are grouped by code, and a join turns the current
target rows into new ones exactly as ``pandas.merge`` orders them: each left row in order,
followed by its matches in the joined table's row order; unmatched left rows kept once by
``how="left"``/``"outer"``; unmatched joined rows appended at the end by ``"outer"``.
"""

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._config import get_config
from ..normalized._row_map import index_dtype


def _key_kind(series):
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _key_kind(pd.Series(dtype.categories)) if len(dtype.categories) else "empty"
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_string_dtype(dtype) and dtype != object:
        return "string"
    inferred = pd.api.types.infer_dtype(series, skipna=True)
    if inferred == "empty":
        return "empty"
    if inferred in ("integer", "floating", "mixed-integer-float", "decimal", "boolean"):
        return "number"
    if inferred == "string":
        return "string"
    if inferred in ("date", "datetime", "datetime64"):
        return "datetime"
    return inferred


def _checked_kind(series, where):
    kind = _key_kind(series)
    if kind not in ("number", "string", "datetime", "empty"):
        raise TypeError(f"Key {where} holds values of type {kind!r}; keys must be "
                        "numbers, strings or dates.")
    return kind


def check_union_key(columns, wheres):
    """Refuse a union key whose members hold different types (naming the members): their
    values would not compare with each other, so nothing would match.

    Parameters
    ----------
    columns : list of pandas.Series
        The key column of each member.
    wheres : list of str
        ``"table 'u[0]' column 'k'"`` per member, for error messages.
    """
    typed = []
    for series, where in zip(columns, wheres):
        kind = _checked_kind(series, where)
        if kind == "datetime" and _utc_datetimes(series, where)[1]:
            kind = "time-zone-aware datetime"
        if kind != "empty":
            typed.append((kind, where, series.dtype))
    for kind, where, dtype in typed[1:]:
        first_kind, first_where, first_dtype = typed[0]
        if kind != first_kind:
            raise TypeError(
                f"Keys of incompatible types within one union: {first_where} holds "
                f"{first_kind}s ({first_dtype}) but {where} holds {kind}s ({dtype})."
            )


def _plain(series, kind):
    """Values ready to be factorized together with the other side's (not datetimes)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    if kind == "string":
        return series.astype(object)
    if series.dtype == object:
        return pd.to_numeric(series.map(float, na_action="ignore"))
    return series


def _utc_datetimes(series, where):
    """(naive datetime64 Series in UTC, whether ``series`` has a time zone)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    try:
        values = pd.to_datetime(series)
    except (TypeError, ValueError) as error:  # naive and aware values mixed, say
        raise TypeError(f"Key {where} holds datetimes that cannot be compared with each "
                        f"other: {error}") from error
    aware = getattr(values.dt, "tz", None) is not None
    if aware:
        values = values.dt.tz_convert("UTC").dt.tz_localize(None)
    if isinstance(values.dtype, pd.ArrowDtype):
        values = values.astype(f"datetime64[{values.dtype.pyarrow_dtype.unit}]")
    return values, aware


def _datetime_keys(l_col, r_col, l_where, r_where, both_typed):
    """Both sides' datetime keys in UTC; refused when only one side has a time zone, as
    ``pandas.merge`` refuses it (a naive datetime is no instant, so nothing would match)."""
    (left, l_aware), (right, r_aware) = (_utc_datetimes(l_col, l_where),
                                         _utc_datetimes(r_col, r_where))
    if both_typed and l_aware != r_aware:
        zone = {True: "time-zone-aware", False: "time-zone-naive"}
        raise TypeError(
            f"Keys of incompatible types: {l_where} holds {zone[l_aware]} datetimes "
            f"({l_col.dtype}) but {r_where} holds {zone[r_aware]} ones ({r_col.dtype}); "
            "pandas.merge refuses them too. Give both a time zone (Series.dt.tz_localize) "
            "or neither (Series.dt.tz_localize(None))."
        )
    return left, right


def key_codes(left, right, left_where, right_where):
    """Integer codes of the left and right keys; equal keys get equal codes, null gets -1.

    Parameters
    ----------
    left, right : list of pandas.Series
        One Series per key column, the same number on each side.
    left_where, right_where : list of str
        ``"table 'x' column 'k'"`` per key column, for error messages.

    Returns
    -------
    left_codes, right_codes : ndarray of int
    """
    n_left, n_right = len(left[0]), len(right[0])
    columns = [_column_codes(*sides) for sides in zip(left, right, left_where, right_where)]
    paired = _pair_codes(*columns, n_left) if len(columns) == 2 else None
    if paired is not None:
        codes, width = paired
    else:
        codes, width = columns[0][0], max(columns[0][1], 1)
        for column_codes, n_codes in columns[1:]:
            null = (codes < 0) | (column_codes < 0)
            codes = codes.astype(np.int64) * max(n_codes, 1) + column_codes
            codes[null] = -1
            width *= max(n_codes, 1)
    left_codes, right_codes = codes[:n_left], codes[n_left:n_left + n_right]
    if width > 4 * (n_right + 1):
        left_codes, right_codes = _compact(left_codes, right_codes)
    return left_codes, right_codes


def _column_codes(l_col, r_col, l_where, r_where):
    """(codes, number of codes) of one key column over the left then the right rows."""
    l_kind, r_kind = _checked_kind(l_col, l_where), _checked_kind(r_col, r_where)
    both_typed = "empty" not in (l_kind, r_kind)
    if both_typed and l_kind != r_kind:
        raise TypeError(
            f"Keys of incompatible types: {l_where} holds {l_kind}s ({l_col.dtype}) but "
            f"{r_where} holds {r_kind}s ({r_col.dtype})."
        )
    kind = r_kind if l_kind == "empty" else l_kind
    column_codes, n_codes = _integer_codes(l_col, r_col)
    if column_codes is None:
        if kind == "datetime":
            sides = _datetime_keys(l_col, r_col, l_where, r_where, both_typed)
        else:
            sides = [_plain(l_col, kind), _plain(r_col, kind)]
        both = pd.concat(sides, ignore_index=True)
        column_codes, uniques = pd.factorize(both)
        column_codes, n_codes = column_codes.astype(np.int64), len(uniques)
    return column_codes, n_codes


def _pair_codes(first, second, n_left):
    """(codes, width) of a two-column key from its columns' codes, without hashing.

    Every row looks its second value up among the right's (at most ``pair_slots``, a setting)
    second values of its first value; its code is (first value, slot). This avoids hashing the
    combined codes, which dominates matching a fact table against a wide composite key (TPC-H's
    lineitem x partsupp; ``benchmarks/tables.py`` measures it). None when a first value has
    more slots, or the key would not need compacting anyway.
    """
    (codes1, n1), (codes2, n2) = first, second
    n1, n2 = max(n1, 1), max(n2, 1)
    n_right = codes1.size - n_left
    if n1 * n2 <= 4 * (n_right + 1):  # combined codes are small already
        return None
    right1, right2 = codes1[n_left:], codes2[n_left:]
    valid = (right1 >= 0) & (right2 >= 0)
    pairs = np.sort(right1[valid].astype(np.int64) * n2 + right2[valid])
    # distinct by sorting the int64 pairs: cheaper than np.unique's hashing on many pairs
    pairs = pairs[np.append(True, pairs[1:] != pairs[:-1])]
    pair_first = pairs // n2
    per_first = np.bincount(pair_first, minlength=n1)
    slots = max(int(per_first.max(initial=0)), 1)
    if slots > get_config()["pair_slots"]:
        return None
    slot = np.arange(pairs.size) - (np.cumsum(per_first) - per_first)[pair_first]
    seconds = np.full((slots, n1), -1, dtype=codes2.dtype)  # no second code is -1 once valid
    seconds[slot, pair_first] = pairs % n2
    known = (codes1 >= 0) & (codes2 >= 0)
    safe_first = np.where(known, codes1, 0).astype(np.intp)
    codes = np.full(codes1.size, -1, dtype=index_dtype(n1 * slots))
    for j in range(slots):
        hit = seconds[j].take(safe_first) == codes2
        hit &= known
        codes[hit] = safe_first[hit] * slots + j
    return codes, n1 * slots


def _integer_codes(left, right):
    """``value - min`` when both sides are plain integers in a range not much wider than the
    rows (no hashing needed); ``(None, 0)`` otherwise."""
    l_values, r_values = left.to_numpy(), right.to_numpy()
    if l_values.dtype.kind not in "iu" or r_values.dtype.kind not in "iu":
        return None, 0
    if not (l_values.size and r_values.size):
        return None, 0
    lo = min(int(l_values.min()), int(r_values.min()))
    hi = max(int(l_values.max()), int(r_values.max()))
    if hi - lo > 4 * (l_values.size + r_values.size):
        return None, 0
    codes = np.empty(l_values.size + r_values.size, dtype=index_dtype(hi - lo + 1))
    np.subtract(l_values, lo, out=codes[:l_values.size], casting="unsafe")
    np.subtract(r_values, lo, out=codes[l_values.size:], casting="unsafe")
    return codes, hi - lo + 1


def _compact(left_codes, right_codes):
    """Renumber codes by the right side's distinct ones; left codes absent there become -1."""
    valid = right_codes >= 0
    compact, distinct = pd.factorize(right_codes[valid])
    right = np.full(right_codes.shape[0], -1, dtype=np.int64)
    right[valid] = compact
    left = pd.Index(distinct).get_indexer(left_codes)  # -1 (null) is never in distinct
    return left.astype(np.int64, copy=False), right


@dataclass
class Matches:
    """For each left row, its matching rows of the joined table.

    ``left_codes[p]`` is left row ``p``'s group (``-1``: none); the rows of group ``c`` are
    ``order[start[c]:start[c] + count[c]]``, in the joined table's row order.
    """

    left_codes: np.ndarray
    order: np.ndarray
    start: np.ndarray
    count: np.ndarray
    unique: bool = False

    @classmethod
    def from_codes(cls, left_codes, right_codes):
        n_groups = int(max(left_codes.max(initial=-1), right_codes.max(initial=-1))) + 1
        valid = np.flatnonzero(right_codes >= 0)
        order = valid[np.argsort(right_codes[valid], kind="stable")]
        count = np.bincount(right_codes[valid], minlength=n_groups)
        unique = count.size == 0 or int(count.max()) <= 1
        return cls(left_codes, order, np.cumsum(count) - count, count, unique)

    @classmethod
    def from_pairs(cls, left_rows, right_rows, n_left):
        order_of_pairs = np.lexsort((right_rows, left_rows))
        left_sorted, right_sorted = left_rows[order_of_pairs], right_rows[order_of_pairs]
        count = np.bincount(left_sorted, minlength=n_left)
        unique = count.size == 0 or int(count.max()) <= 1
        return cls(np.arange(n_left), right_sorted, np.cumsum(count) - count, count, unique)

    def right_unique(self):
        """Whether every left row matches at most one joined row."""
        return self.unique

    def first_match(self):
        """For each left row, its only matching joined row or -1 (when ``unique``)."""
        by_code = np.full(self.count.size + 1, -1,
                          dtype=index_dtype(int(self.order.max(initial=0)) + 1))
        by_code[np.flatnonzero(self.count)] = self.order
        return by_code[self.left_codes]


def duplicated_pair(left_rows, right_rows):
    """The first repeated (left, right) pair, or None."""
    keys = pd.MultiIndex.from_arrays([left_rows, right_rows])
    dup = keys.duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        return int(left_rows[i]), int(right_rows[i])
    return None


def target_codes(matches, parent_map):
    """Group code of each target row (through its parent row), ``-1`` for none."""
    if parent_map is None:
        return matches.left_codes
    return np.append(matches.left_codes, -1)[parent_map]


def expand(matches, codes, how, n_right):
    """The target rows after a join.

    Parameters
    ----------
    matches : Matches
    codes : ndarray of int
        Group code per current target row (``-1``: no match possible).
    how : {"inner", "left", "outer"}
    n_right : int
        Rows of the joined table.

    Returns
    -------
    taken : ndarray of int64 or None
        For each new target row, the current target row it extends (``-1`` for the joined
        table's unmatched rows of an outer join); ``None`` when the rows stay as they are.
    right : ndarray of int64
        For each new target row, the joined table's row (``-1`` for none).
    """
    n_target = codes.shape[0]
    count = np.append(matches.count, 0)[codes]
    start = np.append(matches.start, 0)[codes]
    order = np.append(matches.order, -1)
    if count.size == 0 or count.max() <= 1:
        if how == "inner" and not count.all():
            taken = np.flatnonzero(count)
            right = order[start[taken]]
        else:
            taken = None
            right = np.where(count > 0, order[start], -1)
    else:
        repeats = count if how == "inner" else np.maximum(count, 1)
        taken = np.repeat(np.arange(n_target), repeats)
        first = np.cumsum(repeats) - repeats
        offset = np.arange(taken.size) - np.repeat(first, repeats)
        right = np.where(count[taken] > 0, order[start[taken] + offset], -1)
    if how == "outer":
        matched = np.zeros(n_right, dtype=bool)
        matched[right[right >= 0]] = True
        extra = np.flatnonzero(~matched)
        if extra.size:
            if taken is None:
                taken = np.arange(n_target)
            taken = np.concatenate([taken, np.full(extra.size, -1)])
            right = np.concatenate([right, extra])
    return taken, right


def expand_unique(first, parent_map, how, n_right):
    """``expand`` when every left row matches at most one joined row (many-to-one).

    ``first`` maps each *parent* row to its joined row (or -1); composing it with the parent's
    row map is one gather over the target rows, whatever the snowflake depth.
    """
    right = first if parent_map is None else np.append(first, -1)[parent_map]
    taken = None
    if how == "inner":
        keep = right >= 0
        if not keep.all():
            taken = np.flatnonzero(keep)
            right = right[taken]
    elif how == "outer":
        matched = np.zeros(n_right, dtype=bool)
        matched[right[right >= 0]] = True
        extra = np.flatnonzero(~matched)
        if extra.size:
            taken = np.concatenate([np.arange(right.size), np.full(extra.size, -1)])
            right = np.concatenate([right, extra])
    return taken, right


def gather(row_map, taken):
    """A target row map carried over to the new target rows (``-1`` stays ``-1``)."""
    if taken is None:
        return row_map
    return np.append(row_map, -1)[taken].astype(row_map.dtype, copy=False)

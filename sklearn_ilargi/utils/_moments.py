"""The weighted means of ``X`` and ``Y`` and the sums of squares and products of their centered
columns: what a closed form (least squares, PCA, the scaler) reads of the data.

In memory they take a pass for the means and one for the centered sums, which keeps the
digits of a column whose mean is large against its spread. Over Dask partitions each partition
computes its own, and the partial results are merged pairwise by the update of Chan, Golub and
LeVeque: the sums of two parts about the mean of both are their sums about their own means plus
a rank-one term in the difference of those means. That keeps the same digits, and reads each
partition once.
"""

import functools
from collections import namedtuple

import numpy as np

from ._partitioned import PartitionedTrainingMatrix


#: What :func:`centered_moments` returns.
Moments = namedtuple("Moments", "x_mean y_mean gram cross constant")


def centered_moments(matrix, Y, sample_weight, center=True, diagonal=False):
    """Weighted means, centered gram and centered cross-products of ``X`` and ``Y``.

    Parameters
    ----------
    matrix : TrainingMatrix
        ``X``; a PartitionedTrainingMatrix is read in one pass over its partitions.
    Y : ndarray of shape (n_samples, t)
        Its targets (``t`` may be 0); for a PartitionedTrainingMatrix, a Dask array too,
        whose blocks are read where they live.
    sample_weight : ndarray of shape (n_samples,) or None
        None for unit weights (which then take no pass of their own, and are not sent to
        the workers).
    center : bool, default=True
        Center by the weighted means; without, the means are zeros and the sums are plain.
    diagonal : bool, default=False
        Only the gram's diagonal (each column's sum of squares), for matrices too wide for
        their gram.

    Returns
    -------
    Moments
        ``x_mean`` of shape (n_features,) and ``y_mean`` of shape (t,); ``gram``, of shape
        (n_features, n_features), ``Xc.T W Xc``, symmetric (with ``diagonal``, its diagonal
        of shape (n_features,)); ``cross``, of shape (n_features, t), ``Xc.T W Yc``;
        ``constant``, a function that returns which columns hold one value in every row
        (found in the same pass over partitioned data; in memory on the first call, with a
        pass of its own, and kept), or None without ``center``.
    """
    if isinstance(matrix, PartitionedTrainingMatrix) and center:
        return _partitioned_moments(matrix, Y, sample_weight, diagonal)
    if isinstance(matrix, PartitionedTrainingMatrix):
        moments = matrix.reduce(_moments, center, diagonal, rows=(Y, sample_weight),
                                combine=merge_moments)
    else:
        moments = _moments(matrix, Y, sample_weight, center, diagonal)
    constant = functools.cache(matrix.constant_columns) if center else None
    return Moments(*moments[1:], constant)


def _partitioned_moments(matrix, Y, sample_weight, diagonal):
    """The centered moments of a PartitionedTrainingMatrix, and its constant columns, in one
    pass over its partitions (and one more over the partition that gives the pilot)."""
    # The merge adds the differences of the partitions' means, which are rounded to the
    # digits of the means themselves: taken about a pilot near the means (those of the
    # partition that weighs most, and Y's own, here in memory), they are small, and the
    # differences keep the digits that a column of large offset would otherwise lose.
    x_pilot = matrix.on_heaviest_partition(_weighted_means, sample_weight)
    y_pilot = _mean_of(Y, sample_weight)
    (_, x_mean, y_mean, gram, cross), (lowest, highest) = matrix.reduce(
        _moments_and_extremes, x_pilot, y_pilot, diagonal, rows=(Y, sample_weight),
        combine=_merged_with_extremes)
    constant = lowest == highest
    return Moments(x_pilot + x_mean, y_pilot + y_mean, gram, cross, lambda: constant)


def _total(matrix, sample_weight):
    return matrix.shape[0] if sample_weight is None else sample_weight.sum()


def _weighted_means(matrix, sample_weight):
    return matrix.column_sums(sample_weight) / _total(matrix, sample_weight)


def _mean_of(Y, sample_weight):
    """The weighted means of ``Y``'s columns (of a Dask ``Y`` too, computed)."""
    return np.asarray(Y.mean(axis=0) if sample_weight is None
                      else sample_weight @ Y / sample_weight.sum())


def _moments_and_extremes(matrix, Y, sample_weight, x_pilot, y_pilot, diagonal):
    """The moments of one partition, its means taken from the pilots, and its columns'
    extremes."""
    return (_moments(matrix, Y - y_pilot, sample_weight, True, diagonal, x_pilot),
            matrix._column_extremes())


def _merged_with_extremes(a, b):
    (moments_a, (lowest_a, highest_a)), (moments_b, (lowest_b, highest_b)) = a, b
    return merge_moments(moments_a, moments_b), (np.minimum(lowest_a, lowest_b),
                                           np.maximum(highest_a, highest_b))


def _moments(matrix, Y, sample_weight, center, diagonal, x_pilot=None):
    """(total weight, x_mean, y_mean, gram, cross) of one matrix; with ``x_pilot``, its
    ``x_mean`` is taken from the pilot (``mean - x_pilot``), to the digits of the spread."""
    total = _total(matrix, sample_weight)
    n_features, n_targets = matrix.shape[1], Y.shape[1]
    if total == 0:  # rows that all weigh 0 (a partition of them) add nothing
        return (0.0, np.zeros(n_features), np.zeros(n_targets),
                np.zeros((n_features,) * (1 if diagonal else 2)),
                np.zeros((n_features, n_targets)))
    x_mean, y_mean = np.zeros(n_features), np.zeros(n_targets)
    if center:
        x_mean = matrix.column_sums(sample_weight) / total
        y_mean = _mean_of(Y, sample_weight)
        matrix = matrix.centered(x_mean)
    if diagonal:
        gram = matrix.column_sums_of_squares(sample_weight)
    else:
        gram = matrix.gram(sample_weight)
        gram = (gram + gram.T) / 2
    if center and x_pilot is not None:
        # The mean holds the digits of the data's offset only; what its rounding left is
        # read off the centered rows, to the digits of their spread, and so is the mean's
        # distance from the pilot (``x_mean - x_pilot`` is exact where the two are close).
        left = matrix.column_sums(sample_weight) / total
        x_mean = (x_mean - x_pilot) + left
        gram = gram - total * (np.outer(left, left) if gram.ndim == 2 else left ** 2)
    residual = Y - y_mean
    if sample_weight is not None:
        residual *= sample_weight[:, None]
    # The same for every candidate of a search over one fold: kept by the cache setting.
    cross = matrix.reused_rmatmul(residual)
    return total, x_mean, y_mean, gram, cross


def merge_moments(a, b):
    """The moments of two sets of rows from those of each (Chan, Golub and LeVeque): each
    ``(total weight, x_mean, y_mean, gram, cross)``, the gram or its diagonal."""
    total_a, x_a, y_a, gram_a, cross_a = a
    total_b, x_b, y_b, gram_b, cross_b = b
    total = total_a + total_b
    if total == 0:
        return a
    x_step, y_step = x_b - x_a, y_b - y_a
    between = total_a * total_b / total
    return (total, x_a + x_step * (total_b / total), y_a + y_step * (total_b / total),
            gram_a + gram_b + between * (np.outer(x_step, x_step) if gram_a.ndim == 2
                                         else x_step ** 2),
            cross_a + cross_b + between * np.outer(x_step, y_step))

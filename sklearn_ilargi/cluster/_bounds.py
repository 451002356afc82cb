"""Labels that carry over Lloyd's iterations: Hamerly's bounds, kept exact.

Per sample, a lower bound on the gap ``l - u`` between its distance to its second closest
center (``l``, a lower bound) and to its own (``u``, an upper bound). When the centers move,
by ``delta_j`` each, no distance moves more than its center did (the triangle inequality):
the gap of a sample of cluster ``a`` shrinks by at most ``delta_a + max_{j != a} delta_j``.
A sample whose gap stays larger than the rounding of its entries keeps its label, without a
distance computed; the others alone are multiplied again, their two closest centers giving
their gaps back (``TrainingMatrix.two_smallest_of_product``).

Exact: the labels are those of the full argmin, bit for bit. A sample keeps its label only
where its exact squared distances to the other centers exceed its own by more than twice
the rounding of the entries that the argmin compares (``TrainingMatrix.product_error``), so
that the full argmin takes that label too, and without a tie. The bounds are widened by that
rounding where they are taken from the entries, and by their own rounding as they are
updated.
"""

import numpy as np

from .._config import get_config

_EPS = np.finfo(np.float64).eps


class LabelBounds:
    """The closest center of every sample, one set of centers after another.

    Parameters
    ----------
    matrix : TrainingMatrix
        The samples; ``reduces_row_subsets`` (a subset of the rows is labeled for its share
        of the cost).
    """

    def __init__(self, matrix):
        self.matrix = matrix
        self.norms = matrix.row_norms_squared()
        self.reach = float(np.sqrt(self.norms.max(initial=0.0)))
        self.labels = self.centers = None
        n = matrix.shape[0]
        self.gaps = np.empty(n)
        self.known = False
        # Every gap is at most twice the largest distance to a center. What a gap may exceed
        # the exact one by: ``rounding``, that of the distances it was taken from (the most
        # of any iteration), and ``slack``, that of its updates.
        self.largest = self.rounding = self.slack = 0.0
        # Work arrays reused by every iteration: fresh memory costs its first touch.
        self._work = [np.empty(n) for _ in range(2)]
        self._failed = np.empty(n, dtype=bool)

    def __call__(self, centers):
        """The label of each sample (a new array): the index of its closest center, the
        first on ties, as the full argmin of ``||c||^2 - 2 x.c`` takes it.

        Parameters
        ----------
        centers : ndarray of shape (n_clusters, n_features)

        Returns
        -------
        ndarray of int32 of shape (n_samples,)
        """
        W, bias = -2.0 * centers.T, (centers**2).sum(axis=1)
        error = self.matrix.product_error(W, bias, norms=True)
        self.largest = max(self.largest,
                           2 * (self.reach + float(np.sqrt(bias.max(initial=0.0)))))
        # A square root, a difference and each update round by at most eps of the largest.
        self.slack += 4 * _EPS * self.largest
        rows = None
        if self.known:
            shrinks = np.take(self._shrinks(centers), self.labels, out=self._work[0])
            np.subtract(self.gaps, shrinks, out=self.gaps)
            # A gap that exceeds the rounding of the new distances keeps its label.
            threshold = np.sqrt(2 * error) + self.rounding + self.slack
            failed = np.less_equal(self.gaps, threshold, out=self._failed)
            rows = np.flatnonzero(failed)
            if len(rows) > get_config()["bounded_labels_max_share"] * len(failed):
                rows = None
        self.centers = centers.copy()
        if rows is not None and not len(rows):
            return self.labels.copy()
        columns, smallest, second = self.matrix.two_smallest_of_product(W, bias, rows)
        # The distances' own rounding, once for each of the two (sqrt(a + e) is at most
        # sqrt(a) + sqrt(e)).
        self.rounding = max(self.rounding, 2 * float(np.sqrt(error)))
        if rows is None:
            self.labels, self.known = columns, True
            self._gaps(self.norms, smallest, second, out=self.gaps)
        else:
            self.labels[rows] = columns
            norms = np.take(self.norms, rows, out=self._work[1][:len(rows)])
            self.gaps[rows] = self._gaps(norms, smallest, second)
        return self.labels.copy()

    def _gaps(self, norms, smallest, second, out=None):
        """The difference of the square roots of each sample's squared distances to its two
        closest centers, taken from its two smallest entries; 0 where they are unknown
        (NaN), which no bound keeps."""
        n = len(norms)
        closest, other = (work[:n] for work in self._work)
        for distance, entries in ((closest, smallest), (other, second)):
            np.add(norms, entries, out=distance)
            np.fmax(distance, 0.0, out=distance)
            np.sqrt(distance, out=distance)
        return np.subtract(other, closest, out=other if out is None else out)

    def _shrinks(self, centers):
        """For each cluster, the most that its samples' gaps shrink as the centers move from
        the last ones: its own center's move plus the largest of the others'."""
        moves = np.sqrt(((centers - self.centers) ** 2).sum(axis=1))
        moves *= 1 + 2 * (centers.shape[1] + 4) * _EPS
        order = np.argsort(moves)
        others = np.full_like(moves, moves[order[-1]])
        others[order[-1]] = moves[order[-2]] if len(moves) > 1 else 0.0
        return (moves + others) * (1 + 4 * _EPS)


__all__ = ["LabelBounds"]

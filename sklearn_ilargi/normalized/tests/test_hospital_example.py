"""The running example of the Ilargi paper, small enough to check by eye.

Two hospitals record their patients; both record the weight (source redundancy: hospital A's
value wins where both have the patient). A prescriptions table fans each patient out to one
target row per prescription. Target columns: age, weight, height, dose.
"""

import numpy as np
from numpy.testing import assert_allclose

from sklearn_ilargi import NormalizedMatrix
from sklearn_ilargi.tests._scenarios import sources_as_given

# hospital A: patients p1, p2, p3 -> (age, weight)
HOSPITAL_A = np.array([[30.0, 70.0], [45.0, 82.0], [60.0, 65.0]])
# hospital B: patients p2, p3, p4 -> (weight, height)
HOSPITAL_B = np.array([[80.0, 180.0], [66.0, 170.0], [90.0, 175.0]])
# prescriptions: (dose) for p1, p2, p2, p3, p4
PRESCRIPTIONS = np.array([[1.0], [2.5], [0.5], [1.5], [3.0]])

EXPECTED = np.array(
    [
        # age, weight, height, dose
        [30.0, 70.0, 0.0, 1.0],  # p1: only in A, no height
        [45.0, 82.0, 180.0, 2.5],  # p2: weight from A (82), not B (80)
        [45.0, 82.0, 180.0, 0.5],  # p2 again: second prescription
        [60.0, 65.0, 170.0, 1.5],  # p3: weight from A
        [0.0, 90.0, 175.0, 3.0],  # p4: only in B, no age
    ]
)


def hospital_matrix():
    """The example's matrix, its blocks as the overlap makes them (none gathered)."""
    with sources_as_given():
        return NormalizedMatrix.from_matrices(
            sources=[HOSPITAL_A, HOSPITAL_B, PRESCRIPTIONS],
            indicators=[[0, 1, 1, 2, -1], [-1, 0, 0, 1, 2], np.arange(5)],
            mappings=[[0, 1], [1, 2], [3]],
            feature_names=["age", "weight", "height", "dose"],
        )


def test_materializes_to_the_expected_table():
    assert_allclose(hospital_matrix().materialize(), EXPECTED)


def test_overlap_becomes_a_separate_block():
    blocks = hospital_matrix().blocks
    # A whole; B's height; B's weight only where A has no row; prescriptions.
    assert len(blocks) == 4
    weight_from_b = [b for b in blocks if b.origin == 1 and list(b.columns) == [1]][0]
    assert list(weight_from_b.row_map.indices) == [-1, -1, -1, -1, 2]


def test_training_operations_on_the_example():
    nm = hospital_matrix()
    w = np.array([0.1, 0.2, 0.3, 0.4])
    assert_allclose(nm @ w, EXPECTED @ w)
    assert_allclose(nm.T @ np.arange(5.0), EXPECTED.T @ np.arange(5.0))
    assert_allclose(nm.gram(), EXPECTED.T @ EXPECTED)
    assert_allclose(nm.mean(axis=0), EXPECTED.mean(axis=0))

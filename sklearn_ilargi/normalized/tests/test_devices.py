"""Where a NormalizedMatrix says it lives, and how it forgets its device copy."""

import numpy as np
import pytest

from sklearn_ilargi import NormalizedMatrix
from sklearn_ilargi.backend import device_of


def small():
    return NormalizedMatrix.from_matrices([np.ones((3, 1)), np.ones((2, 2))],
                                          [np.arange(3), [0, 1, 0]])


def test_device_of_reads_the_matrix_itself():
    nm = small()
    on_gpu = NormalizedMatrix(nm.blocks, nm.shape, nm.dtype, device="gpu")  # declared only
    assert device_of(nm) == "cpu" and device_of(nm.T) == "cpu"
    assert device_of(on_gpu) == "gpu" and device_of(on_gpu.T) == "gpu"


def test_device_of_ignores_items_that_merely_share_the_name():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"__sklearn_ilargi_device__": ["gpu"], "device": ["gpu"],
                          "blocks": [1.0]})
    assert device_of(frame) == "cpu"
    assert device_of({"__sklearn_ilargi_device__": "gpu"}) == "cpu"


def test_drop_device_copy_forgets_the_cached_copies():
    nm = small()
    nm.drop_device_copy()  # nothing cached: a no-op
    vars(nm)["_device_copies"] = {"gpu": object()}  # what to("gpu") keeps
    nm.drop_device_copy()
    assert "_device_copies" not in vars(nm)

"""Settings shared by every test."""

import pytest

from sklearn_ilargi.normalized import _blocks, _parse


@pytest.fixture(autouse=True)
def sparse_sources_stay_as_given(monkeypatch):
    """Keep the tests' small or thin sparse sources sparse and factorized, so that they
    exercise the sparse paths.

    By default a sparse source of at most ``SMALL_CELLS`` cells is stored dense, and one with
    fewer than ``GATHERED_VALUES_PER_ROW`` values per target row is stored gathered; the
    tests of those rules set them back.
    """
    monkeypatch.setattr(_parse, "SMALL_CELLS", 0)
    monkeypatch.setattr(_blocks, "GATHERED_VALUES_PER_ROW", 0.0)

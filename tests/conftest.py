"""Settings shared by every test."""

import pytest

from sklearn_ilargi.normalized import _parse


@pytest.fixture(autouse=True)
def small_sparse_sources_stay_sparse(monkeypatch):
    """Keep the tests' small sparse sources sparse, so that they exercise the sparse paths.

    By default a sparse source of at most ``SMALL_CELLS`` cells is stored dense; the test of
    that rule sets it back.
    """
    monkeypatch.setattr(_parse, "SMALL_CELLS", 0)

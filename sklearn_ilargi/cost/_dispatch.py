"""The one place where a fit's strategy (factorized or materialized) and backend are chosen.

Every estimator calls :func:`decide` then :func:`prepare`. With ``strategy="auto"`` the
choice comes from :func:`byte_ratio_rule`: factorize when one pass over the materialized
matrix would read at least ``FACTORIZE_BYTE_RATIO`` times the bytes of the sources and row maps.
"""

from dataclasses import dataclass, field

import numpy as np

from .._config import get_config
from ..backend import get_backend
from ..normalized import NormalizedMatrix

FACTORIZE_BYTE_RATIO = 1.5
_STRATEGIES = ("auto", "factorized", "materialized")
_BACKENDS = ("auto", "cpu", "gpu")


@dataclass(frozen=True)
class OperationProfile:
    """What one fit asks of its matrix, declared by each estimator.

    Attributes
    ----------
    matmul, rmatmul, gram : int
        How many times ``X @ W``, ``X.T @ R`` and the gram run in the fit (estimates).
    width : int
        Columns of ``W`` and ``R`` (classes, clusters, components; 1 for a vector).
    """

    matmul: int = 0
    rmatmul: int = 0
    gram: int = 0
    width: int = 1


@dataclass
class Decision:
    """What a fit will run, and why.

    Attributes
    ----------
    strategy : {"factorized", "materialized"}
    backend : {"cpu", "gpu"}
    reason : str
    scores : dict
        Per candidate ``(backend, strategy)``, the figure the choice was made on.
    """

    strategy: str
    backend: str
    reason: str
    scores: dict = field(default_factory=dict)

    def explain(self):
        lines = [f"{self.backend}/{self.strategy}: {self.reason}"]
        for (backend, strategy), score in sorted(self.scores.items(), key=lambda kv: kv[1]):
            lines.append(f"  {backend:>3} {strategy:<12} {score:.4g}")
        return "\n".join(lines)


def materialized_nbytes(nm):
    """Bytes of the materialized matrix: dense, or CSR where the blocks are sparse."""
    itemsize = nm.dtype.itemsize
    n_rows, n_columns = nm.shape
    total = 0
    for block in nm.blocks:
        rows = int(np.count_nonzero(block.row_map.present()))
        n_b, c_b = block.source.shape
        if hasattr(block.source, "nnz"):
            per_row = block.source.nnz / max(n_b, 1)
            total += rows * per_row * (itemsize + 4)
        else:
            total += rows * c_b * itemsize
    return max(total, 1)


def byte_ratio_rule(nm):
    """(ratio, scores): bytes one pass reads materialized over bytes it reads factorized."""
    materialized = materialized_nbytes(nm)
    factorized = max(nm.nbytes, 1)
    return materialized / factorized, {
        ("cpu", "factorized"): float(factorized),
        ("cpu", "materialized"): float(materialized),
    }


def decide(X, profile=None, *, strategy="auto", backend="auto"):
    """Choose the strategy and backend of one fit.

    Parameters
    ----------
    X : NormalizedMatrix, ndarray or sparse matrix
    profile : OperationProfile, optional
    strategy : {"auto", "factorized", "materialized"}
        The estimator's parameter; "auto" defers to ``set_config(strategy=...)``, then to the
        rule.
    backend : {"auto", "cpu", "gpu"}
        Likewise; "auto" runs on the CPU, "gpu" fails clearly where no GPU is usable.

    Returns
    -------
    Decision
    """
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}.")
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}.")
    config = get_config()
    strategy = config["strategy"] if strategy == "auto" else strategy
    backend = config["backend"] if backend == "auto" else backend
    if backend == "gpu":
        get_backend("gpu")  # raises naming what is missing
    elif backend == "auto":
        backend = "cpu"
    if not isinstance(X, NormalizedMatrix):
        return Decision("materialized", backend, "the input is a single matrix")
    ratio, scores = byte_ratio_rule(X)
    if strategy != "auto":
        return Decision(strategy, backend, "forced by the strategy parameter or set_config",
                        scores)
    chosen = "factorized" if ratio >= FACTORIZE_BYTE_RATIO else "materialized"
    reason = (
        f"the materialized matrix would be {ratio:.2f}x the bytes of the sources "
        f"(factorize at >= {FACTORIZE_BYTE_RATIO})"
    )
    return Decision(chosen, backend, reason, scores)


def prepare(X, decision):
    """The input as the decided path wants it: joined or not, on the decided device."""
    if isinstance(X, NormalizedMatrix):
        if decision.strategy == "materialized":
            sparse = any(hasattr(b.source, "nnz") for b in X.blocks) and (
                materialized_nbytes(X) < 0.5 * X.shape[0] * X.shape[1] * X.dtype.itemsize
            )
            X = X.materialize(sparse=sparse)
            if decision.backend != "cpu":
                X = get_backend(decision.backend).from_numpy(X)
            return X
        return X.to(decision.backend)
    if decision.backend != "cpu":
        return get_backend(decision.backend).from_numpy(X)
    return X

"""The one place where a fit's strategy (factorized or materialized) and backend are chosen.

Every estimator calls :func:`decide` then :func:`prepare`. With ``strategy="auto"`` and
``backend="auto"`` the cost model (``sklearn_ilargi.cost._model``) predicts the time of every
candidate ``(backend, strategy)`` from the fit's features (``sklearn_ilargi.cost._features``),
and the fastest one that fits in memory runs. A forced strategy or backend narrows the
candidates; it is never overridden.
"""

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from .._config import get_config
from ..backend import get_backend, gpu_available, to_numpy
from ..normalized import NormalizedMatrix
from ._candidates import Candidate, candidates, infeasibility
from ._features import candidate_features, fit_features
from ._hardware import available_memory, gpu_free_memory, hardware_info
from ._model import HeuristicCostModel, load_cost_model

_STRATEGIES = ("auto", "factorized", "materialized")
_BACKENDS = ("auto", "cpu", "gpu")
_recorder = threading.local()


@dataclass(frozen=True)
class OperationProfile:
    """What one fit asks of its matrix, declared by each estimator.

    Attributes
    ----------
    matmul, rmatmul, gram : int
        How many times ``X @ W``, ``X.T @ R`` and the gram run in the fit (estimates).
    width : int
        Columns of ``W`` and ``R`` (classes, clusters, components; 1 for a vector).
    iterations : int
        Solver iterations the counts above assume (informative; the counts are totals).
    classes : int
        Classes of a classifier (0 otherwise).
    dense_join : bool
        Whether the materialized path needs the join dense (it centers it), so that it is
        built dense even from sparse sources.
    sklearn_fit : bool
        Whether the materialized path hands the join to scikit-learn's own fit (which
        validates it once more and has fixed costs of its own).
    name : str
        The estimator (family) declaring the profile, e.g. ``"FactorizedKMeans"``.
    """

    matmul: int = 0
    rmatmul: int = 0
    gram: int = 0
    width: int = 1
    iterations: int = 1
    classes: int = 0
    dense_join: bool = False
    sklearn_fit: bool = False
    name: str = ""


#: Assumed for a fit that declares no profile: one product each way.
DEFAULT_PROFILE = OperationProfile(matmul=1, rmatmul=1)


@dataclass
class Decision:
    """What a fit will run, and why.

    Attributes
    ----------
    strategy : {"factorized", "materialized"}
    backend : {"cpu", "gpu"}
    reason : str
    scores : dict
        Per candidate ``(backend, strategy)``, the predicted seconds of the fit; empty when
        the strategy and backend leave a single candidate (no model is consulted then).
    infeasible : dict
        Per candidate that cannot run, why (memory).
    model : str
        What predicted the scores: the CatBoost model file, or the heuristic and why; empty
        when nothing was predicted.
    features : dict
        The fit's features the prediction was made on.
    overhead_seconds : float
        Time spent deciding (features and prediction).
    """

    strategy: str
    backend: str
    reason: str
    scores: dict = field(default_factory=dict)
    infeasible: dict = field(default_factory=dict)
    model: str = ""
    features: dict = field(default_factory=dict, repr=False)
    overhead_seconds: float = 0.0

    def explain(self):
        """A few lines: the winner and why, then every candidate with its predicted time.

        Returns
        -------
        str
        """
        lines = [f"{self.backend}/{self.strategy}: {self.reason}"]
        if self.model:
            lines.append(f"  predicted by: {self.model}")
        f = self.features
        if f:
            lines.append(
                f"  data: {int(f['n_rows'])} x {int(f['n_columns'])} in {int(f['n_blocks'])} "
                f"blocks, tuple ratio {f['tuple_ratio']:.3g}, feature ratio "
                f"{f['feature_ratio']:.3g}, FLOP ratio {f['flop_ratio']:.3g}, byte ratio "
                f"{f['byte_ratio']:.3g}"
            )
        for candidate, seconds in sorted(self.scores.items(), key=lambda kv: kv[1]):
            backend, strategy = candidate
            why = self.infeasible.get(candidate)
            status = f"infeasible: {why}" if why else ""
            mark = "*" if (backend, strategy) == (self.backend, self.strategy) else " "
            lines.append(f" {mark}{backend:>3} {strategy:<12} {seconds:.4g} s  {status}".rstrip())
        return "\n".join(lines)


@contextmanager
def record_decisions():
    """Collect every :class:`Decision` made in this thread within the ``with`` block.

    Yields
    ------
    list of Decision
    """
    previous = getattr(_recorder, "decisions", None)
    _recorder.decisions = []
    try:
        yield _recorder.decisions
    finally:
        _recorder.decisions = previous


def _record(decision):
    decisions = getattr(_recorder, "decisions", None)
    if decisions is not None:
        decisions.append(decision)
    return decision


def decide(X, profile=None, *, strategy="auto", backend="auto"):
    """Choose the strategy and backend of one fit.

    Parameters
    ----------
    X : NormalizedMatrix, ndarray or sparse matrix
    profile : OperationProfile, optional
        What the fit computes; one product each way when not given.
    strategy : {"auto", "factorized", "materialized"}
        The estimator's parameter; "auto" defers to ``set_config(strategy=...)``, then to the
        cost model.
    backend : {"auto", "cpu", "gpu"}
        Likewise; "gpu" fails clearly where no GPU is usable, "auto" considers the GPU only
        where one is usable and the cost model was trained with GPU timings.

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
    if not isinstance(X, NormalizedMatrix):
        return _record(Decision("materialized", "cpu" if backend == "auto" else backend,
                                "the input is a single matrix"))
    start = time.perf_counter()
    profile = DEFAULT_PROFILE if profile is None else profile
    gpu = backend == "gpu" or (backend == "auto" and gpu_available())
    pool = candidates(strategy, backend, gpu=gpu)
    model, notes = None, []
    if len(pool) > 1:  # a single candidate needs no prediction (nor CatBoost's import)
        model = load_cost_model()
        if backend == "auto" and gpu and not model.gpu_trained:
            pool = candidates(strategy, backend, gpu=False)
            notes.append("GPU not considered: the cost model has no GPU timings (CPU-only model)")
        if not model.gpu_trained and any(c.backend == "gpu" for c in pool):
            model = HeuristicCostModel("the cost model has no GPU timings to rank GPU paths with")
    shared = fit_features(X, profile, hardware_info())
    rows = [candidate_features(shared, c.backend, c.strategy) for c in pool]
    host = available_memory()
    device = gpu_free_memory() if any(c.backend == "gpu" for c in pool) else 0
    infeasible = {}
    for candidate, row in zip(pool, rows):
        why = infeasibility(candidate, row["path_memory"], host_available=host,
                            device_available=device, mat_bytes=shared["mat_bytes"],
                            resident_bytes=shared["fact_bytes"])
        if why:
            infeasible[candidate] = why
    scores = {} if model is None else dict(zip(pool, model.predict_seconds(shared, rows)))
    chosen, reason = _choose(pool, scores, infeasible, strategy, backend)
    if notes:
        reason += "; " + "; ".join(notes)
    decision = Decision(
        chosen.strategy, chosen.backend, reason, scores, infeasible,
        "" if model is None else model.source, shared, time.perf_counter() - start,
    )
    return _record(decision)


def _choose(pool, scores, infeasible, strategy, backend):
    """The winning candidate and a sentence saying why."""
    forced = [f"{name}={value!r}" for name, value in (("strategy", strategy),
                                                       ("backend", backend)) if value != "auto"]
    forced_note = f" (forced: {', '.join(forced)})" if forced else ""
    if len(pool) == 1:
        (only,) = pool
        why = "forced by the strategy and backend parameters or set_config"
        if only in infeasible:
            why += f", although {infeasible[only]}"
        return only, why
    feasible = [c for c in pool if c not in infeasible]
    if not feasible:
        fallback = Candidate("cpu", "factorized")
        winner = fallback if fallback in pool else min(pool, key=scores.__getitem__)
        return winner, f"no candidate fits in memory; running the least demanding{forced_note}"
    ranked = sorted(feasible, key=scores.__getitem__)
    winner = ranked[0]
    why = f"predicted {scores[winner]:.3g} s, the fastest feasible candidate{forced_note}"
    if len(ranked) > 1:
        runner = ranked[1]
        why += (f"; {scores[runner] / max(scores[winner], 1e-12):.2f}x faster than "
                f"{runner} ({scores[runner]:.3g} s)")
    if infeasible:
        why += "; ruled out: " + ", ".join(f"{c} ({w})" for c, w in infeasible.items())
    return winner, why


def prepare(X, decision):
    """The input as the decided path wants it: joined or not, on the decided device.

    The join is CSR where the sources are sparse and CSR takes less than half the dense
    size, unless the profile asks for a dense join (``decision.features["mat_sparse"]``).
    A NormalizedMatrix moves its sources and row maps, never a joined matrix: the copy is
    cached on it (``NormalizedMatrix.to``), so repeated fits transfer once, and the
    materialized GPU path joins on the device. A plain matrix is copied to the device, or
    back to the host for the CPU.
    """
    if isinstance(X, NormalizedMatrix):
        X = X.to(decision.backend)
        if decision.strategy == "materialized":
            # Built as the cost features priced it: CSR where they say so.
            return X.materialize(sparse=bool(decision.features["mat_sparse"]))
        return X
    if decision.backend == "cpu":
        return to_numpy(X)
    return get_backend(decision.backend).from_numpy(X)

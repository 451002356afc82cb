"""The one place where a fit's strategy (factorized or materialized) and backend are chosen.

Every estimator calls :func:`decide` then :func:`prepare`. With ``strategy="auto"`` and
``backend="auto"`` the cost model (``sklearn_ilargi.cost._model``) predicts the time of every
candidate ``(backend, strategy)`` from the fit's features (``sklearn_ilargi.cost._features``),
and the fastest one that fits in memory runs. A forced strategy or backend narrows the
candidates; it is never overridden. A fit that may run several solvers (a closed form over
the dense gram, or iterations over the products) has its solver chosen first, by the width of
``X`` and the memory the gram would take (``sklearn_ilargi.cost._solvers``), and its paths
are priced with that solver's operations.
"""

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from .._config import get_config
from ..backend import get_backend, gpu_available, to_numpy
from ..exceptions import InsufficientMemoryError
from ..normalized import NormalizedMatrix, PartitionedMatrix
from ._candidates import MEMORY_HEADROOM, candidates, infeasibility
from ._features import candidate_features, fit_features
from ._hardware import available_memory, gpu_free_memory, hardware_info
from ._memory import peak_bytes
from ._model import HeuristicCostModel, load_cost_model
from ._solvers import choose_solver

_STRATEGIES = ("auto", "factorized", "materialized")
_BACKENDS = ("auto", "cpu", "gpu")
_recorder = threading.local()


@dataclass(frozen=True)
class OperationProfile:
    """What one fit asks of its matrix, declared by each estimator.

    The cost model prices every candidate path from these counts and the data's shape.

    Parameters
    ----------
    matmul, rmatmul, gram : int, default=0
        How many times ``X @ W``, ``X.T @ R`` and the gram run in the fit (estimates).
    width : int, default=1
        Columns of ``W`` and ``R`` (classes, clusters, components; 1 for a vector).
    iterations : int, default=1
        Solver iterations the counts above assume (informative; the counts are totals). An
        iterative fit that can stop early assumes :func:`expected_iterations`.
    max_iter : int, default=0
        The most iterations the solver may run (0 where it is not iterative); informative,
        for :meth:`Decision.explain`.
    classes : int, default=0
        Classes of a classifier (0 otherwise).
    dense_join : bool, default=False
        Whether the materialized path needs the join dense (it centers it), so that it is
        built dense even from sparse sources.
    sklearn_fit : bool, default=False
        Whether the materialized path hands the join to scikit-learn's own fit (which
        validates it once more and has fixed costs of its own).
    join_copies : int, default=0
        Dense copies of the join that the materialized path holds besides the join itself
        where the join is dense (a centered copy, a decomposition's workspace and factors);
        none where it is CSR. Not priced: the memory check counts them
        (``sklearn_ilargi.cost._memory.peak_bytes``).
    source_copies : int, default=0
        Copies of the sources that the factorized path holds besides them (K-means' fact
        table reordered for the cache). Not priced: the memory check counts them, as copies
        of every source (an upper bound).
    name : str, default=""
        The estimator (family) declaring the profile, e.g. ``"FactorizedKMeans"``.
    solver : str, default=""
        The solver these counts are of (``"cholesky"``, ``"lsqr"``, ...), which
        :meth:`Decision.explain` names; "" for a fit with one way to solve.
    solver_parameter : str, default="solver"
        The estimator's parameter that names its solver (``"svd_solver"`` for PCA), which
        an error that refuses the solver points to.
    alternatives : tuple of OperationProfile, default=()
        The profiles of the same fit with the other solvers it may run, in order of
        preference after this one. :func:`decide` runs the first whose memory and width
        allow it (see ``sklearn_ilargi.cost._solvers.choose_solver``): a closed form (a
        profile with ``gram > 0``) only up to the ``closed_form_max_columns`` setting.

    See Also
    --------
    decide : Choose a fit's path from its profile.

    Examples
    --------
    A gradient-descent fit of 100 iterations, one product each way per iteration:

    >>> from sklearn_ilargi.cost import OperationProfile
    >>> profile = OperationProfile(matmul=100, rmatmul=100, iterations=100, max_iter=100,
    ...                            name="MyEstimator")
    >>> profile.matmul + profile.rmatmul
    200
    """

    matmul: int = 0
    rmatmul: int = 0
    gram: int = 0
    width: int = 1
    iterations: int = 1
    max_iter: int = 0
    classes: int = 0
    dense_join: bool = False
    sklearn_fit: bool = False
    join_copies: int = 0
    source_copies: int = 0
    name: str = ""
    solver: str = ""
    solver_parameter: str = "solver"
    alternatives: tuple = ()


#: Assumed for a fit that declares no profile: one product each way.
DEFAULT_PROFILE = OperationProfile(matmul=1, rmatmul=1)


def expected_iterations(max_iter, tol):
    """The iterations a fit's profile assumes for a solver that runs at most ``max_iter``.

    All of them where ``tol == 0`` (no tolerance stops the solver early), else at most the
    ``expected_iterations`` setting: pricing every fit at its ``max_iter`` would predict the
    time of the worst case, many times what a converging fit takes.

    Parameters
    ----------
    max_iter : int
        The most iterations the solver may run.
    tol : float
        The solver's tolerance; 0 or less runs every iteration.

    Returns
    -------
    int
        The iterations to price the fit at.

    Examples
    --------
    >>> from sklearn_ilargi import config_context
    >>> from sklearn_ilargi.cost import expected_iterations
    >>> expected_iterations(max_iter=300, tol=0.0)
    300
    >>> with config_context(expected_iterations=50):
    ...     expected_iterations(max_iter=300, tol=1e-4)
    50
    """
    if not tol > 0:
        return int(max_iter)
    return int(min(max_iter, get_config()["expected_iterations"]))


@dataclass
class Decision:
    """What a fit will run, and why.

    Made by :func:`decide`; a fitted estimator keeps its own as ``decision_``.

    Parameters
    ----------
    strategy : {"factorized", "materialized"}
        Whether the fit runs on the sources or on the joined matrix.
    backend : {"cpu", "gpu"}
        Where it runs.
    reason : str
        Why, in a sentence.
    scores : dict, default={}
        Per candidate ``(backend, strategy)``, the predicted seconds of the fit; empty when
        the strategy and backend leave a single candidate (no model is consulted then).
    infeasible : dict, default={}
        Per candidate that cannot run, why (memory).
    model : str, default=""
        What predicted the scores: the CatBoost model file, or the heuristic and why; empty
        when nothing was predicted.
    features : dict, default={}
        The fit's features the prediction was made on.
    overhead_seconds : float, default=0.0
        Time spent deciding (features and prediction).
    profile : OperationProfile or None, default=None
        The operations the prediction assumed: those of the chosen solver.
    solver : str, default=""
        The solver the fit runs (``profile.solver``); "" for a fit with one way to solve.
    solver_reason : str, default=""
        Why that solver.

    See Also
    --------
    decide : Make one.
    record_decisions : Collect the decisions of the fits in a block.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedRidge, NormalizedMatrix
    >>> X = NormalizedMatrix.from_matrices(
    ...     [np.arange(4.0)[:, None], np.eye(2)], [np.arange(4), [0, 1, 0, 1]])
    >>> model = FactorizedRidge(strategy="factorized", backend="cpu").fit(X, np.arange(4.0))
    >>> model.decision_.strategy, model.decision_.backend
    ('factorized', 'cpu')
    >>> print(model.decision_.explain())  # doctest: +ELLIPSIS
    cpu/factorized: forced by the strategy and backend parameters or set_config
      data: 4 x 3 in 2 blocks, ...
    """

    strategy: str
    backend: str
    reason: str
    scores: dict = field(default_factory=dict)
    infeasible: dict = field(default_factory=dict)
    model: str = ""
    features: dict = field(default_factory=dict, repr=False)
    overhead_seconds: float = 0.0
    profile: OperationProfile = field(default=None, repr=False)
    solver: str = ""
    solver_reason: str = ""

    def explain(self):
        """A few lines: the winner and why, then every candidate with its predicted time.

        Returns
        -------
        str
            The chosen ``backend/strategy`` and the reason; what predicted the times; the
            data's shape and redundancy; one line per candidate (``*`` marks the chosen
            one), with why it cannot run where it cannot.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> from sklearn_ilargi.cost import decide
        >>> X = NormalizedMatrix.from_matrices(
        ...     [np.ones((4, 1)), np.ones((2, 3))], [np.arange(4), [0, 1, 0, 1]])
        >>> print(decide(X, backend="cpu").explain())  # doctest: +ELLIPSIS
        cpu/...: predicted ... s, the fastest feasible candidate...
          predicted by: ...
          data: 4 x 4 in 2 blocks, tuple ratio 2, ...
         *cpu ...
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
        if self.solver:
            lines.append(f"  solver: {self.solver} ({self.solver_reason})")
        profile = self.profile
        if self.scores and profile is not None and profile.max_iter:
            lines.append(f"  assumes {profile.iterations} solver iterations "
                         f"(max_iter={profile.max_iter}); a fit that runs more or fewer "
                         "takes longer or shorter")
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
        Filled with each fit's decision as it is made, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedLinearRegression, NormalizedMatrix
    >>> from sklearn_ilargi.cost import record_decisions
    >>> X = NormalizedMatrix.from_matrices(
    ...     [np.arange(4.0)[:, None], np.eye(2)], [np.arange(4), [0, 1, 0, 1]])
    >>> with record_decisions() as decisions:
    ...     for strategy in ("factorized", "materialized"):
    ...         _ = FactorizedLinearRegression(strategy=strategy).fit(X, np.arange(4.0))
    >>> [d.strategy for d in decisions]
    ['factorized', 'materialized']
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
        The fit's input; a plain matrix is always fitted as it is (materialized).
    profile : OperationProfile, optional
        What the fit computes; one product each way when not given. Where it has
        ``alternatives`` (other solvers), the solver is chosen first, by the width of ``X``
        and the memory its gram would take, and the paths are priced with the chosen
        solver's profile.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        The estimator's parameter; "auto" defers to ``set_config(strategy=...)``, then to the
        cost model.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Likewise; "gpu" fails clearly where no GPU is usable, "auto" considers the GPU only
        where one is usable and the cost model was trained with GPU timings.

    Returns
    -------
    Decision
        The chosen strategy and backend, the predicted time of every candidate and why, and
        the solver (``solver``, ``profile``) the fit runs.

    Raises
    ------
    InsufficientMemoryError
        A ``MemoryError``, raised before anything is allocated: where the only solvers left
        are closed forms whose dense gram does not fit in the memory available now; where
        the strategy is forced and every candidate it leaves needs more than
        ``MEMORY_HEADROOM`` (80%) of the memory available at its peak; or, under
        ``strategy="auto"``, where every candidate needs more than all of it (see the
        ``memory_limit`` setting). Under ``"auto"``, a candidate whose estimate lies between
        the two (close to fitting) runs where none fits in the 80%: the least demanding.

    See Also
    --------
    prepare : Bring the input into the form the decision chose.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import NormalizedMatrix
    >>> from sklearn_ilargi.cost import OperationProfile, decide
    >>> X = NormalizedMatrix.from_matrices(
    ...     [np.ones((4, 1)), np.ones((2, 3))], [np.arange(4), [0, 1, 0, 1]])
    >>> profile = OperationProfile(matmul=10, rmatmul=10)
    >>> decision = decide(X, profile, backend="cpu")
    >>> decision.strategy in ("factorized", "materialized"), len(decision.scores)
    (True, 2)
    >>> decide(X, profile, strategy="materialized", backend="cpu").reason
    'forced by the strategy and backend parameters or set_config'
    """
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}.")
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}.")
    config = get_config()
    strategy = config["strategy"] if strategy == "auto" else strategy
    backend = config["backend"] if backend == "auto" else backend
    if backend == "gpu" and isinstance(X, PartitionedMatrix):
        raise ValueError("A PartitionedMatrix runs on the CPU; backend='gpu' is not "
                         "supported for partitioned input.")
    if backend == "gpu":
        get_backend("gpu")  # raises naming what is missing
    start = time.perf_counter()
    profile = DEFAULT_PROFILE if profile is None else profile
    # Only a closed form reads the width (a fit that declares none may pass raw input).
    n_columns = X.shape[1] if profile.gram or profile.alternatives else 0
    profile, solver_reason = choose_solver(n_columns, profile)
    solver = {"solver": profile.solver, "solver_reason": solver_reason}
    if isinstance(X, PartitionedMatrix):
        return _record(_decide_partitioned(X, profile, strategy, backend, start, solver))
    if not isinstance(X, NormalizedMatrix):
        return _record(Decision("materialized", "cpu" if backend == "auto" else backend,
                                "the input is a single matrix", profile=profile, **solver))
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
    memory = {"host_available": host, "device_available": device,
              "mat_bytes": shared["mat_bytes"], "resident_bytes": shared["fact_bytes"]}
    # Ruled out: needs more than MEMORY_HEADROOM of the memory. Beyond all of it: cannot fit.
    infeasible, beyond, peaks = {}, {}, {}
    for candidate, row in zip(pool, rows):
        peaks[candidate] = peak_bytes(shared, row, profile)
        why = infeasibility(candidate, peaks[candidate], **memory)
        if why:
            infeasible[candidate] = why
            beyond[candidate] = infeasibility(candidate, peaks[candidate], headroom=1.0,
                                              **memory)
    if len(infeasible) == len(pool):
        if strategy != "auto":
            raise _memory_error(profile, strategy, infeasible,
                                "strategy='auto' runs a path that fits in memory, where there "
                                "is one.")
        if all(beyond.values()):
            raise _memory_error(profile, strategy, beyond,
                                "no path fits in the memory available (at most the "
                                "memory_limit setting).")
    scores = {} if model is None else dict(zip(pool, model.predict_seconds(shared, rows)))
    least = min((c for c in pool if not beyond.get(c)), key=peaks.__getitem__)
    chosen, reason = _choose(pool, scores, infeasible, strategy, backend, least)
    if notes:
        reason += "; " + "; ".join(notes)
    decision = Decision(
        chosen.strategy, chosen.backend, reason, scores, infeasible,
        "" if model is None else model.source, shared, time.perf_counter() - start,
        profile, **solver,
    )
    return _record(decision)


def _decide_partitioned(X, profile, strategy, backend, start, solver):
    """The decision for a PartitionedMatrix: factorized or materialized per partition.

    Each partition runs as an in-memory matrix (joined with the broadcast dimensions on the
    materialized path, never collected), so the candidates are priced on one partition, the
    largest, whose features are computed where it lives. No calibration has timings of Dask
    runs yet, so the heuristic prices them, and the decision says so. Partitions run on the
    CPU.

    A joined partition is not kept (the joins of every partition together are what does not
    fit), so the materialized path joins each partition again on every pass over the data:
    its build is priced once per operation of the profile.
    """
    pool = candidates(strategy, "cpu", gpu=False)
    shared = X.on_largest_partition(fit_features, profile, hardware_info())
    model = HeuristicCostModel("no calibration has timings of partitioned (Dask) runs")
    rows = [candidate_features(shared, c.backend, c.strategy) for c in pool]
    for row in rows:  # nothing to build on the factorized path
        row["path_build_bytes"] *= max(shared["n_ops"], 1.0)
    scores = dict(zip(pool, model.predict_seconds(shared, rows)))
    chosen, reason = _choose(pool, scores, {}, strategy, backend)
    reason += (f"; partitioned input: {X.npartitions} partitions, each fitted over as an "
               f"in-memory matrix, priced on the largest ({max(X.row_counts, default=0)} rows)")
    return Decision(chosen.strategy, chosen.backend, reason, scores, {}, model.source, shared,
                    time.perf_counter() - start, profile, **solver)


def _memory_error(profile, strategy, infeasible, remedy):
    """The error of a fit that leaves no path that fits in memory: each path and why."""
    who = profile.name or "The fit"
    solver = f" (solver {profile.solver!r})" if profile.solver else ""
    reasons = "; ".join(f"{candidate}: {why}" for candidate, why in infeasible.items())
    return InsufficientMemoryError(
        f"{who} cannot run with strategy={strategy!r}{solver}: {reasons}. Nothing was "
        f"allocated; {remedy}"
    )


def _choose(pool, scores, infeasible, strategy, backend, least=None):
    """The winning candidate and a sentence saying why; ``least`` is the least demanding
    candidate whose estimated peak fits in all of the memory available, which runs where
    every candidate is ruled out (given wherever some can be)."""
    forced = [f"{name}={value!r}" for name, value in (("strategy", strategy),
                                                       ("backend", backend)) if value != "auto"]
    forced_note = f" (forced: {', '.join(forced)})" if forced else ""
    if len(pool) == 1:
        (only,) = pool
        return only, "forced by the strategy and backend parameters or set_config"
    feasible = [c for c in pool if c not in infeasible]
    if not feasible:
        return least, (f"no candidate fits in {MEMORY_HEADROOM:.0%} of the memory available; "
                       "running the least demanding, whose estimated peak fits in all of "
                       f"it{forced_note}")
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

    Parameters
    ----------
    X : NormalizedMatrix, ndarray or sparse matrix
        The fit's input, as given to :func:`decide`.
    decision : Decision
        What :func:`decide` chose for ``X``.

    Returns
    -------
    NormalizedMatrix, ndarray or sparse matrix
        A NormalizedMatrix for the factorized path, the joined matrix for the materialized
        one, on the decided device.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import NormalizedMatrix
    >>> from sklearn_ilargi.cost import decide, prepare
    >>> X = NormalizedMatrix.from_matrices(
    ...     [np.ones((4, 1)), np.ones((2, 3))], [np.arange(4), [0, 1, 0, 1]])
    >>> prepare(X, decide(X, strategy="materialized", backend="cpu")).shape
    (4, 4)
    >>> prepare(X, decide(X, strategy="factorized", backend="cpu")) is X
    True
    """
    if isinstance(X, PartitionedMatrix):
        if decision.strategy == "materialized":  # each partition joined where it lives
            return X.materialize_partitions(sparse=bool(decision.features["mat_sparse"]))
        return X
    if isinstance(X, NormalizedMatrix):
        X = X.to(decision.backend)
        if decision.strategy == "materialized":
            # Built as the cost features priced it: CSR where they say so.
            return X.materialize(sparse=bool(decision.features["mat_sparse"]))
        return X
    if decision.backend == "cpu":
        return to_numpy(X)
    return get_backend(decision.backend).from_numpy(X)

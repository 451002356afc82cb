"""Measure every workload under every feasible candidate, then train the cost model.

``python -m sklearn_ilargi.calibrate`` runs :func:`main`. For each generated scenario and each
workload, every candidate ``(backend, strategy)`` is fitted once to warm up and then
``repeats`` times (more for short fits, see ``MIN_TIMED_SECONDS``), candidates interleaved
so that a noisy neighbour slows all of them alike; the lower quartile of the repeats is kept
(``TIME_QUANTILE``). The materialized path's time includes building ``T``, as that is what a
user pays. A path that does not fit in memory, or would take more than ``MAX_PATH_BYTES``, is
not timed (``strategy="auto"`` never runs the first kind, and the second would take the
machine from under the others): the candidates are fitted under a ``memory_limit`` that
holds no more, so that the dispatcher's own memory check refuses such a path before it
allocates. Rows are appended to the measurement file after every scenario, so an
interrupted run keeps what it measured; ``families`` (``--families``) measures some scenario
families only, e.g. to append a new family to the shipped measurements.

With ``verbose`` (``--verbose``, or the ``verbose`` setting) it reports its progress over the
scenarios with an estimate of the time left: a tqdm bar where tqdm is installed, else a line
per scenario. The fits it times run silent whatever the setting.
"""

import argparse
import contextlib
import gc
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ..._config import config_context, get_config
from ...backend import gpu_available
from ...exceptions import InsufficientMemoryError
from ...utils._progress import IterationProgress, _tqdm
from .._candidates import MEMORY_HEADROOM, candidates
from .._features import candidate_features
from .._hardware import _machine_key, cache_dir
from .._model import save_model, user_model_path
from ._scenarios import FAMILIES, make_calibration_scenario
from ._train import append_measurements, check_appendable, read_measurements, train_cost_model
from ._workloads import WORKLOADS, run_workload

FULL = {"per_family": 36, "repeats": 3, "size_scale": 1.0, "budget": 1500.0}
QUICK = {"per_family": 5, "repeats": 2, "size_scale": 0.5, "budget": 420.0}
#: A fit slower than this is repeated once only: its noise is small next to its time.
LONG_FIT_SECONDS = 2.0
#: Short fits are repeated until every candidate has been timed for this long in all (a
#: short fit timed only a few times gives ratios that change from one calibration to the
#: next)...
MIN_TIMED_SECONDS = 0.75
#: ...or this many times: the median of a few millisecond-long fits is mostly noise.
MAX_REPEATS = 15
#: The quantile of the repeats that stands for a candidate's time. On a shared machine some
#: repeats stall (another process or BLAS thread takes the core), and a run of stalls can take
#: the median with it; the lower quartile stays close to the undisturbed time.
TIME_QUANTILE = 0.25
#: The most memory (bytes) a timed path may plan to take beyond its sources, whatever the
#: machine has: a dense join of a wide one-hot scenario could take tens of GiB and minutes,
#: and tells the model nothing that the smaller ones (already many times slower than the
#: other path) do not.
MAX_PATH_BYTES = 2**29


def default_measurements_path():
    """Where calibration appends its measurements unless told otherwise."""
    return cache_dir() / "measurements.csv.gz"


def _timed(workload, scenario, candidate):
    start = time.perf_counter()
    decision = run_workload(workload, scenario, candidate.strategy, candidate.backend)
    return time.perf_counter() - start, decision


def path_memory_limit(max_path_bytes=MAX_PATH_BYTES):
    """The ``memory_limit`` under which candidates are timed: the dispatcher refuses a path
    that needs more than ``max_path_bytes`` beyond its sources, as it refuses one that does
    not fit in the memory available (a fit may plan to take ``MEMORY_HEADROOM`` of its
    limit); a tighter ``memory_limit`` setting stays."""
    bound = max_path_bytes / MEMORY_HEADROOM
    limit = get_config()["memory_limit"]
    return bound if limit is None else min(limit, bound)


def measure_case(workload, scenario, pool, repeats, max_path_bytes=MAX_PATH_BYTES):
    """Seconds of each candidate (``TIME_QUANTILE`` of its repeats), and the features of the fit.

    Every fit runs under :func:`path_memory_limit`: a candidate whose path the dispatcher
    estimates not to fit there raises ``InsufficientMemoryError`` before it allocates
    anything, and is not timed (nor counted as an error).

    Parameters
    ----------
    workload : Workload
    scenario : Scenario
    pool : list of Candidate
    repeats : int
    max_path_bytes : float, default=MAX_PATH_BYTES
        The most memory a timed path may plan to take beyond its sources.

    Returns
    -------
    rows : list of dict
        One per candidate that ran, with ``seconds``, ``median_seconds``, ``repeats``,
        ``spread`` and the features.
    errors : list of str
    """
    times = {c: [] for c in pool}
    shared, errors = None, []
    with config_context(memory_limit=path_memory_limit(max_path_bytes)):
        for round_ in range(MAX_REPEATS + 1):
            for candidate in list(times):
                try:
                    seconds, decision = _timed(workload, scenario, candidate)
                except InsufficientMemoryError:  # refused before it allocated: not timed
                    del times[candidate]
                    continue
                except Exception as exc:  # one failing path must not end the calibration
                    errors.append(f"{workload.name} {candidate} on {scenario.id}: {exc!r}")
                    del times[candidate]
                    continue
                shared = decision.features or shared
                if round_ > 0:
                    times[candidate].append(seconds)
                if round_ == 0 and seconds > LONG_FIT_SECONDS:
                    repeats = min(repeats, 1)
            timed_enough = all(sum(t) >= MIN_TIMED_SECONDS for t in times.values())
            if round_ >= repeats and (timed_enough or repeats == 1):
                break
    rows = []
    for candidate, values in times.items():
        if not values or shared is None:
            continue
        seconds = float(np.quantile(values, TIME_QUANTILE))
        rows.append({
            **shared,
            **candidate_features(shared, candidate.backend, candidate.strategy),
            "scenario": scenario.id, "family": scenario.family, "workload": workload.name,
            "workload_kind": workload.kind, "backend": candidate.backend,
            "strategy": candidate.strategy, "seconds": seconds,
            "median_seconds": float(np.median(values)), "repeats": len(values),
            "spread": (max(values) - min(values)) / max(seconds, 1e-12),
            "machine": _machine_key(),
        })
    return rows, errors


def _scenario_plan(per_family, families, seed):
    """Scenarios interleaved across families, so that a cut-short run stays balanced."""
    return [(family, seed + 100_000 * FAMILIES.index(family) + i)
            for i in range(per_family) for family in families]


@contextlib.contextmanager
def _blas_threads(n_threads):
    if n_threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(n_threads, user_api="blas"):
        yield


def calibrate(*, quick=False, output=None, model_path=None, per_family=None, repeats=None,
              budget=None, families=FAMILIES, seed=0, blas_threads=None, train=True,
              size_scale=None, verbose=None, log=print):
    """Measure, append the measurements, and train and save the cost model.

    Parameters
    ----------
    quick : bool
        Fewer and smaller scenarios and repeats: minutes instead of half an hour.
    output : path, optional
        Measurement file to append to (default: the per-user cache folder).
    model_path : path, optional
        Where to save the model (default: the per-user cache folder, where the default
        lookup finds it).
    per_family, repeats : int, optional
        Scenarios per family and timed repeats per candidate (defaults by ``quick``).
    budget : float, optional
        Seconds after which no new scenario starts.
    families : sequence of str
        The scenario families to measure (of ``FAMILIES``); each keeps its own scenarios
        whatever the others, so that a family measured alone appends the scenarios a full
        run would measure.
    seed : int
    blas_threads : int, optional
        Limit the BLAS thread pools while timing (steadier timings on a shared machine).
    train : bool
        Train and save the model after measuring.
    size_scale : float, optional
        Multiplies every scenario's rows (default by ``quick``).
    verbose : int, optional
        1 or more reports the progress over the scenarios with an estimate of the time left
        (see :class:`~sklearn_ilargi.utils._progress.IterationProgress`); None or 0 follows
        the ``verbose`` setting.
    log : callable
        Receives a line per scenario and the summary lines.

    Returns
    -------
    dict
        ``measurements`` (path), ``model`` (path or None), ``rows``, ``seconds``, ``errors``.
    """
    settings = dict(QUICK if quick else FULL)
    if size_scale is not None:
        settings["size_scale"] = size_scale
    per_family = settings["per_family"] if per_family is None else per_family
    repeats = settings["repeats"] if repeats is None else repeats
    budget = settings["budget"] if budget is None else budget
    output = Path(output) if output else default_measurements_path()
    model_path = Path(model_path) if model_path else user_model_path()
    unknown = [family for family in families if family not in FAMILIES]
    if unknown:
        raise ValueError(f"Unknown scenario families {unknown}; expected some of {FAMILIES}.")
    check_appendable(output)
    plan = _scenario_plan(per_family, families, seed)
    pool = candidates(gpu=gpu_available())
    log(f"calibrating {len(plan)} scenarios x {len(WORKLOADS)} workloads x "
        f"{len(pool)} candidates ({', '.join(map(str, pool))}); measurements -> {output}")
    start, n_rows, errors = time.perf_counter(), 0, []
    progress = IterationProgress(verbose or 0, total=len(plan), description="calibration")
    # The timed fits run silent: an estimator's progress would be printed in every repeat.
    with (_blas_threads(blas_threads), warnings.catch_warnings(), progress,
          config_context(verbose=0)):
        warnings.simplefilter("ignore")  # convergence notes of short fits are expected here
        for index, (family, scenario_seed) in enumerate(plan):
            elapsed = time.perf_counter() - start
            if elapsed > budget:
                log(f"budget of {budget:.0f} s reached after {index} scenarios")
                break
            scenario = make_calibration_scenario(family, scenario_seed, settings["size_scale"])
            gc.collect()  # once per scenario: a full collection takes longer than small fits
            rows = []
            for workload in WORKLOADS:
                case_rows, case_errors = measure_case(workload, scenario, pool, repeats)
                rows += case_rows
                errors += case_errors
            if rows:
                append_measurements(rows, output)
            n_rows += len(rows)
            n, c = scenario.X.shape
            log(f"[{index + 1}/{len(plan)}] {scenario.id:<14} {n:>7} x {c:<4} "
                f"{len(rows):>3} rows  {time.perf_counter() - start:7.1f} s")
            progress(rows=len(rows))
    for error in errors[:10]:
        log(f"failed: {error}")
    saved = train_and_save(output, model_path, log) if train else None
    return {"measurements": output, "model": saved, "rows": n_rows,
            "seconds": time.perf_counter() - start, "errors": errors}


def train_and_save(measurements, model_path, log=print):
    """Train the cost model on a measurement file and save it to ``model_path``."""
    frame = read_measurements(measurements)
    log(f"training on {len(frame)} measurements from {measurements}")
    model = train_cost_model(frame)
    save_model(model, model_path)
    log(f"model saved to {model_path}")
    return Path(model_path)


def main(argv=None):
    """Command line of ``python -m sklearn_ilargi.calibrate``."""
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_ilargi.calibrate",
        description="Time every estimator on every feasible path over synthetic scenarios, "
                    "and train the cost model that chooses the path of each fit.")
    parser.add_argument("--quick", action="store_true",
                        help="a smaller run: fewer and smaller scenarios, a shorter budget")
    parser.add_argument("--output", help="measurement file to append to "
                        f"(default {default_measurements_path()})")
    parser.add_argument("--model", help=f"where to save the model (default {user_model_path()})")
    parser.add_argument("--per-family", type=int, help="scenarios per scenario family")
    parser.add_argument("--repeats", type=int, help="timed repeats per candidate")
    parser.add_argument("--budget", type=float, help="seconds after which no scenario starts")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=FAMILIES,
                        metavar="FAMILY",
                        help=f"measure these scenario families only (of {', '.join(FAMILIES)}; "
                             "default all), e.g. to append a new family to a measurement file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--blas-threads", type=int,
                        help="limit BLAS threads while timing (steadier on a shared machine)")
    parser.add_argument("--no-train", action="store_true", help="measure only")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="report progress with an estimate of the time left (a tqdm bar "
                             "where tqdm is installed)")
    parser.add_argument("--train-only", action="store_true",
                        help="no measuring: train on the --output measurement file (e.g. the "
                             "shipped sklearn_ilargi/cost/calibration/data/measurements.csv.gz)")
    args = parser.parse_args(argv)
    if args.train_only:
        train_and_save(Path(args.output) if args.output else default_measurements_path(),
                       Path(args.model) if args.model else user_model_path(), log=_print)
        return 0
    result = calibrate(
        quick=args.quick, output=args.output, model_path=args.model,
        per_family=args.per_family, repeats=args.repeats, budget=args.budget,
        families=tuple(args.families), seed=args.seed,
        blas_threads=args.blas_threads, train=not args.no_train, verbose=args.verbose,
        log=_print)
    print(f"{result['rows']} measurements in {result['seconds']:.0f} s", file=sys.stderr)
    return 0


def _print(line):
    """Print a line now; through tqdm where it is installed, so that a bar stays whole."""
    tqdm = _tqdm()
    if tqdm is None:
        print(line, flush=True)
    else:
        tqdm.write(line)

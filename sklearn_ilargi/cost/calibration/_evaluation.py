"""Judging path choices against the oracle: the policies, the held-out splits, the metrics.

A *case* is one workload on one scenario, with the measured seconds of every candidate. A
*policy* picks one candidate per case: the trained model (lowest predicted time), or a
baseline rule. Metrics compare the pick with the oracle (the measured fastest):

- accuracy and F1 (the positive class is "factorize");
- the share of the oracle's possible saving captured: over all cases, the time saved against
  the slowest candidate by the pick, divided by the time the oracle saves against it (and
  the same against always materializing on the CPU, what a user of pandas.merge pays);
- the worst slowdown: the largest ratio of the pick's time to the oracle's.
"""

import numpy as np
import pandas as pd

from .._features import FEATURE_NAMES
from .._heuristic import NOMINAL_WEIGHTS, heuristic_seconds
from ._train import fit_heuristic_weights, predict_log10_seconds

FACTORIZE_BYTE_RATIO = 1.5


def _pick_factorized(factorize):
    return np.where(factorize, "cpu/factorized", "cpu/materialized")


def baseline_policies():
    """Name -> function(case features) -> picked candidate per case, for the CPU baselines."""
    return {
        "always materialize": lambda f: np.full(len(f), "cpu/materialized", dtype=object),
        "always factorize": lambda f: np.full(len(f), "cpu/factorized", dtype=object),
        "Morpheus rule (TR > 5 and FR > 1)": lambda f: _pick_factorized(
            (f["tuple_ratio"] > 5) & (f["feature_ratio"] > 1)),
        "Amalur rule (FLOP ratio > 1.5)": lambda f: _pick_factorized(f["flop_ratio"] > 1.5),
        "complexity ratio > 1": lambda f: _pick_factorized(f["complexity_ratio"] > 1),
        "byte ratio >= 1.5": lambda f: _pick_factorized(
            f["byte_ratio"] >= FACTORIZE_BYTE_RATIO),
    }


def cases_of(frame, time="seconds"):
    """One row per (scenario, family, workload): seconds per candidate and shared features.

    Only cases where every candidate was measured are kept. ``time`` is the column that says
    a candidate's time (``"median_seconds"``: the median of its repeats).
    """
    frame = frame.assign(candidate=frame["backend"] + "/" + frame["strategy"])
    keys = ["scenario", "family", "workload"]
    times = frame.pivot_table(index=keys, columns="candidate", values=time,
                              aggfunc="median").dropna()
    shared = frame.drop_duplicates(keys).set_index(keys)
    shared = shared.loc[times.index, [c for c in FEATURE_NAMES if c in shared.columns]]
    return times, shared


def model_picks(model, frame, times):
    """The model's pick per case: the candidate with the lowest predicted time."""
    predicted = frame.assign(candidate=frame["backend"] + "/" + frame["strategy"],
                             predicted=predict_log10_seconds(model, frame))
    table = predicted.pivot_table(index=["scenario", "family", "workload"],
                                  columns="candidate", values="predicted", aggfunc="mean")
    table = table.loc[times.index, times.columns]
    return table.idxmin(axis=1).to_numpy()


def heuristic_picks(frame, times, weights=NOMINAL_WEIGHTS):
    """The heuristic's pick per case, its terms weighted by ``weights`` (the fallback's
    nominal ones by default)."""
    seconds = frame.assign(
        candidate=frame["backend"] + "/" + frame["strategy"],
        predicted=[heuristic_seconds(r, weights) for r in frame.to_dict("records")])
    table = seconds.pivot_table(index=["scenario", "family", "workload"],
                                columns="candidate", values="predicted", aggfunc="mean")
    return table.loc[times.index, times.columns].idxmin(axis=1).to_numpy()


def score(times, picks):
    """Metrics of one policy's picks over cases.

    Parameters
    ----------
    times : pandas.DataFrame
        Cases x candidates, measured seconds.
    picks : array of str
        The picked candidate per case.

    Returns
    -------
    dict
        ``accuracy``, ``f1``, ``saving_share`` (against the slowest candidate),
        ``saving_vs_materialized`` (against always materializing on the CPU),
        ``worst_slowdown``, ``mean_slowdown`` (geometric), ``cases``.
    """
    values = times.to_numpy()
    columns = list(times.columns)
    picked = values[np.arange(len(values)), [columns.index(p) for p in picks]]
    best, worst = values.min(axis=1), values.max(axis=1)
    oracle = np.array(columns, dtype=object)[values.argmin(axis=1)]
    truth = np.array([c.endswith("factorized") for c in oracle])
    chosen = np.array([p.endswith("factorized") for p in picks])
    tp = np.sum(truth & chosen)
    precision = tp / max(chosen.sum(), 1)
    recall = tp / max(truth.sum(), 1)
    possible = np.sum(worst - best)
    materialized = times["cpu/materialized"].to_numpy() if "cpu/materialized" in columns \
        else worst
    possible_vs_materialized = np.sum(materialized - best)
    return {
        "accuracy": float(np.mean(oracle == np.asarray(picks, dtype=object))),
        "f1": float(2 * precision * recall / max(precision + recall, 1e-12)),
        "saving_share": float(np.sum(worst - picked) / possible) if possible > 0 else 1.0,
        "saving_vs_materialized": (
            float(np.sum(materialized - picked) / possible_vs_materialized)
            if possible_vs_materialized > 0 else 1.0),
        "worst_slowdown": float(np.max(picked / best)),
        "mean_slowdown": float(np.exp(np.mean(np.log(picked / best)))),
        "cases": int(len(values)),
    }


def held_out_picks(frame, group, choose):
    """Picks for every case, each made knowing only the measurements of the other ``group``s.

    Parameters
    ----------
    frame : pandas.DataFrame
        Measurements.
    group : {"family", "workload"}
        What is left out in turn.
    choose : callable
        ``choose(training, held, held_times) -> picks``: from the measurements of the other
        groups, the picks for the held-out measurements and cases (see :func:`model_picks`).

    Returns
    -------
    times : pandas.DataFrame
    picks : ndarray of str
    """
    times, _ = cases_of(frame)
    picks = pd.Series(index=times.index, dtype=object)
    level = times.index.names.index(group)
    for value in frame[group].unique():
        held_times = times[times.index.get_level_values(level) == value]
        picks.loc[held_times.index] = choose(frame[frame[group] != value],
                                             frame[frame[group] == value], held_times)
    return times, picks.to_numpy()


def fitted_heuristic_picks(training, held, held_times):
    """The heuristic's picks with its terms weighted as fitted to ``training`` (no trees)."""
    return heuristic_picks(held, held_times, fit_heuristic_weights(training))


def compare(times, shared, frame, model_choice, fitted_choice=None):
    """Rows of metrics: the model first, then the heuristics and every baseline.

    ``fitted_choice``, where given, are the picks of the heuristic with fitted weights alone.
    """
    rows = [{"policy": "cost model (CatBoost)", **score(times, model_choice)}]
    if fitted_choice is not None:
        rows.append({"policy": "fitted heuristic (no trees)", **score(times, fitted_choice)})
    rows.append({"policy": "fallback heuristic", **score(times, heuristic_picks(frame, times))})
    for name, rule in baseline_policies().items():
        rows.append({"policy": name, **score(times, rule(shared))})
    return pd.DataFrame(rows)


def markdown_table(table):
    """A metrics table as markdown."""
    lines = ["| policy | saving captured | saving vs materialize | worst slowdown | "
             "mean slowdown | accuracy | F1 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in table.to_dict("records"):
        lines.append(
            f"| {row['policy']} | {100 * row['saving_share']:.1f}% | "
            f"{100 * row['saving_vs_materialized']:.1f}% | "
            f"{row['worst_slowdown']:.2f}x | {row['mean_slowdown']:.3f}x | "
            f"{100 * row['accuracy']:.1f}% | {row['f1']:.3f} |")
    return "\n".join(lines)

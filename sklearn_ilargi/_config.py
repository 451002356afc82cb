"""Settings: the default strategy, backend and cost model of every fit, and every threshold.

Settings are process-wide: a value given to :func:`set_config`, or inside a
:func:`config_context` block, is seen by every thread of the process (a
``ThreadPoolExecutor``'s or joblib's threads, say) until it changes again. An estimator that is
pickled, as ``GridSearchCV(n_jobs=...)`` does to send it to worker processes, carries the
settings that differ from the defaults, and its fits in another process that changed none of
its own run under them (see :func:`carried_settings`): a process's own settings always win,
and in the process that pickled it (a ``copy.deepcopy``, say) they are the only ones.

:data:`OPTIONS` lists every setting with its default and meaning; ``doc/`` renders it as the
settings page.
"""

import numbers
import os
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    """One setting: its default, the values it accepts and what it does.

    Attributes
    ----------
    default : object
    choices : tuple or None
        The values allowed, where they are a fixed set.
    kind : {"choice", "int", "count", "float", "bytes", "path", "verbosity", "cache"}
        What is checked: one of ``choices``, a non-negative integer, a positive integer (a
        step, which cannot be 0), a non-negative number, a positive number of bytes or
        None, a path (str or os.PathLike) or None, a verbosity (non-negative integer or
        bool), where results are kept (None, ``'memory'``, a folder or a
        ``joblib.Memory``).
    doc : str
    """

    default: object
    kind: str
    doc: str
    choices: tuple = None


OPTIONS = {
    "strategy": Option(
        "auto", "choice", choices=("auto", "factorized", "materialized"),
        doc="The strategy of every estimator whose ``strategy`` parameter is ``'auto'``: "
            "``'auto'`` lets the cost model choose per fit."),
    "backend": Option(
        "auto", "choice", choices=("auto", "cpu", "gpu"),
        doc="The device of every estimator whose ``backend`` parameter is ``'auto'``."),
    "cost_model": Option(
        None, "path",
        doc="A CatBoost model file (``.cbm``) to decide with, or ``'heuristic'``; None finds "
            "the calibrated model of this machine, then the shipped one."),
    "verbose": Option(
        0, "verbosity",
        doc="Progress of the long operations (calibration; fits whose ``verbose`` parameter "
            "is 0): 0 is silent, 1 reports progress with an estimate of the time left."),
    "expected_iterations": Option(
        30, "int",
        doc="The solver iterations that the cost model assumes for an iterative fit that can "
            "stop early (``tol > 0``): at most this many, a typical count for Lloyd's "
            "iterations, L-BFGS and coordinate descent on well-scaled data. A fit with "
            "``tol=0`` is assumed to run all of its ``max_iter``."),
    "closed_form_max_columns": Option(
        4096, "int",
        doc="A fit whose solver is ``'auto'`` takes a closed form over the dense ``c x c`` "
            "gram (least squares' normal equations, PCA's covariance) where ``X`` has at "
            "most this many columns and the gram with its copies fits in memory; wider, it "
            "takes a solver over the products ``X @ v`` and ``X.T @ r`` (LSQR, conjugate "
            "gradients, a truncated SVD), which never forms the gram. The closed form's "
            "solve grows as ``c**3`` and its gram as ``c**2``, the products only with the "
            "data. The step size of gradient descent (``learning_rate='auto'``) follows the "
            "same rule: the gram's largest eigenvalue (``scipy.linalg.eigh``), or Lanczos "
            "(``scipy.sparse.linalg.eigsh``) over the products."),
    "memory_limit": Option(
        None, "bytes",
        doc="The most memory (bytes) that a fit may plan to take on the host. Before a fit "
            "allocates, the dispatcher estimates each path's peak memory (the sources, the "
            "joined matrix and the dense copies that the path makes of it, a dense gram with "
            "its copies, the work arrays) and rules out a path that needs more than 80% of "
            "the smaller of this limit and the memory the operating system reports available "
            "(``MemAvailable`` on Linux): the other 20% is a margin for the estimate's error. "
            "A fit whose forced strategy is ruled out raises ``InsufficientMemoryError``. "
            "Under ``strategy='auto'`` the fastest path that is not ruled out runs; where all "
            "are, the least demanding runs if its estimate fits in all of the memory "
            "available (it is close to fitting), and the fit raises "
            "``InsufficientMemoryError`` if not. None uses what the operating system reports; "
            "set it where the process runs under a tighter limit than the machine's (a "
            "container's memory limit, a share of a node)."),
    "cv_gram_max_cancellation": Option(
        1e3, "float",
        doc="``FactorizedRidgeCV(cv=k)`` takes each training fold's centered gram as the "
            "total gram minus the held-out rows', both centered by the overall mean, less the "
            "rank-one term of the fold's own mean. Where that term cancels more than this "
            "factor of a column's (or a target's) sum of squares (the fold's mean lies far "
            "from the overall one against its spread), the fold's gram is computed again "
            "from its own rows, centered by their mean. Below 1, every fold is. The same "
            "factor bounds the held-out :math:`R^2` scores taken from the held-out rows' "
            "sums: a penalty whose squared errors' terms can exceed it times the target's "
            "sum of squares is scored from its predictions instead (below 1, every one is)."),
    "cv_working_memory": Option(
        256.0, "float",
        doc="Memory (MiB) for the arrays that ``FactorizedRidgeCV`` holds across the rows: "
            "leave-one-out's ``X @ V`` (``n x c``) is held where it fits, else taken a slice "
            "of rows at a time; the predictions of the penalties are taken as many "
            "penalties at a time as fit."),
    # Reuse of expensive results across fits (sklearn_ilargi/utils/_cache.py).
    "cache": Option(
        None, "cache",
        doc="Keep the expensive results of a training matrix (grams, column sums and sums "
            "of squares, row norms, column extremes, ``X.T @ y`` of the closed forms) for "
            "the next fits over the same rows, as the candidates of ``GridSearchCV`` that "
            "share a fold: None keeps nothing; ``'memory'`` keeps them in this process (at "
            "most ``cache_max_bytes``); a folder (str or os.PathLike, any other string) or a "
            "``joblib.Memory`` keeps them on disk, where ``GridSearchCV(n_jobs=...)``'s "
            "worker processes share them. A result is found by a fingerprint of the sources, "
            "row maps (a fold's rows included), shift, dtype, operation and arguments "
            "(sample weights by content), and comes back as computed. Safe only while the "
            "sources are not changed in place: each source object is digested once per "
            "process (call ``clear_cache()`` after changing one). Data on the GPU is not "
            "cached."),
    "cache_max_bytes": Option(
        1 << 30, "int",
        doc="The most bytes of results that ``cache='memory'`` keeps (1 GiB by default); the "
            "least recently used go first, and a larger result is not kept."),
    # Storage of the sources, decided once when a matrix is built.
    "dense_storage_density": Option(
        1 / 6, "float",
        doc="A sparse source at least this full is stored dense (its products then run in "
            "multi-threaded BLAS)."),
    "dense_storage_max_cells": Option(
        1 << 16, "int",
        doc="A sparse source of at most this many cells is stored dense (scipy.sparse's fixed "
            "cost per product exceeds its work there); 0 keeps every sparse source sparse."),
    "column_major_min_rows": Option(
        1 << 16, "int",
        doc="A dense fact table with at least this many rows, and at most "
            "``column_major_max_columns`` columns, is stored column-major."),
    "column_major_max_columns": Option(
        64, "int",
        doc="See ``column_major_min_rows``."),
    "gathered_values_per_row": Option(
        1.0, "float",
        doc="Sparse dimensions that hold fewer than this many values per target row, once "
            "gathered, are stored gathered onto the target's rows (as are dense dimensions of "
            "one column); 0 stores no source gathered."),
    "csr_join_max_share": Option(
        0.5, "float",
        doc="The joined matrix of sparse sources is built as CSR where that takes less than "
            "this share of its dense bytes (``materialize()``, and the materialized path of "
            "every fit); dense otherwise."),
    # The gram's plan and the products' slicing (benchmarks/block_pairs.py measures them).
    "gram_join_max_columns": Option(
        16, "int",
        doc="In the gram, dense dimensions this narrow are joined a slice of rows at a time "
            "(when at least two of them pair up) rather than kept factorized."),
    "gram_column_dots_max_columns": Option(
        5, "int",
        doc="The gram of a dense block whose columns are contiguous (a column-major fact "
            "table, say) and at most this many is taken as one dot product per pair of "
            "columns rather than by BLAS's symmetric product, which is slow for so few "
            "columns (CPU); 0 always uses BLAS."),
    "sparse_gram_densify_ratio": Option(
        16.0, "float",
        doc="The gram of a sparse matrix is summed over dense copies of slices of its rows "
            "(each slice's sparse transpose times its dense copy) where that multiplies at "
            "most this many times the pairs of entries that a sparse product multiplies "
            "(``n_columns * nnz <= ratio * sum(nnz per row ** 2)``, about ``ratio`` times "
            "the density of the matrix): a dense inner loop, many times faster per "
            "multiplication than scipy's sparse product; else by scipy's sparse product "
            "(CPU). 0 always takes the sparse product."),
    "sparse_gram_slice_values": Option(
        1 << 20, "int",
        doc="Values of the dense copy of one slice of rows of a sparse matrix whose gram is "
            "summed slice by slice (see ``sparse_gram_densify_ratio``): small enough to stay "
            "in the cache."),
    "gather_scatter_max_columns": Option(
        8, "int",
        doc="Two dimensions pair in the gram by gathering and scattering when one has at most "
            "this many columns, else through their co-occurrence matrix."),
    "dense_cooccurrence_cells_per_row": Option(
        1.0, "float",
        doc="Two small dimensions pair through a dense co-occurrence matrix when it has at "
            "most this many cells per target row."),
    "gathered_values_per_slice": Option(
        1 << 22, "int",
        doc="Most gathered values held at once by a product that slices the target's rows "
            "(bounds its scratch memory)."),
    "parallel_slice_rows": Option(
        1 << 16, "int",
        doc="A product that sums over slices of the target's rows (the gram's joined slices, "
            "a gather and scatter) cuts a target of at least this many rows into at least one "
            "slice per thread, and runs the slices side by side on threads."),
    "parallel_group_rows": Option(
        1 << 20, "int",
        doc="Row maps are scattered side by side on threads when the target has at least this "
            "many rows."),
    "slice_working_memory": Option(
        4.0, "float",
        doc="Scratch memory (MiB) per thread of a product that is reduced a slice of rows at "
            "a time (K-means' distances to its centers, reduced to each sample's closest "
            "one, or in its seeding to the candidates' potentials): each slice holds as many "
            "of the target's rows as fit here with their ``p`` columns three times over (at "
            "least one), as scikit-learn's ``working_memory`` sizes its chunks. Small enough, "
            "a slice stays in the cache from its product to its reduction, and the whole "
            "``n x p`` product is never held; large enough, the twenty-odd numpy calls that "
            "each slice costs are small against its work."),
    "locality_order_min_bytes": Option(
        1 << 20, "int",
        doc="K-means iterates over the samples of a NormalizedMatrix in the order of the rows "
            "of its largest dimension (CPU) where that dimension's distances to the centers (one "
            "value per center and dimension row) take at least this many bytes, more than "
            "a core's cache holds: each slice of samples then gathers a narrow band of "
            "them, which stays in the cache. It costs a copy of the fact table, its rows in "
            "that order, per fit; the labels are put back in the samples' order. 0 always "
            "reorders."),
    "incremental_sums_max_share": Option(
        0.15, "float",
        doc="K-means updates the sums of its clusters by the samples that changed clusters "
            "alone (added to the new cluster, taken from the old one) where they are at most "
            "this share of the samples; else it sums every sample again (0: whenever one "
            "changed). A sample that moved is read twice and out of order, which costs "
            "several times what summing a sample again in order does."),
    "pruned_argmin_min_share": Option(
        0.5, "float",
        doc="K-means labels the samples of a star with one dimension from their dimension "
            "rows alone, through an exact bound (a sample whose fact part cannot overturn "
            "its dimension row's closest center keeps that center, without its distances to "
            "the others), where the bound decides at least this share of a sample of the "
            "rows, and of each slice of rows; else it computes every distance (above 1: "
            "never)."),
    "pruned_slice_rows": Option(
        1 << 16, "int",
        doc="Rows that K-means' bound (see ``pruned_argmin_min_share``) labels at once: runs "
            "of consecutive slices of about this many rows, each a few numpy calls over all "
            "of its rows, whose cost per call would otherwise outweigh their work."),
    "rows_per_gather": Option(
        1 << 15, "count",
        doc="Rows gathered per step where a gather accumulates into its output (CPU)."),
    "column_scatter_max_columns": Option(
        2, "int",
        doc="A scatter-add of a dense operand of at most this many columns runs a column at a "
            "time (CPU; column-major operands always do), wider row-major ones in one sparse "
            "product."),
    "small_product_cells": Option(
        1 << 16, "int",
        doc="A dense product of numpy arrays with at most this many cells in its result (a "
            "gram, a transposed product) runs as ``numpy.dot``, which lets the backend's "
            "threads multiply side by side; numpy's ``@`` holds the GIL for such products. "
            "Larger ones use ``@`` (CPU; 0 always does)."),
    "group_cells_per_row": Option(
        8, "int",
        doc="Group counts are built dense when they have at most this many cells per target "
            "row, else sparse."),
    "gpu_segment_sum": Option(
        "csr", "choice", choices=("csr", "scatter", "bincount"),
        doc="How the GPU backend scatter-adds dense rows: a product with a cached CSR of "
            "``I.T`` (the same bits on every run), atomic scatter-adds, or a bincount per "
            "column (both summing in an order the hardware picks; kept to be measured)."),
    "one_thread_cells": Option(
        1 << 22, "int",
        doc="BLAS is limited to one thread for the gram's products of factorized blocks below "
            "this many cells of theirs, for the solve of the normal equations below this many "
            "cells of the gram, and ``FactorizedRidgeCV`` for a whole fit, below this many "
            "cells of ``X``, and for each eigendecomposition, below this many of its matrix "
            "(small products lose more to thread start-up than they gain)."),
    "parallel_loss_samples": Option(
        1 << 17, "int",
        doc="Logistic regression evaluates its pointwise loss and gradient on all of "
            "OpenMP's threads where it has at least this many samples, else on one, as "
            "scikit-learn's always does: the loss of fewer samples takes less time than "
            "waking the other threads for each evaluation, and the threads left waiting "
            "after it take cores from the work that follows (its products always run on one "
            "BLAS thread)."),
    # Reading tables.
    "table_chunk_rows": Option(
        1 << 18, "count",
        doc="Rows of a table that ``from_tables`` encodes at a time into a sparse (CSR) "
            "block, which bounds its temporary arrays."),
    "pair_slots": Option(
        8, "int",
        doc="Two-column keys whose second column has at most this many values per first "
            "value on the right are matched by a small lookup table; others by hashing "
            "their combined codes."),
}

_settings = {name: option.default for name, option in OPTIONS.items()}
_lock = threading.RLock()


def _check(name, value):
    if name not in OPTIONS:
        raise ValueError(f"Unknown setting {name!r}; known: {sorted(OPTIONS)}.")
    option = OPTIONS[name]
    kind = option.kind
    if kind == "choice":
        ok = isinstance(value, str) and value in option.choices
        expected = f"one of {option.choices}"
    elif kind == "path":
        ok = value is None or isinstance(value, str) or hasattr(value, "__fspath__")
        expected = "a path (str or os.PathLike), 'heuristic' or None"
    elif kind == "cache":
        from joblib import Memory

        ok = (value is None or (isinstance(value, str) and value != "")
              or hasattr(value, "__fspath__") or isinstance(value, Memory))
        expected = "None, 'memory', a folder (str or os.PathLike) or a joblib.Memory"
    elif kind == "bytes":
        ok = value is None or (isinstance(value, numbers.Real) and not isinstance(value, bool)
                               and 0 < value < float("inf"))
        expected = "a positive number of bytes or None"
    elif kind == "verbosity":
        ok = isinstance(value, numbers.Integral) and value >= 0
        expected = "a non-negative integer"
    elif kind in ("int", "count"):
        smallest = 1 if kind == "count" else 0
        ok = (isinstance(value, numbers.Integral) and not isinstance(value, bool)
              and value >= smallest)
        expected = "a positive integer" if smallest else "a non-negative integer"
    else:
        ok = (isinstance(value, numbers.Real) and not isinstance(value, bool) and value >= 0
              and value == value)
        expected = "a non-negative number"
    if not ok:
        raise ValueError(f"The setting {name!r} must be {expected}; got {value!r}.")
    if kind in ("int", "count", "verbosity"):
        return int(value)
    if kind == "float" or (kind == "bytes" and value is not None):
        return float(value)
    return value


def get_config():
    """The current settings as a new dict.

    Returns
    -------
    dict
        Every setting of :data:`OPTIONS` with its current value.

    Examples
    --------
    >>> from sklearn_ilargi import get_config
    >>> get_config()["strategy"]
    'auto'
    """
    with _lock:
        return dict(_settings)


def set_config(**settings):
    """Change settings for the whole process; see :data:`OPTIONS` for each one.

    Every value is checked before any is changed: a wrong name or value raises
    ``ValueError`` naming the setting, and leaves every setting as it was.

    Parameters
    ----------
    **settings
        ``name=value`` for settings of :data:`OPTIONS`, e.g. ``strategy="factorized"``.

    Examples
    --------
    >>> from sklearn_ilargi import get_config, set_config
    >>> set_config(strategy="factorized")
    >>> get_config()["strategy"]
    'factorized'
    >>> set_config(strategy="auto")
    """
    checked = {name: _check(name, value) for name, value in settings.items()}
    with _lock:
        _settings.update(checked)


@contextmanager
def config_context(**settings):
    """Change settings within a ``with`` block only (for every thread of the process).

    Parameters
    ----------
    **settings
        As for :func:`set_config`.

    Yields
    ------
    None
        The settings apply inside the block and are restored when it ends, even by an
        error.

    Examples
    --------
    >>> from sklearn_ilargi import config_context, get_config
    >>> with config_context(strategy="materialized"):
    ...     get_config()["strategy"]
    'materialized'
    >>> get_config()["strategy"]
    'auto'
    """
    checked = {name: _check(name, value) for name, value in settings.items()}
    with _lock:
        old = {name: _settings[name] for name in checked}
        _settings.update(checked)
    try:
        yield
    finally:
        with _lock:
            _settings.update(old)


def changed_settings():
    """The settings that differ from their defaults, as a dict."""
    with _lock:
        return {name: value for name, value in _settings.items()
                if value != OPTIONS[name].default}


def settings_to_carry():
    """What a pickled estimator carries: this process's id and its :func:`changed_settings`."""
    return {"process": os.getpid(), "settings": changed_settings()}


def carried_settings(carried):
    """A context for a fit of an estimator that was pickled with the settings ``carried``.

    The settings apply in another process than the one that pickled the estimator, where that
    process changed none of its own (a worker process of a search, say), and are ignored
    otherwise: a process's own settings always win. Carried names or values that this version
    does not know (a pickle of another version) are left out.

    Parameters
    ----------
    carried : dict or None
        What :func:`settings_to_carry` returned where the estimator was pickled.
    """
    if not carried or carried.get("process") == os.getpid() or changed_settings():
        return nullcontext()
    return config_context(**_known(carried.get("settings", {})))


def _known(settings):
    """The settings of ``settings`` whose names and values this version accepts, checked."""
    known = {}
    for name, value in settings.items():
        try:
            known[name] = _check(name, value)
        except ValueError:
            continue
    return known


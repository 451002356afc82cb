"""Factorized vs materialized linear algebra over a star schema (numpy, one process).

A fact table of ``--rows`` x 5 joins one dimension; the grid varies the tuple ratio
(fact rows per dimension row) and the feature ratio (dimension columns per fact column).
Each cell reports materialized time / factorized time for ``T @ w``, ``T.T @ y`` and
``T.T @ T``: above 1 the factorized form is faster. The last line repeats the cell of issue
15's acceptance (tuple ratio 100, feature ratio 10: a 1M x 5 fact table and a 10k x 50
dimension at the default ``--rows``); ``--headline`` measures that cell alone.

    python benchmarks/ops.py [--rows 1000000] [--repeats 5] [--headline] [--out benchmarks/results]
"""


import numpy as np

from _timing import arguments, machine, median_times, write_results
from sklearn_ilargi import NormalizedMatrix

TUPLE_RATIOS = (1, 5, 20, 100)
FEATURE_RATIOS = (0.5, 2, 10)
FACT_COLUMNS = 5
OPERATIONS = ("T @ w", "T.T @ y", "T.T @ T")
HEADLINE = (100, 10)  # (tuple ratio, feature ratio) of issue 15's acceptance


def star(n_rows, tuple_ratio, feature_ratio, seed=0):
    rng = np.random.default_rng(seed)
    n_dim = max(1, n_rows // tuple_ratio)
    dim_columns = max(1, int(FACT_COLUMNS * feature_ratio + 0.5))
    fact = rng.standard_normal((n_rows, FACT_COLUMNS))
    dim = rng.standard_normal((n_dim, dim_columns))
    foreign_key = rng.integers(0, n_dim, n_rows)
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_rows), foreign_key])


def measure(nm, repeats):
    T = nm.materialize()
    rng = np.random.default_rng(1)
    w, y = rng.standard_normal(nm.shape[1]), rng.standard_normal(nm.shape[0])
    pairs = {
        "T @ w": (lambda: nm @ w, lambda: T @ w),
        "T.T @ y": (lambda: nm.T @ y, lambda: T.T @ y),
        "T.T @ T": (lambda: nm.T @ nm, lambda: T.T @ T),
    }
    out = {}
    for name, (factorized, materialized) in pairs.items():
        t_fact, t_mat = median_times([factorized, materialized], repeats)
        out[name] = {"factorized_s": t_fact, "materialized_s": t_mat, "speedup": t_mat / t_fact}
    return out


def headline(results):
    """The line that reports the cell of :data:`HEADLINE`."""
    cell = next(r for r in results if (r["tuple_ratio"], r["feature_ratio"]) == HEADLINE)
    ratios = ", ".join(f"{op} {cell['ops'][op]['speedup']:.1f}x" for op in OPERATIONS)
    return (f"tuple ratio {HEADLINE[0]}, feature ratio {HEADLINE[1]} "
            f"(T {cell['shape'][0]} x {cell['shape'][1]}): {ratios}")


def markdown(results):
    lines = ["| tuple ratio | feature ratio | " + " | ".join(OPERATIONS) + " |",
             "|---:|---:|" + "---:|" * len(OPERATIONS)]
    for r in results:
        cells = " | ".join(f"{r['ops'][op]['speedup']:.1f}x" for op in OPERATIONS)
        lines.append(f"| {r['tuple_ratio']} | {r['feature_ratio']} | {cells} |")
    return "\n".join(lines)


def heat_map(results, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'sklearn-ilargi[bench]')")
        return
    fig, axes = plt.subplots(1, len(OPERATIONS), figsize=(4.6 * len(OPERATIONS), 3.8))
    fig.suptitle("materialized time / factorized time (above 1: factorized is faster)")
    for ax, op in zip(axes, OPERATIONS):
        grid = np.array([[next(r["ops"][op]["speedup"] for r in results
                               if r["tuple_ratio"] == tr and r["feature_ratio"] == fr)
                          for tr in TUPLE_RATIOS] for fr in FEATURE_RATIOS])
        image = ax.imshow(np.log2(grid), cmap="RdBu", vmin=-4, vmax=4, origin="lower")
        for (i, j), value in np.ndenumerate(grid):
            ax.text(j, i, f"{value:.1f}x", ha="center", va="center", fontsize=9)
        ax.set_xticks(range(len(TUPLE_RATIOS)), TUPLE_RATIOS)
        ax.set_yticks(range(len(FEATURE_RATIOS)), FEATURE_RATIOS)
        ax.set_xlabel("tuple ratio")
        ax.set_ylabel("feature ratio")
        ax.set_title(op)
    fig.colorbar(image, ax=axes, label="log2 speed-up")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"wrote {path}")


def main():
    parser = arguments(__doc__, repeats=5)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--headline", action="store_true",
                        help="measure only the cell of issue 15's acceptance")
    args = parser.parse_args()
    info = machine()
    print(f"# ops benchmark: {args.rows} fact rows x {FACT_COLUMNS}, {info['cores']} cores, "
          f"BLAS {info['blas']}, median of {args.repeats}")
    grid = [HEADLINE] if args.headline else [(tr, fr) for tr in TUPLE_RATIOS
                                             for fr in FEATURE_RATIOS]
    results = []
    for tuple_ratio, feature_ratio in grid:
        nm = star(args.rows, tuple_ratio, feature_ratio)
        ops = measure(nm, args.repeats)
        results.append({"tuple_ratio": tuple_ratio, "feature_ratio": feature_ratio,
                        "shape": list(nm.shape), "ops": ops})
        print(f"TR={tuple_ratio:>3} FR={feature_ratio:>4}: " + ", ".join(
            f"{op} {ops[op]['speedup']:.2f}x" for op in OPERATIONS), flush=True)
    print()
    if not args.headline:
        print(markdown(results))
    print(headline(results))
    name = "ops_headline" if args.headline else "ops"
    write_results(args.out, f"{name}.json",
                  {"machine": info, "rows": args.rows, "results": results})
    if not args.headline:
        heat_map(results, args.out / "ops.png")


if __name__ == "__main__":
    main()

"""Two dimensions' block of the gram: gather-and-scatter against the co-occurrence matrix.

The gram pairs two dimension blocks ``a`` and ``b`` either by gathering one block's rows over
the target rows and scattering them into the other's (values moved grow with the columns), or
through the co-occurrence matrix ``I_a.T @ I_b`` (built once, then a sparse product of source
size). Over a star of two dimensions, for a grid of dimension widths and tuple ratios, each cell
reports gather-and-scatter time / co-occurrence time (above 1: the co-occurrence matrix is
faster), each on row maps with nothing cached yet, as in a fit's first gram. The
``gather_scatter_max_columns`` setting is where they cross.

    python benchmarks/block_pairs.py [--rows 300000] [--repeats 7] [--out benchmarks/results]
"""

import numpy as np

from _timing import arguments, machine, median_times, write_results
from sklearn_ilargi import NormalizedMatrix, config_context
from sklearn_ilargi.normalized._row_map import RowMap
from sklearn_ilargi.ops import _products

WIDTHS = (4, 8, 12, 16, 24, 32, 48)
TUPLE_RATIOS = (10, 30, 100)


def two_dimensions(n_rows, tuple_ratio, width, seed=0):
    """The two dimension blocks of a star with a fact table of one column."""
    rng = np.random.default_rng(seed)
    n_dim = max(1, n_rows // tuple_ratio)
    sources = [rng.random((n_rows, 1)), rng.random((n_dim, width)), rng.random((n_dim, width))]
    row_maps = [np.arange(n_rows), rng.integers(0, n_dim, n_rows), rng.integers(0, n_dim, n_rows)]
    nm = NormalizedMatrix.from_matrices(sources, row_maps)
    return nm.backend, nm.blocks[1], nm.blocks[2]


def fresh(block):
    """The block on a new row map: nothing derived from the map is cached yet (a fit's first
    product)."""
    m = block.row_map
    return block.with_(row_map=RowMap(m.indices, m.n_source, has_missing=m.has_missing))


def pair_times(be, a, b, repeats):
    """Seconds of the pair's gram block by gather-and-scatter and by co-occurrence."""

    def by(max_columns):
        def run():
            with config_context(gather_scatter_max_columns=max_columns):
                return _products._cross_gram(be, fresh(a), fresh(b), None, np.float64)
        return run

    gather_scatter, cooccurrence = by(10**6), by(0)
    np.testing.assert_allclose(gather_scatter(), cooccurrence(), rtol=1e-9)
    return median_times([gather_scatter, cooccurrence], repeats)


def main():
    parser = arguments(__doc__, repeats=7)
    parser.add_argument("--rows", type=int, default=300_000)
    args = parser.parse_args()
    info = machine()
    print(f"# block pairs: {args.rows} target rows, {info['cores']} cores, BLAS {info['blas']}, "
          f"median of {args.repeats}; gather-and-scatter / co-occurrence (above 1: "
          "co-occurrence faster)\n")
    print("| tuple ratio | " + " | ".join(f"{w} columns" for w in WIDTHS) + " |")
    print("|---|" + "---:|" * len(WIDTHS))
    results = []
    for tuple_ratio in TUPLE_RATIOS:
        cells = []
        for width in WIDTHS:
            t_gs, t_co = pair_times(*two_dimensions(args.rows, tuple_ratio, width), args.repeats)
            results.append({"tuple_ratio": tuple_ratio, "columns": width,
                            "gather_scatter_s": t_gs, "cooccurrence_s": t_co})
            cells.append(f"{t_gs / t_co:.2f}x")
        print(f"| {tuple_ratio} | " + " | ".join(cells) + " |", flush=True)
    write_results(args.out, "block_pairs.json",
                  {"machine": info, "rows": args.rows, "repeats": args.repeats,
                   "results": results})


if __name__ == "__main__":
    main()

"""Re-train the cost model on this machine, or evaluate it.

``python -m sklearn_ilargi.calibrate [--quick] ...`` times every estimator on synthetic
scenarios and trains the cost model; ``python -m sklearn_ilargi.calibrate evaluate ...``
scores a model's choices on held-out scenarios. ``--help`` after either lists the options.
"""

import sys


def main(argv=None):
    """Run the calibration, or with ``evaluate`` first, the evaluation."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["evaluate"]:
        from .cost.calibration._evaluate import main as evaluate

        return evaluate(argv[1:])
    from .cost.calibration._calibrate import main as calibrate

    return calibrate(argv)


if __name__ == "__main__":
    sys.exit(main())

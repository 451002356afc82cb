"""Offline: the scenarios and workloads that calibration times, training and evaluation.

Nothing here runs during a fit. The command line is ``python -m sklearn_ilargi.calibrate``
(measure and train) and ``python -m sklearn_ilargi.calibrate evaluate`` (held-out scores).
"""

from ._calibrate import calibrate
from ._evaluate import held_out_tables

__all__ = ["calibrate", "held_out_tables"]

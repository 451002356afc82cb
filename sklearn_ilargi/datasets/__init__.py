"""Data sets: synthetic stars and snowflakes, one-hot stars of events, TPC-H, and the pandas
reference join."""

from ._onehot import make_onehot_star
from ._reference import join_with_pandas
from ._synthetic import Scenario, make_scenario, make_star
from ._tpch import load_tpch, tpch_training_set

__all__ = [
    "Scenario",
    "join_with_pandas",
    "load_tpch",
    "make_onehot_star",
    "make_scenario",
    "make_star",
    "tpch_training_set",
]

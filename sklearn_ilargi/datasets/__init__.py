"""Data sets: synthetic star and snowflake scenarios, TPC-H, and the pandas reference join."""

from ._reference import join_with_pandas
from ._synthetic import Scenario, make_scenario, make_star
from ._tpch import load_tpch, tpch_training_set

__all__ = [
    "Scenario",
    "join_with_pandas",
    "load_tpch",
    "make_scenario",
    "make_star",
    "tpch_training_set",
]

"""The progress of iterations behind every estimator's ``verbose``."""

import sys
import types

from sklearn_ilargi import config_context
from sklearn_ilargi.utils._progress import IterationProgress, verbosity


def without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm then raises ImportError


def test_silent_at_verbosity_zero(monkeypatch, capsys):
    without_tqdm(monkeypatch)
    with IterationProgress(0, total=3, description="solver") as progress:
        progress(loss=1.0)
        progress.note("done")
    assert capsys.readouterr().out == ""


def test_plain_lines_with_the_time_left_without_tqdm(monkeypatch, capsys):
    without_tqdm(monkeypatch)
    with IterationProgress(1, total=3, description="solver") as progress:
        progress(loss=0.5, step=2)
        progress()
        progress.note("Converged.")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("solver: iteration 1/3, loss 0.5, step 2, at most ")
    assert lines[1].startswith("solver: iteration 2/3, at most ")
    assert all(line.endswith(" s left") for line in lines[:2])
    assert lines[2] == "Converged."


def test_the_setting_is_the_default_of_an_estimator_whose_verbose_is_zero():
    assert verbosity(0) == 0 and verbosity(2) == 2 and verbosity(True) == 1
    with config_context(verbose=1):
        assert verbosity(0) == 1 and verbosity(3) == 3
        assert IterationProgress(0, total=1, description="x").enabled


def test_a_tqdm_bar_where_tqdm_is_installed(monkeypatch, capsys):
    events = []

    class FakeBar:
        def __init__(self, total, desc, unit):
            events.append(("open", total, desc))

        def set_postfix_str(self, text, refresh):
            events.append(("values", text))

        def update(self):
            events.append(("update",))

        def write(self, message):
            events.append(("write", message))

        def close(self):
            events.append(("close",))

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeBar))
    with IterationProgress(1, total=2, description="solver") as progress:
        progress(inertia=3.25)
        progress.note("Converged.")
    assert events == [("open", 2, "solver"), ("values", "inertia 3.25"), ("update",),
                      ("write", "Converged."), ("close",)]
    assert capsys.readouterr().out == ""

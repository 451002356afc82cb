"""Calibration's progress report (``verbose``), on a tiny run without tqdm."""

import sys

import pytest

from sklearn_ilargi import config_context
from sklearn_ilargi.cost.calibration import _calibrate

TINY = dict(per_family=1, repeats=1, families=("pkfk", "star"), size_scale=0.02, train=False)


@pytest.fixture
def without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError


def progress_lines(text):
    return [line for line in text.splitlines() if line.startswith("calibration:")]


@pytest.mark.parametrize("verbose, setting", [(1, 0), (None, 1), (0, 1)])
def test_progress_with_the_time_left(tmp_path, capsys, without_tqdm, verbose, setting):
    lines = []
    with config_context(verbose=setting):
        _calibrate.calibrate(output=tmp_path / "m.csv.gz", verbose=verbose, log=lines.append,
                             **TINY)
    printed = capsys.readouterr().out
    progress = progress_lines(printed)
    assert [line.split(",")[0] for line in progress] == [
        "calibration: iteration 1/2", "calibration: iteration 2/2"]
    assert all("left" in line for line in progress)
    # The timed fits report nothing, though the setting asks the estimators for progress.
    assert printed.splitlines() == progress
    assert any(line.startswith("[2/2]") for line in lines)


def test_silent_by_default(tmp_path, capsys, without_tqdm):
    lines = []
    _calibrate.calibrate(output=tmp_path / "m.csv.gz", log=lines.append, **TINY)
    assert capsys.readouterr().out == ""
    assert any(line.startswith("[1/2]") for line in lines)


def test_the_command_line_asks_for_progress(monkeypatch):
    asked = {}

    def calibrate(**kwargs):
        asked.update(kwargs)
        return {"rows": 0, "seconds": 0.0}

    monkeypatch.setattr(_calibrate, "calibrate", calibrate)
    _calibrate.main(["--quick", "--no-train"])
    assert asked["verbose"] == 0  # the setting decides
    _calibrate.main(["--quick", "--no-train", "--verbose"])
    assert asked["verbose"] == 1

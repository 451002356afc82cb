"""Global settings: the default backend, strategy and cost model of every fit."""

import threading
from contextlib import contextmanager

_DEFAULTS = {"backend": "auto", "strategy": "auto", "cost_model": None, "verbose": 0}
_CHOICES = {
    "backend": ("auto", "cpu", "gpu"),
    "strategy": ("auto", "factorized", "materialized"),
}
_local = threading.local()


def _settings():
    if not hasattr(_local, "settings"):
        _local.settings = dict(_DEFAULTS)
    return _local.settings


def get_config():
    """The current settings as a new dict."""
    return dict(_settings())


def set_config(**settings):
    """Change settings: ``backend``, ``strategy``, ``cost_model`` (path), ``verbose``."""
    for key, value in settings.items():
        if key not in _DEFAULTS:
            raise ValueError(f"Unknown setting {key!r}; known: {sorted(_DEFAULTS)}.")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise ValueError(f"{key} must be one of {_CHOICES[key]}, got {value!r}.")
    _settings().update(settings)


@contextmanager
def config_context(**settings):
    """Change settings within a ``with`` block only."""
    old = get_config()
    set_config(**settings)
    try:
        yield
    finally:
        _settings().clear()
        _settings().update(old)

"""Sphinx helpers of this site: the settings table and the gallery's order.

``.. ilargi-settings::`` renders every setting of :data:`sklearn_ilargi._config.OPTIONS`
with its default, what it accepts and what it does, so the settings page is generated from
the code and cannot drift from it.
"""

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from sklearn_ilargi import _config

#: What each kind of :class:`~sklearn_ilargi._config.Option` accepts, as its check says.
_ACCEPTS = {
    "int": "a non-negative integer",
    "count": "a positive integer",
    "float": "a non-negative number",
    "bytes": "a positive number of bytes or None",
    "path": "a path, ``'heuristic'`` or None",
    "verbosity": "a non-negative integer",
    "cache": "None, ``'memory'``, a folder (str or os.PathLike) or a ``joblib.Memory``",
}


def accepted_values(name, option):
    """What the setting ``name`` accepts, in words (reStructuredText)."""
    if option.kind == "choice":
        return "one of " + ", ".join(f"``{choice!r}``" for choice in option.choices)
    if option.kind not in _ACCEPTS:
        raise ExtensionError(
            f"The setting {name!r} is of kind {option.kind!r}, which the settings page cannot "
            "describe yet: add it to _ACCEPTS in doc/_ext/ilargi_sphinx.py.")
    return _ACCEPTS[option.kind]


def settings_table(options):
    """A ``list-table`` of ``options`` (name to :class:`~sklearn_ilargi._config.Option`).

    Returns
    -------
    list of str
        The lines of the table, in the order of ``options``.
    """
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 25 15 60",
        "",
        "   * - Setting",
        "     - Default",
        "     - What it does",
    ]
    for name, option in options.items():
        lines += [
            f"   * - ``{name}``",
            f"     - ``{option.default!r}``",
            f"     - {option.doc} Accepts {accepted_values(name, option)}.",
        ]
    return lines


class SettingsTable(SphinxDirective):
    """The directive ``ilargi-settings``: the table of every setting."""

    def run(self):
        self.env.note_dependency(_config.__file__)
        content = StringList(settings_table(_config.OPTIONS), source="sklearn_ilargi._config")
        holder = nodes.container()
        self.state.nested_parse(content, self.content_offset, holder)
        return holder.children


def skip_members_of_other_packages(app, what, name, obj, skip, options):
    """Leave out of the API pages the methods that scikit-learn defines.

    Its estimators' methods (``set_fit_request`` and the other metadata-routing methods,
    mixins' ``score``) come with docstrings that refer to scikit-learn's own documentation;
    scikit-learn documents them.
    """
    target = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    module = getattr(target, "__module__", None) if callable(target) else None
    if module and not module.startswith("sklearn_ilargi"):
        return True
    return None


class ExampleOrder:
    """The gallery's order: the quickstart first, then the other examples by file name."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        return (filename != "quickstart.py", filename)

    def __repr__(self):
        return f"<{type(self).__name__}>"


def setup(app):
    app.add_directive("ilargi-settings", SettingsTable)
    app.connect("autodoc-skip-member", skip_members_of_other_packages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

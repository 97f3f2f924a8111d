"""memplug: evaluate the long-term memory of LLM agents with pluggable datasets and agents.

The public API is re-exported here: :func:`evaluate`, :func:`read_run` and :func:`read_runs`
for running and reading evaluations from Python (docs/python-api.md); plugin authors need
only this module and :mod:`memplug.hookspecs` (for ``hookimpl``).
"""

#: typing's own constant without importing typing: `import memplug` runs as the `memplug`
#: command's first line, before its Ctrl-C handler exists, so it imports nothing (type
#: checkers treat any TYPE_CHECKING as true)
TYPE_CHECKING = False

if TYPE_CHECKING:
    __version__: str

    from memplug.api import Run, Runs, evaluate, read_run, read_runs
    from memplug.errors import DataError, MemplugError, MissingExtra
    from memplug.hookspecs import hookimpl
    from memplug.models import (
        AgentQuestion,
        Chunk,
        DatasetInfo,
        Message,
        Question,
        Recall,
        Recalled,
        Sample,
        StoredItem,
    )
    from memplug.options import Option
    from memplug.protocols import (
        AgentConfig,
        BuildOptions,
        DatasetBuilder,
        MemoryAgent,
        Metric,
        MetricConfig,
        Reader,
        ReaderConfig,
        ReferenceChannel,
        ScoreContext,
    )

#: where each re-exported name lives. Imported on first use (PEP 562), so that `import
#: memplug` costs nothing: the `memplug` command's first moments (when a Ctrl-C must
#: still end in one line, not a traceback) do not build attrs classes.
_EXPORTS = {
    "DataError": "memplug.errors",
    "MemplugError": "memplug.errors",
    "MissingExtra": "memplug.errors",
    "hookimpl": "memplug.hookspecs",
    "Option": "memplug.options",
    **dict.fromkeys(("Run", "Runs", "evaluate", "read_run", "read_runs"), "memplug.api"),
    **dict.fromkeys(
        ("AgentQuestion", "Chunk", "DatasetInfo", "Message", "Question", "Recall", "Recalled", "Sample", "StoredItem"),
        "memplug.models",
    ),
    **dict.fromkeys(
        (
            "AgentConfig",
            "BuildOptions",
            "DatasetBuilder",
            "MemoryAgent",
            "Metric",
            "MetricConfig",
            "Reader",
            "ReaderConfig",
            "ReferenceChannel",
            "ScoreContext",
        ),
        "memplug.protocols",
    ),
}


def __getattr__(name: str) -> object:
    if name == "__version__":
        # the installed distribution's, the one pip shows: pyproject.toml is its one source
        from importlib.metadata import version

        value: object = version("memplug")
    else:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'memplug' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AgentConfig",
    "AgentQuestion",
    "BuildOptions",
    "Chunk",
    "DataError",
    "DatasetBuilder",
    "DatasetInfo",
    "MemoryAgent",
    "MemplugError",
    "Message",
    "Metric",
    "MetricConfig",
    "MissingExtra",
    "Option",
    "Question",
    "Reader",
    "ReaderConfig",
    "Recall",
    "Recalled",
    "ReferenceChannel",
    "Run",
    "Runs",
    "Sample",
    "ScoreContext",
    "StoredItem",
    "evaluate",
    "hookimpl",
    "read_run",
    "read_runs",
    "__version__",
]

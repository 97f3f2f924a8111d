"""memplug: evaluate the long-term memory of LLM agents with pluggable datasets and agents.

The public API is re-exported here; plugin authors need only this module and
:mod:`memplug.hookspecs` (for ``hookimpl``).
"""

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

__version__ = "0.1.0"

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
    "Sample",
    "ScoreContext",
    "hookimpl",
    "__version__",
]

"""Rows of a MemoryAgentBench parquet release file, shared by the ``mab`` loader and
FactConsolidation's release (one of MemoryAgentBench's sources)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from memplug.errors import DataError


def parquet_rows(path: Path, source: str | None, only_meta: bool = False) -> Iterator[dict[str, Any]]:
    """The rows of a parquet file, only ``source``'s unless it is None, read batch by batch so
    that a split of 1.5M-token contexts is never held whole; ``only_meta``: the metadata
    column alone is read, each row a ``{"metadata": {"source": ...}}``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:
        raise DataError(path, f"not a readable parquet file: {exc}") from None
    names = set(parquet.schema_arrow.names)
    missing = [c for c in ("context", "questions", "answers", "metadata") if c not in names]
    if missing:
        raise DataError(path, f"missing column(s) {', '.join(missing)}; this is not a MemoryAgentBench release file")
    meta_type = parquet.schema_arrow.field("metadata").type
    if not pa.types.is_struct(meta_type) or meta_type.get_field_index("source") < 0:
        raise DataError(path, f"column metadata must be a struct with a source field, not {meta_type}")
    for batch in parquet.iter_batches(batch_size=8, columns=["metadata"] if only_meta else None):
        # metadata.source decides; only the kept rows become Python objects (LongMemEval's
        # haystack_sessions and the contexts of the other sources are never converted)
        metadata = batch.column("metadata")
        for i, name in enumerate(metadata.field("source").to_pylist()):
            if source is None or name == source:
                yield {"metadata": {"source": name}} if only_meta else batch.slice(i, 1).to_pylist()[0]

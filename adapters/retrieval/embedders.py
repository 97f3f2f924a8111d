"""Text embedders behind one small interface, all returning L2-normalised float32 rows.

Names: ``wordllama`` (the offline default, weights ship in its wheel),
``litellm:<model>`` (API embeddings through :class:`memplug.llm.LLM`) and
``st:<model>`` (sentence-transformers, when installed, from a model already on disk).
Instances are cached per process because loading a model is not free.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence, cast

import numpy as np

from memplug.errors import MemplugError, MissingExtra

if TYPE_CHECKING:
    from memplug.llm import LLM

#: the WordLlama configuration whose weights the wordllama wheel ships
WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows of ``dim`` columns."""

    name: str

    @property
    def dim(self) -> int: ...  # read-only: an API embedder probes it on first use

    def embed(self, texts: list[str]) -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return cast(np.ndarray, vectors / np.maximum(norms, 1e-12))


def cache_dir() -> Path:
    """memplug's cache folder: $MEMPLUG_CACHE, else ~/.cache/memplug."""
    root = os.environ.get("MEMPLUG_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "memplug"


class WordLlamaEmbedder:
    """WordLlama l2_supercat (256 dimensions), loaded with downloads disabled.

    The wheel ships the weights and the tokenizer file, but WordLlama looks for the
    tokenizer in ``<package>/tokenizer/`` while the wheel installs it in
    ``<package>/tokenizers/``; it then falls back to ``<cache>/tokenizers/`` and
    finally to a download. We copy the shipped file into memplug's cache folder, point
    WordLlama there and disable downloads, so loading never touches the network.
    """

    name = "wordllama"
    dim = WORDLLAMA_DIM

    def __init__(self) -> None:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as exc:  # a core dependency, but say what to do if it is gone
            raise MissingExtra("the wordllama embedder needs `pip install wordllama`") from exc
        package = Path(wordllama.__file__).parent
        model_uri = getattr(WordLlama._wordllama, WORDLLAMA_CONFIG)
        shipped = package / "tokenizers" / model_uri.tokenizer_config
        cache = cache_dir() / "wordllama"
        target = cache / "tokenizers" / shipped.name
        if not target.exists():
            if not shipped.exists():
                raise MemplugError(f"wordllama tokenizer not found at {shipped}; reinstall wordllama")
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(shipped, tmp)
            tmp.replace(target)  # atomic, so parallel runs never read half a file
        try:
            self._model = WordLlama.load(
                config=WORDLLAMA_CONFIG, dim=WORDLLAMA_DIM, cache_dir=cache, disable_download=True
            )
        except FileNotFoundError as exc:
            raise MemplugError(f"cannot load wordllama offline: {exc}") from exc
        from memplug.adapters.retrieval.static_pool import StaticPooler

        # WordLlama's embed() without its padding: the same rows, ~4x less CPU (static_pool.py)
        self._pooler = StaticPooler(self._model.embedding, self._model.tokenizer)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(self._pooler.embed(list(texts)))


class LiteLLMEmbedder:
    """API embeddings through the run's LLM layer (cache, retries, accounting)."""

    def __init__(self, model: str, llm: "LLM | None") -> None:
        from memplug.llm import LLM

        if llm is None:
            self._llm = LLM(model)
        else:
            # the run's endpoint and key, with the embedding model asked for
            self._llm = LLM(model, api_base=llm.api_base, api_key=llm.api_key)
        self.name = f"litellm:{model}"
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        vectors = normalise(np.asarray(self._llm.embed(list(texts)), dtype=np.float32))
        self._dim = int(vectors.shape[1])
        return vectors


class SentenceTransformerEmbedder:
    """sentence-transformers from a local model; downloads are switched off."""

    def __init__(self, model: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtra("the st: embedders need `pip install sentence-transformers`") from exc
        try:
            self._model = SentenceTransformer(model, local_files_only=True)
        except Exception as exc:  # the library raises several kinds for a missing model
            raise MemplugError(f"sentence-transformers model {model!r} is not available locally: {exc}") from exc
        self.name = f"st:{model}"
        self.dim = int(self._model.get_sentence_embedding_dimension())

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(self._model.encode(list(texts), convert_to_numpy=True, show_progress_bar=False))


_CACHE: dict[tuple[str, int | None], Embedder] = {}
_LOCK = threading.Lock()


def is_remote(name: str) -> bool:
    """True for embedders that wait on the network (an agent using one blocks)."""
    return name.startswith("litellm:")


def get_embedder(name: str, llm: "LLM | None" = None) -> Embedder:
    """The embedder called ``name``, built once per process (per LLM for API embedders)."""
    kind, _, model = name.partition(":")
    key = (name, id(llm) if kind == "litellm" else None)
    with _LOCK:
        if key not in _CACHE:
            if name == "wordllama":
                _CACHE[key] = WordLlamaEmbedder()
            elif kind == "litellm" and model:
                _CACHE[key] = LiteLLMEmbedder(model, llm)
            elif kind == "st" and model:
                _CACHE[key] = SentenceTransformerEmbedder(model)
            else:
                raise MemplugError(f"unknown embedder {name!r}; use wordllama, litellm:<model> or st:<model>")
        return _CACHE[key]


def embed_batched(embedder: Embedder, texts: Sequence[str], batch: int = 4096) -> np.ndarray:
    """Embed many texts in batches (bounded memory for API calls and big histories)."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.concatenate([embedder.embed(list(texts[i : i + batch])) for i in range(0, len(texts), batch)])

"""Token counting with tiktoken's cl100k_base, loaded offline from the copy litellm ships.

tiktoken downloads encodings into TIKTOKEN_CACHE_DIR on first use; litellm ships that
cache for cl100k_base inside its wheel. We point tiktoken at it (located without
importing litellm, which is slow to import) so nothing is downloaded at run time.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from memplug.errors import MemplugError


def litellm_dir() -> Path | None:
    """litellm's package folder, found without importing litellm; None when it is not installed."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def litellm_tokenizer_dir() -> Path:
    """The tiktoken cache folder inside litellm's package."""
    root = litellm_dir()
    if root is None:
        raise MemplugError("litellm is not installed; it ships the offline tokenizer memplug uses")
    return root / "litellm_core_utils" / "tokenizers"


def use_offline_tiktoken() -> None:
    """Point tiktoken at litellm's bundled cache (unless the user set one)."""
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(litellm_tokenizer_dir()))


@functools.cache
def encoding():
    """tiktoken's cl100k_base, loaded once from litellm's offline copy (never downloaded)."""
    use_offline_tiktoken()
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception as exc:  # a download attempt means the offline copy was not found
        raise MemplugError(
            f"cannot load tiktoken cl100k_base offline from {os.environ['TIKTOKEN_CACHE_DIR']}: {exc}"
        ) from exc


def count_tokens(text: str) -> int:
    """cl100k_base tokens in ``text``; special-token text ("<|endoftext|>") counts as plain text."""
    return len(encoding().encode(text, disallowed_special=()))

"""The languages of memsim's trajectories by code, for the generator, the validator and the loader."""

from __future__ import annotations

from . import lang_en, lang_zh
from .language import Language

LANGUAGES: dict[str, Language] = {"en": lang_en.LANGUAGE, "zh": lang_zh.LANGUAGE}

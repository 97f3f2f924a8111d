"""Semantic or episodic: PerLTQA's memory classification (seed 001, Eq. 1).

PerLTQA classifies with a fine-tuned BERT or an instructed LLM; neither is available
offline here, so this is a transparent cue-word classifier over English and Chinese.
Semantic memory is profiles and relationships (what someone *is*); episodic memory is
events and dialogues (what *happened*, usually dated). A message whose metadata
already carries its type (``meta["memory_type"]``, as PerLTQA's release does) is
taken at its word.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

SEMANTIC = "semantic"
EPISODIC = "episodic"

_META_TYPES = {
    "semantic": SEMANTIC,
    "profile": SEMANTIC,
    "relationship": SEMANTIC,
    "relation": SEMANTIC,
    "episodic": EPISODIC,
    "event": EPISODIC,
    "events": EPISODIC,
    "dialogue": EPISODIC,
    "dialog": EPISODIC,
}

_EPISODIC_CUES = re.compile(
    r"\b(yesterday|today|tomorrow|last (?:week|month|year|night)|ago|when did|what happened|happened|"
    r"went|met|visited|attended|organi[sz]ed|trip|party|event|remember|during|once|"
    r"january|february|march|april|may|june|july|august|september|october|november|december)\b"
    r"|\d{4}-\d{2}-\d{2}|\d{4}年|\d{1,2}月\d{1,2}日|昨天|今天|明天|上周|上个月|去年|那天|那次|时候|当时|曾经|"
    r"发生|参加|举办|组织|旅行|见面|经历|活动|一起|记得|对话|聊天",
    re.IGNORECASE,
)
_SEMANTIC_CUES = re.compile(
    r"\b(is|are|works? as|job|occupation|profession|age|years old|born|lives?|brother|sister|"
    r"father|mother|friend|colleague|wife|husband|likes?|favou?rite|name|personality|hobby|education)\b"
    r"|职业|工作|年龄|岁|生日|关系|朋友|同事|喜欢|爱好|性格|名字|叫|住在|家乡|老家|学历|身高|是谁|是什么",
    re.IGNORECASE,
)


def meta_type(meta: Mapping[str, Any]) -> str | None:
    value = meta.get("memory_type") or meta.get("type")
    return _META_TYPES.get(str(value).lower()) if value else None


def episodic_probability(text: str, meta: Mapping[str, Any] | None = None) -> float:
    """P(episodic | text): a logistic of the difference in cue counts (1.0/0.0 from metadata)."""
    known = meta_type(meta or {})
    if known is not None:
        return 1.0 if known == EPISODIC else 0.0
    diff = len(_EPISODIC_CUES.findall(text)) - len(_SEMANTIC_CUES.findall(text))
    return 1.0 / (1.0 + math.exp(-diff))


def classify(text: str, meta: Mapping[str, Any] | None = None) -> tuple[str, float]:
    """(type, confidence in that type); ties go to semantic."""
    p = episodic_probability(text, meta)
    return (EPISODIC, p) if p > 0.5 else (SEMANTIC, 1.0 - p)

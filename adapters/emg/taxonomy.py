"""The memory type layer and memory subclass layer of the EMG (seed 004, Appendix A.2).

Four types, each with the subclasses of the seed's Table 8, form the tree that
partitions memories. The seed assigns a memory to the nearest subclass by embedding;
offline we score each subclass by cue words (English and Chinese) found in the
memory's subject and relation, which keeps both versions of a changed fact in one
partition (the value, which changes, is not looked at). Memories with no cue go to
``Attribute/other``.
"""

from __future__ import annotations

import re

# (type, subclass): cue words; matched at word starts in English, anywhere in Chinese
TAXONOMY: dict[tuple[str, str], tuple[str, ...]] = {
    ("Relationship", "spouse"): ("married", "spouse", "wife", "husband", "配偶", "老婆", "老公", "妻子", "丈夫"),
    ("Relationship", "parents/children"): (
        "child",
        "son",
        "daughter",
        "father",
        "mother",
        "parent",
        "爸爸",
        "妈妈",
        "父亲",
        "母亲",
        "儿子",
        "女儿",
    ),
    ("Relationship", "relatives"): (
        "brother",
        "sister",
        "cousin",
        "uncle",
        "aunt",
        "relative",
        "表哥",
        "表姐",
        "表弟",
        "表妹",
        "叔叔",
        "婶婶",
        "舅舅",
        "舅妈",
        "姑姑",
        "哥哥",
        "姐姐",
    ),
    ("Relationship", "colleague/friends"): (
        "colleague",
        "friend",
        "boss",
        "employ",
        "member",
        "represent",
        "owned",
        "同事",
        "朋友",
        "上司",
        "下属",
        "领导",
    ),
    ("Relationship", "teacher/student"): ("teacher", "student", "mentor", "老师", "学生", "导师"),
    ("Preference", "diet"): ("food", "eat", "dish", "drink", "吃", "菜", "喝"),
    ("Preference", "cultural"): (
        "museum",
        "travel",
        "religion",
        "culture",
        "music",
        "famous",
        "旅游",
        "博物馆",
        "宗教",
        "音乐",
    ),
    ("Preference", "car"): ("car", "vehicle", "produced", "汽车", "车"),
    ("Preference", "sports"): ("sport", "position", "team", "plays", "运动", "球"),
    ("Preference", "gaming"): ("game", "developed", "游戏"),
    ("Preference", "audio-visual"): ("movie", "film", "song", "show", "performed", "broadcast", "电影", "歌", "电视剧"),
    ("Event", "life events"): (
        "born",
        "died",
        "educated",
        "founded",
        "created",
        "wedding",
        "出生",
        "去世",
        "结婚",
        "毕业",
    ),
    ("Event", "arrangement"): (
        "flight",
        "hotel",
        "meeting",
        "trip",
        "book",
        "schedule",
        "航班",
        "酒店",
        "会议",
        "预订",
    ),
    ("Event", "anniversary"): ("anniversary", "纪念日"),
    ("Attribute", "name"): ("name", "nickname", "called", "名字", "叫", "姓名"),
    ("Attribute", "birthday/age"): ("birthday", "age", "years old", "生日", "岁", "年龄"),
    ("Attribute", "gender"): ("gender", "male", "female", "性别"),
    ("Attribute", "education"): (
        "education",
        "degree",
        "university",
        "univeristy",
        "college",
        "学历",
        "大学",
        "博士",
        "硕士",
    ),
    ("Attribute", "belongings/pets"): ("own", "pet", "dog", "cat", "宠物", "狗", "猫"),
    ("Attribute", "address"): (
        "live",
        "located",
        "address",
        "city",
        "country",
        "capital",
        "citizen",
        "headquarters",
        "住",
        "地址",
        "老家",
        "家乡",
        "城市",
        "工作地",
    ),
    ("Attribute", "occupation"): (
        "work",
        "job",
        "occupation",
        "director",
        "chief",
        "head",
        "chairperson",
        "author",
        "field",
        "language",
        "speaks",
        "职业",
        "工作",
        "职位",
        "单位",
    ),
}
FALLBACK = ("Attribute", "other")
TYPES = ("Relationship", "Preference", "Event", "Attribute")

_CUE_OWNER = {cue: part for part, cues in TAXONOMY.items() for cue in cues}
_EN_LENGTHS = sorted({len(c) for c in _CUE_OWNER if c.isascii() and " " not in c})
_EN_PHRASES = [c for c in _CUE_OWNER if " " in c]
_ZH_CUES = [c for c in _CUE_OWNER if not c.isascii()]
_WORD = re.compile(r"[a-z]+")
_CJK = re.compile(r"[\u3400-\u9fff]")


#: word -> the English cues it starts with (a history repeats its words: each is looked up once)
_WORD_CUES: dict[str, tuple[str, ...]] = {}


def _word_cues(word: str) -> tuple[str, ...]:
    """The cues ``word`` starts with, kept in :data:`_WORD_CUES` (which :func:`_cues` reads first)."""
    cues = tuple(word[:n] for n in _EN_LENGTHS if n <= len(word) and word[:n] in _CUE_OWNER)
    if len(_WORD_CUES) >= 1_000_000:
        _WORD_CUES.clear()
    _WORD_CUES[word] = cues
    return cues


def _cues(text: str) -> set[str]:
    """Cues in ``text``: English ones as word prefixes, Chinese ones as substrings.

    Word prefixes are looked up in a dict (a few lengths per word, once per distinct
    word) rather than with one big regular expression, which is several times slower on
    short memories.
    """
    lowered = text.lower()
    found = {c for c in _EN_PHRASES if c in lowered}
    for word in _WORD.findall(lowered):
        cues = _WORD_CUES.get(word)
        if cues is None:
            cues = _word_cues(word)
        if cues:
            found.update(cues)
    if _CJK.search(text):
        found.update(c for c in _ZH_CUES if c in text)
    return found


_ORDER = {part: i for i, part in enumerate(TAXONOMY)}


def partition_of(text: str) -> tuple[str, str]:
    """The (type, subclass) whose cues best match ``text`` (subject and relation)."""
    hits: dict[tuple[str, str], int] = {}
    for cue in _cues(text):
        part = _CUE_OWNER[cue]
        hits[part] = hits.get(part, 0) + 1
    if not hits:
        return FALLBACK
    # most cues wins; ties go to the subclass listed first in the taxonomy
    return max(hits, key=lambda part: (hits[part], -_ORDER[part]))

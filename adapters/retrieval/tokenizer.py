"""One tokenizer for English and Chinese, so that BM25 works on every dataset.

English text is split into lower-cased words and numbers, minus bm25s's English stop
words. Chinese has no spaces; a word segmenter (jieba) would add a dependency and a
dictionary, so each run of CJK characters is indexed as character unigrams and
bigrams instead, the standard segmentation-free scheme for Chinese retrieval: unigrams
keep recall for one-character words, bigrams restore most of the precision of words.
"""

from __future__ import annotations

import functools
import re

#: CJK unified ideographs (with extension A) and the compatibility block
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_IS_CJK = re.compile(rf"[{_CJK}]")


@functools.cache
def _stop_en() -> frozenset[str]:
    """bm25s's English stop words, read at the first text: importing bm25s (numpy, tqdm, its
    BEIR helpers) at import cost `memplug list`, which reads the agents' options, 25 ms."""
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Words for Latin-script text, character unigrams and bigrams for Chinese runs."""
    lowered = text.lower()
    stop = _stop_en()
    if _IS_CJK.search(lowered) is None:  # no Chinese: one findall, the common case at scale
        return [run for run in _TOKEN.findall(lowered) if run not in stop]
    tokens: list[str] = []
    for match in _TOKEN.finditer(lowered):
        run = match.group()
        if _IS_CJK.match(run):
            tokens.extend(run)
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif run not in stop:
            tokens.append(run)
    return tokens


def has_cjk(text: str) -> bool:
    return _IS_CJK.search(text) is not None

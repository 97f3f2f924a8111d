"""PerLTQA's answer protocol: memplug's own, because no official evaluation code exists.

The official repository (github Elvin-Yiming-Du/PerLTQA at
5a9b11783cc75068896ce5181ae5cf1d4fb4207a, the newest commit, April 2025) holds the data
(``Dataset/en``, ``Dataset/zh``), a reader for it (``Dataset/dataset.py``: ``PerLTMem``,
``PerLTQA``) and one retriever (``memory_retrieval/tools/retriever.py``: BM25Okapi over
jieba tokens, DPR or RocketQA, the query's line breaks turned into spaces and the
"用户: "/"系统: " prefixes dropped). It has no answer prompt, no reply parsing, no memory
classification and no metric code (neither the paper's MAP of memory anchors nor its
GPT-4 correctness/coherence judge), and no retrieval depth for answering.

So memplug's protocol is named ``perltqa-memplug`` and recorded as not official:

- **prompt** -- the paper's App. A.5, Figure 8 "Answer Generation Prompt" (arXiv
  2402.16288), ``[memories]`` and ``[question]`` filled in; the Chinese text is memplug's
  rendering of it (the paper prints only the English one);
- **memory** -- each recalled memory item on one line, numbered ``1. `` (memplug's);
- **parsing** -- the reply stripped, nothing else (memplug's);
- **memory unit** -- one memory item (profile field, relationship, event, dialogue) per
  message, fed in chunks of ``--chunk-size`` (default 512);
- **depth** -- memplug's ``--top-k`` (default 5); the paper reports retrieval at several K;
- **metrics** -- memplug's ``f1``, ``rouge_l``, ``anchor_map`` (the paper's Eq. 5, from
  its text), ``recall@K``, ``memory_type``, ``judge_coherence``; see docs/metrics.md.

These are the templates and rendering memplug used before protocols existed, so runs
from before and after compare.
"""

from __future__ import annotations

from memplug.answering import AnswerProtocol

REPOSITORY = "github Elvin-Yiming-Du/PerLTQA @ 5a9b117"

#: PerLTQA App. A.5, Figure 8 ("Answer Generation Prompt"); [memories] and [question]
#: become {memory} and {question}.
ANSWER_PROMPT_EN = (
    "Please answer the following question based on the provided memory information, ignoring any irrelevant "
    "memories. Keep the response under fifty words.\n\n"
    "Memory Information: {memory}\nQuestion: {question}\nAnswer:"
)
#: memplug's Chinese rendering of the same prompt (the paper prints only the English one)
ANSWER_PROMPT_ZH = (
    "请根据提供的记忆信息回答下面的问题，忽略无关的记忆。回答不超过五十个字。\n\n"
    "记忆信息：{memory}\n问题：{question}\n回答："
)
SOURCE = "PerLTQA (arXiv 2402.16288, seed 001), App. A.5, Figure 8: Answer Generation Prompt"
SOURCE_ZH = SOURCE + " (Chinese rendering by memplug)"
#: what run.json's protocol source says beside the prompt's origin
NO_CODE = f"; no official evaluation code ({REPOSITORY} has data, a data reader and retriever.py only)"


def protocol(language: str) -> AnswerProtocol:
    """memplug's PerLTQA protocol in ``language`` ("en" or "zh")."""
    zh = language == "zh"
    return AnswerProtocol(
        name="perltqa-memplug",
        version="1",
        source=(SOURCE_ZH if zh else SOURCE) + NO_CODE,
        user=ANSWER_PROMPT_ZH if zh else ANSWER_PROMPT_EN,
        memory_item="{n}. {text}",
        memory_start=1,
        memory_join="\n",
        one_line_items=True,
        parse="strip",
        choices="lenient",
        unit=None,
        chunk_size=None,
        top_k=None,
        official=False,
    )

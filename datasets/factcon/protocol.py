"""MemoryAgentBench's protocol for FactConsolidation: its RAG agents' memory, prompt and scoring.

Copied from github HUST-AI-HYZ/MemoryAgentBench at 455306dcabc3842526eb83cd4e225e5d486c5c5d:

- **memory unit** -- ``conversation_creator.py`` ``get_chunks`` cuts each context with
  ``utils/eval_other_utils.py`` ``chunk_text_into_sentences``: nltk's ``sent_tokenize``
  (punkt), sentences packed while their tiktoken counts (the gpt-4o-mini encoding,
  o200k_base) stay within ``chunk_size``, joined by a space. The chunk size is the
  dataset config's ``chunk_size`` (``configs/data_conf/Conflict_Resolution/*.yaml``:
  4096) or the ``--chunk_size_ablation`` of ``bash_files/configs/rag_agents_chunksize.txt``
  (512, the value the paper's Table 15 gives for FactCon-SH/MH, and memplug's default).
  ``agent.py`` ``_handle_rag_agent`` stores each chunk inside the ``memorize`` template of
  ``utils/templates.py``; its ``{time_stamp}`` is the wall clock at memorisation, here a
  fixed :data:`TIME_STAMP` so that two runs build the same memories;
- **prompt** -- ``agent.py`` ``_handle_bm25_rag``: the system message ``SYSTEM_MESSAGE``;
  the user message is the retrieved chunks, each ``"Memory {i+1}:\\n{chunk}\\n"``, joined by
  ``"\\n"``, then ``"\\n"`` and the ``factconsolidation`` ``rag_agent`` query template
  (``format_chat`` in ``utils/eval_data_utils.py`` puts them in that order);
- **depth** -- ``retrieve_num: 10`` in every RAG agent config
  (``configs/agent_conf/RAG_Agents/gpt-4o-mini/*.yaml``);
- **parsing** -- ``utils/eval_other_utils.py`` ``parse_output``: the text after the first
  "Answer:" on its line, else the first line, stripped. (``default_post_process`` scores
  both the raw output and the parsed one and keeps the better score of each metric;
  memplug scores the parsed one: see docs/datasets/factcon.md.)

Deviations are dataset options, recorded in run.json through :meth:`AnswerProtocol.vary`:
``-o unit=fact`` (one fact per memory), ``-o prompt=paper`` (the paper's Figure 5 wording),
``-o parse=plain`` (the reply as it is), ``-o wrap=false`` (chunks without the memorize
template).
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from memplug.answering import AnswerProtocol, register_parser
from memplug.errors import MemplugError
from memplug.options import Option

COMMIT = "455306dcabc3842526eb83cd4e225e5d486c5c5d"
SOURCE = (
    f"github HUST-AI-HYZ/MemoryAgentBench @ {COMMIT[:7]}: utils/templates.py 'factconsolidation' "
    "(system, memorize, query rag_agent), agent.py _handle_bm25_rag, "
    "utils/eval_other_utils.py chunk_text_into_sentences and parse_output, RAG configs retrieve_num: 10"
)

# utils/templates.py @ 455306d, verbatim
SYSTEM_MESSAGE = "You are a helpful assistant that can read the context and memorize it for future retrieval."
MEMORIZE_TEMPLATE = (
    "Dialogue between User and Assistant {time_stamp} \\n<User> The following context is the facts "
    "I have learned: \n{context}\n <Assistant> I have learned the facts and I will answer the question "
    "you ask."
)
QUERY_TEMPLATE = (
    "Pretend you are a knowledge management system. Each fact in the knowledge pool is provided with a serial "
    "number at the beginning, and the newer fact has larger serial number. \n You need to solve the conflicts of "
    "facts in the knowledge pool by finding the newest fact with larger serial number. You need to answer a "
    "question based on this rule. You should give a very concise answer without saying other words for the "
    "question **only** from the knowledge pool you have memorized rather than the real facts in real world. \n\n"
    "For example:\n\n [Knowledge Pool] \n\n Question: Based on the provided Knowledge Pool, what is the name of the "
    "current president of Russia? \nAnswer: Donald Trump \n\n Now Answer the Question: Based on the provided "
    "Knowledge Pool, {question} \nAnswer:"
)
#: agent.py _handle_bm25_rag: ``retrieval_memory_string + "\n" + message``
USER_TEMPLATE = "{memory}\n" + QUERY_TEMPLATE

#: the memorize template's {time_stamp}: the official code writes the wall clock
#: (time.strftime("%Y-%m-%d %H:%M:%S")) at memorisation; memplug a fixed time, the day
#: MemoryAgentBench appeared (arXiv 2507.05257), so the memories of two runs are the same
TIME_STAMP = "2025-07-07 00:00:00"

#: chunk_size of rag_agents_chunksize.txt for FactConsolidation and of the paper's Table 15
CHUNK_SIZE = 512
#: retrieve_num of every RAG agent config
TOP_K = 10

#: MemoryAgentBench (seed 002) App. B, Figure 5, the Fact Consolidation prompt of its
#: long-context agents; <memory> and <question> become {memory} and {question}, and its
#: "\n" markers line breaks (memplug's prompt before it followed the code: ``-o prompt=paper``)
PAPER_PROMPT = (
    "Here is a knowledge pool with lots of new facts: {memory}.\n"
    "Please memorize it.\n"
    "Pretend you are a knowledge management system. Each fact in the knowledge pool is provided with "
    "a serial number at the beginning, and the newer fact has larger serial number.\n"
    "You need to solve the conflicts of facts in the knowledge pool by finding the newest fact. "
    "You need to answer a question based on this rule. You should give a very concise answer without "
    "saying other words for the question **only** from the knowledge pool you have memorized rather "
    "than the real facts in real world.\n"
    "For example:\n"
    "[Knowledge Pool]\n"
    "Question: Based on the provided Knowledge Pool, what is the name of the current president of Country R?\n"
    "Answer: Person D.\n"
    "Now Answer the Question: Based on the provided Knowledge Pool, {question}\n"
    "Answer:"
)
PAPER_SOURCE = "MemoryAgentBench (arXiv 2507.05257, seed 002), App. B, Figure 5: Fact Consolidation"


def parse_output(output_text: str, answer_prefix: str = "Answer:") -> str:
    """``utils/eval_other_utils.py`` ``parse_output`` @ 455306d: the rest of the line after
    the first "Answer:" (any case), else the first line; stripped, a repeated prefix removed.
    (The official function can return None; its second pattern matches every string, so it never does.)"""
    extraction_patterns = [
        re.compile(f"(?:{answer_prefix})(.*)(?:\n|$)", flags=re.IGNORECASE),
        re.compile(r"(?:^)(.*)(?:\n|$)"),
    ]
    for pattern in extraction_patterns:
        match = pattern.search(output_text)
        if match:
            extracted_text = match[1].strip()
            return re.sub(f"^{re.escape(answer_prefix)}", "", extracted_text, flags=re.IGNORECASE).strip()
    return output_text.strip()  # unreachable: the second pattern matches any string


register_parser("memoryagentbench", parse_output)

PROTOCOL = AnswerProtocol(
    name="memoryagentbench-factconsolidation",
    version="1",
    source=SOURCE,
    system=SYSTEM_MESSAGE,
    user=USER_TEMPLATE,
    memory_item="Memory {n}:\n{text}\n",
    memory_start=1,
    memory_join="\n",
    parse="memoryagentbench",
    choices="lenient",
    # default_post_process scores the raw reply and its parsed line, and keeps the better
    score_raw_too=True,
    # each official chunk is one message of the sample, fed whole
    unit="message",
    chunk_size=CHUNK_SIZE,
    top_k=TOP_K,
)

#: the dataset options that choose the protocol (the builder's other options are the generator's)
OPTIONS = (
    Option(
        "unit",
        str,
        "chunk",
        "memory unit: chunk (MemoryAgentBench's: the context cut into sentence-aligned "
        "chunks of -o chunk tokens, each one memory) or fact (one numbered fact per memory)",
        choices=("chunk", "fact"),
    ),
    Option(
        "chunk",
        int,
        CHUNK_SIZE,
        "tokens per chunk (o200k_base, as chunk_text_into_sentences counts): 512 as "
        "rag_agents_chunksize.txt and the paper's Table 15; 4096 as the Factconsolidation_*.yaml configs",
        low=16,
        high=1_000_000,
    ),
    Option("wrap", bool, True, "store each chunk inside MemoryAgentBench's memorize template (its RAG agents do)"),
    Option(
        "prompt",
        str,
        "code",
        "code: MemoryAgentBench's system message and rag_agent query template; paper: "
        "the Figure 5 wording, no system message, memories numbered '1. '",
        choices=("code", "paper"),
    ),
    Option(
        "parse",
        str,
        "official",
        "official: parse_output (the text after 'Answer:', else the first line); plain: the reply stripped",
        choices=("official", "plain"),
    ),
)


def protocol(values: Mapping[str, Any]) -> AnswerProtocol:
    """MemoryAgentBench's protocol with the deviations ``values`` ask for."""
    out = PROTOCOL
    chunk = values.get("chunk") or CHUNK_SIZE
    if chunk != CHUNK_SIZE:
        out = out.vary(f"chunk={chunk}", chunk_size=chunk)
    if values.get("unit") == "fact":
        out = out.vary("unit=fact", chunk_size=None)
    elif values.get("wrap") is False:
        out = out.vary("wrap=false")
    if values.get("prompt") == "paper":
        out = out.vary(
            "prompt=paper",
            system=None,
            user=PAPER_PROMPT,
            memory_item="{n}. {text}",
            memory_join="\n",
            one_line_items=True,
            source=f"{out.source}; prompt: {PAPER_SOURCE}",
        )
    if values.get("parse") == "plain":
        out = out.vary("parse=plain", parse="strip")
    return out


# --- the official chunker ---------------------------------------------------------------


#: the nltk data folder memplug ships: nltk's English punkt_tab model (MIT; nltk_data/README.md)
NLTK_DATA = Path(__file__).parent / "nltk_data"


@functools.cache
def sentence_splitter() -> Any:
    """nltk's English punkt (punkt_tab), which ``nltk.sent_tokenize`` uses, loaded from the copy
    memplug ships (:data:`NLTK_DATA`): offline, and the same model whatever nltk data the machine has."""
    import nltk
    from nltk.tokenize.punkt import PunktSentenceTokenizer, load_punkt_params

    root = str(NLTK_DATA)
    # nltk reads data files only under the folders of its data path
    if root not in nltk.data.path:
        nltk.data.path.append(root)
    model = nltk.data.find("tokenizers/punkt_tab/english/", paths=[root])
    # what nltk's PunktTokenizer("english") does, on this folder only
    return PunktSentenceTokenizer(load_punkt_params(model))


@functools.cache
def chunk_encoding() -> Any:
    """tiktoken's encoding for gpt-4o-mini (o200k_base), the official chunker's, loaded offline."""
    from memplug.tokens import use_offline_tiktoken

    use_offline_tiktoken()
    import tiktoken

    try:
        return tiktoken.get_encoding("o200k_base")
    except Exception as exc:
        raise MemplugError(f"cannot load tiktoken o200k_base offline: {exc}") from exc


_UNTIMED = threading.Lock()
_untimed_users = 0
#: nltk's limit while lifted
_saved_timeout: list[Any] = []


@contextlib.contextmanager
def _punkt_untimed() -> Iterator[None]:
    """nltk >= 3.10 runs each of punkt's regular expressions under a 5 s wall-clock limit
    (``nltk.redos.DEFAULT_TIMEOUT``), and one pass over a MemoryAgentBench context of 1.5M
    tokens (6 MB) takes longer on a busy machine; punkt's own patterns are trusted, so the
    limit is lifted while any sentence split runs, and put back after the last one."""
    global _untimed_users
    try:
        from nltk import redos
    except ImportError:  # nltk < 3.10: no limit to lift
        yield
        return
    with _UNTIMED:
        if _untimed_users == 0:
            _saved_timeout.append(redos.DEFAULT_TIMEOUT)
            redos.DEFAULT_TIMEOUT = None
        _untimed_users += 1
    try:
        yield
    finally:
        with _UNTIMED:
            _untimed_users -= 1
            if _untimed_users == 0:
                redos.DEFAULT_TIMEOUT = _saved_timeout.pop()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, as ``nltk.sent_tokenize`` cuts it."""
    splitter = sentence_splitter()
    with _punkt_untimed():
        return list(splitter.span_tokenize(text))


def pack_sentences(sentences: Sequence[str], chunk_size: int) -> list[list[int]]:
    """Indices of the sentences of each chunk: ``chunk_text_into_sentences``'s loop @ 455306d
    (a chunk ends when the next sentence would take it past ``chunk_size`` tokens; a first
    sentence that alone is too long leaves an empty first chunk, as there)."""
    encoding = chunk_encoding()
    chunks: list[list[int]] = []
    current: list[int] = []
    count = 0
    for i, sentence in enumerate(sentences):
        n = len(encoding.encode(sentence, allowed_special={"<|endoftext|>"}))
        if count + n > chunk_size:
            chunks.append(current)
            current, count = [i], n
        else:
            current.append(i)
            count += n
    if current:
        chunks.append(current)
    return chunks


def chunk_text_into_sentences(text: str, chunk_size: int) -> list[str]:
    """The official chunks of ``text``: sentences packed by :func:`pack_sentences`, joined by a space."""
    spans = sentence_spans(text)
    sentences = [text[a:b] for a, b in spans]
    return [" ".join(sentences[i] for i in chunk) for chunk in pack_sentences(sentences, chunk_size)]


def memorize(chunk: str) -> str:
    """A chunk as the official RAG agents store it: inside the memorize template, at :data:`TIME_STAMP`."""
    return MEMORIZE_TEMPLATE.format(context=chunk, time_stamp=TIME_STAMP)

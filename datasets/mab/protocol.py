"""MemoryAgentBench's protocol per source: memories, prompt, reply parsing and depth.

From github HUST-AI-HYZ/MemoryAgentBench @ 455306d (the two removed sources @ 9a5dd95):

- **memories** -- ``conversation_creator.py`` ``get_chunks``: the row's context cut by
  ``chunk_text_into_sentences`` (punkt sentences packed within ``chunk_size`` o200k tokens;
  the data config's 4096, or the 512 of the RAG chunk-size ablation), each chunk stored by
  ``agent.py`` ``_handle_rag_agent`` inside the family's ``memorize`` template (its
  ``{time_stamp}``, the wall clock there, is memplug's fixed
  :data:`memplug.datasets.factcon.protocol.TIME_STAMP`);
- **questions** -- ``_create_query_answer_pairs``: one question per (question, answer)
  pair when a row has more than one of each, else one question whose gold is every answer;
- **prompt** -- ``_handle_bm25_rag``: system message ``SYSTEM_MESSAGE``; user message the
  retrieved chunks, each ``"Memory {i+1}:\\n{chunk}\\n"``, joined by ``"\\n"``, then ``"\\n"``
  and the family's ``rag_agent`` query template (the removed families wrapped the
  memories in their ``retrieval`` template first);
- **depth** -- ``retrieve_num: 10`` of the RAG agent configs;
- **parsing and scoring** -- ``utils/eval_other_utils.py`` ``post_process`` by the
  source's name (see :mod:`.sources`): ``default_post_process`` keeps the better of the
  raw reply and ``parse_output`` per metric; ICL scores ``parse_output`` only; EventQA
  scores ``parse_output`` and its ``eventqa_recall`` the raw reply; RULER NIAH and ReDial
  score the raw reply, and so do the judges of LongMemEval and InfBench-Sum (their
  secondary ``em``/``f1`` then score the raw reply only; ``subem`` is the same either way,
  ``parse_output``'s line being part of the reply).
"""

from __future__ import annotations

from typing import Any, Mapping

from memplug.answering import AnswerProtocol

# importing factcon's protocol registers the "memoryagentbench" reply parser (parse_output)
from memplug.datasets.factcon.protocol import TIME_STAMP
from memplug.datasets.mab.sources import Source
from memplug.datasets.mab.templates import REMOVED, TEMPLATES
from memplug.options import Option

#: retrieve_num of every RAG agent config
TOP_K = 10
#: memplug's agents retrieve, so they get the code's RAG agent templates
AGENT_KIND = "rag_agent"
#: the families whose paper metric is an LLM judge of the reply
JUDGED = ("longmemeval", "infbench_sum")


def templates_of(family: str) -> dict[str, Any]:
    """The family's official templates (the removed families' as 9a5dd95 had them)."""
    return dict(TEMPLATES.get(family) or REMOVED[family])


def slots(template: str, *names: str) -> str:
    """An official ``str.format`` template as a memplug slot template: each named field kept
    as ``{field}`` and ``{{``/``}}`` unescaped, as ``format`` would write them."""
    return template.format(**{name: "{" + name + "}" for name in names})


def memorize(source: Source, chunk: str) -> str:
    """A chunk as the official RAG agents store it: in the family's memorize template."""
    template = str(templates_of(source.family)["memorize"])
    if "{time_stamp}" in template:
        return template.format(context=chunk, time_stamp=TIME_STAMP)
    return template.format(context=chunk)


def _files(source: Source) -> str:
    where = "tasks/templates.py" if source.family in REMOVED else "utils/templates.py"
    return (
        f"github HUST-AI-HYZ/MemoryAgentBench @ {source.commit[:7]}: {where} {source.family!r} "
        f"(system, memorize, query {AGENT_KIND}), agent.py _handle_bm25_rag, utils/eval_other_utils.py "
        f"chunk_text_into_sentences and post_process ({source.scoring}), {source.config} chunk_size: "
        f"{source.chunk_size}, RAG configs retrieve_num: {TOP_K}"
    )


def official(source: Source) -> AnswerProtocol:
    """The official protocol of ``source``."""
    t = templates_of(source.family)
    query = slots(str(dict(t["query"])[AGENT_KIND]), "question")
    if source.family in REMOVED:
        wrap = slots(str(dict(t["retrieval"])[AGENT_KIND]), "memory")
        user = wrap + "\n" + query
    else:
        user = "{memory}\n" + query
    # NIAH and ReDial score the raw reply, and so do the judges (longmem_qa_evaluate.py and
    # summarization_evaluate.py read the output itself): a judged source's reply is kept whole,
    # lest the judge be asked twice and the better verdict kept
    raw = source.scoring in ("ruler_niah", "recsys") or source.family in JUDGED
    return AnswerProtocol(
        name=f"memoryagentbench-{source.family}",
        version="1",
        source=_files(source),
        system=str(t["system"]),
        user=user,
        memory_item="Memory {n}:\n{text}\n",
        memory_start=1,
        memory_join="\n",
        parse="strip" if raw else "memoryagentbench",
        choices="lenient",
        # default_post_process keeps the better of raw and parsed per metric
        score_raw_too=source.scoring == "default" and not raw,
        unit="message",
        chunk_size=source.chunk_size,
        top_k=TOP_K,
    )


OPTIONS = (
    Option(
        "chunk",
        int,
        4096,
        "tokens per chunk (o200k_base, as chunk_text_into_sentences counts): 4096 as every "
        "data config; 512 as the RAG chunk-size ablation (rag_agents_chunksize.txt)",
        low=16,
        high=1_000_000,
    ),
    Option("wrap", bool, True, "store each chunk inside the source's memorize template (the RAG agents do)"),
    Option(
        "parse",
        str,
        "official",
        "official: post_process's parsing for the source; plain: the reply stripped, scored as it is",
        choices=("official", "plain"),
    ),
)


def protocol(source: Source, values: Mapping[str, Any]) -> AnswerProtocol:
    """The official protocol of ``source`` with the deviations ``values`` ask for, each named."""
    out = official(source)
    chunk = values.get("chunk") or source.chunk_size
    if chunk != source.chunk_size:
        out = out.vary(f"chunk={chunk}", chunk_size=chunk)
    if values.get("wrap") is False:
        out = out.vary("wrap=false")
    if values.get("parse") == "plain":
        out = out.vary("parse=plain", parse="strip", score_raw_too=False)
    return out

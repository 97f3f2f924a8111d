"""PerLTQA protocol: memplug's own, stated as such, because no official evaluation code exists.

github Elvin-Yiming-Du/PerLTQA at 5a9b11783cc75068896ce5181ae5cf1d4fb4207a holds the data,
``Dataset/dataset.py`` (a reader) and ``memory_retrieval/tools/retriever.py`` (BM25/DPR/
RocketQA retrieval) only: no answer prompt, reply parsing or metric code to run. So these
tests check that the protocol says so, that its prompt is the paper's Figure 8 filled in
(the template written out here from the paper, App. A.5), that it is the protocol memplug
used before protocols existed (runs before and after compare), and pin memplug's own
scores of a fixed set of replies -- memplug's figures, not official ones.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from memplug.answering import protocol_of
from memplug.datasets.perltqa.builder import PerLTQABuilder
from memplug.metrics import RougeL, TokenF1
from memplug.models import AgentQuestion, DatasetInfo, Recalled, Sample
from memplug.options import resolve
from memplug.protocols import BuildOptions, MetricConfig, ScoreContext

FIXTURES = Path(__file__).parent / "fixtures" / "perltqa"


def figure8(memories: list[str], question: str) -> str:
    """PerLTQA (arXiv 2402.16288) App. A.5, Figure 8, with [memories] and [question] filled in
    as memplug writes memories: one per line, numbered from 1."""
    memory = "\n".join(f"{i}. {' '.join(m.split())}" for i, m in enumerate(memories, start=1))
    return (
        "Please answer the following question based on the provided memory information, ignoring any "
        "irrelevant memories. Keep the response under fifty words.\n\n"
        f"Memory Information: {memory}\nQuestion: {question}\nAnswer:"
    )


def build(lang: str = "en") -> tuple[list[Sample], DatasetInfo]:
    builder = PerLTQABuilder()
    if lang == "en":
        values = resolve(builder.options, {}, "perltqa")
        return list(builder.build(BuildOptions(values=values, data=FIXTURES))), builder.info_for(values, FIXTURES)
    values = resolve(builder.options, {"lang": "zh", "n": 1}, "perltqa")
    return list(builder.build(BuildOptions(values=values, seed=1))), builder.info_for(values)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_protocol_says_it_is_memplugs_own(lang):
    _, info = build(lang)
    protocol = protocol_of(info)
    described = protocol.describe()
    assert protocol.name == "perltqa-memplug" and described["official"] is False and not protocol.variations
    assert "5a9b117" in protocol.source and "no official evaluation code" in protocol.source
    assert "Figure 8" in protocol.source
    assert protocol.parse == "strip" and protocol.top_k is None and protocol.unit is None and protocol.system is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_it_is_the_protocol_memplug_used_before(lang):
    """The same key as the protocol memplug made from the answer prompt before datasets declared one."""
    _, info = build(lang)
    before = protocol_of(attrs.evolve(info, protocol=None))
    assert protocol_of(info).key == before.key and protocol_of(info).user == info.answer_prompt


def test_the_prompt_is_the_papers_figure_8_filled_in():
    samples, info = build()
    sample = samples[0]
    question = sample.questions[0]
    memories = [m.text for m in sample.messages[:5]] + ["a memory\nover two lines"]
    ours = protocol_of(info).messages(AgentQuestion.of(question), [Recalled(t) for t in memories])
    assert ours == [{"role": "user", "content": figure8(memories, question.text)}]


#: replies to "What is the gender of Wang Xiaoming?" (gold: "Wang Xiaoming is male.") and their
#: memplug scores (f1, rouge_l): memplug's figures, there is no official code to compute them
REPLIES_EN = [
    ("Wang Xiaoming is male.", 1.0, 1.0),  # clean
    ("  male\n", 0.4, 0.4),  # short, white space
    ("Answer: Wang Xiaoming is male.", 0.889, 0.889),  # "Answer: ..." is not parsed away
    ("Based on the memory information, Wang Xiaoming is male.", 0.667, 0.667),  # verbose
    ("Wang Xiaoming is male.\nHis nickname is Obviously.", 0.667, 0.667),  # multi-line
    ("", 0.0, 0.0),
]
#: replies to "林杰的性别是什么？" (gold: "林杰是男性。", generated with seed 1): characters are the tokens
REPLIES_ZH = [
    ("林杰是男性。", 1.0, 1.0),
    ("男性", 0.571, 0.571),
    ("回答：林杰是男性。", 0.833, 0.833),
    ("根据记忆信息，林杰是男性。\n他喜欢读书。", 0.476, 0.476),
]


@pytest.mark.parametrize("lang, replies", [("en", REPLIES_EN), ("zh", REPLIES_ZH)])
def test_replies_are_stripped_and_scored_by_memplugs_metrics(lang, replies):
    samples, info = build(lang)
    question = samples[0].questions[0]
    protocol = protocol_of(info)
    config = MetricConfig(language=info.language)
    for reply, f1, rouge in replies:
        prediction = protocol.parse_reply(reply)
        assert prediction == reply.strip()
        ctx = ScoreContext(question, prediction, (), info.language)
        assert (TokenF1(config).score(ctx), RougeL(config).score(ctx)) == pytest.approx((f1, rouge), abs=1e-3), reply


def test_a_run_records_the_protocol_as_not_official(tmp_path):
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    path = Evaluation(RunSpec(agent="bm25", dataset="perltqa", data=str(FIXTURES), limit=2)).run(output=tmp_path)
    protocol = RunDir(path).info().resolved["protocol"]
    assert protocol["name"] == "perltqa-memplug" and protocol["official"] is False
    assert "no official evaluation code" in protocol["source"]

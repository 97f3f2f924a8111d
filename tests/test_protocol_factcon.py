"""FactConsolidation protocol conformance: memplug's memories, prompt, parsing and scoring
against MemoryAgentBench's code.

The official functions below are copied from github HUST-AI-HYZ/MemoryAgentBench at
455306dcabc3842526eb83cd4e225e5d486c5c5d (``utils/eval_other_utils.py``
``chunk_text_into_sentences``, ``parse_output``, ``normalize_answer``, ``f1_score``,
``drqa_exact_match_score``, ``substring_exact_match_score``,
``drqa_metric_max_over_ground_truths``, ``calculate_metrics`` (ROUGE left out: not a
FactConsolidation metric here) and ``default_post_process``; ``utils/templates.py``
``factconsolidation``; ``utils/eval_data_utils.py`` ``format_chat``; ``agent.py``
``_handle_rag_agent`` and ``_handle_bm25_rag``), with the LLM call, the retriever and
``nltk.download`` taken out, so that the same fixture is rendered and scored by both.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memplug.answering import protocol_of
from memplug.datasets.factcon.builder import FactConBuilder
from memplug.datasets.factcon.chunks import context_of
from memplug.datasets.factcon.protocol import TIME_STAMP, sentence_splitter
from memplug.metrics import ExactMatch, SubstringExactMatch, TokenF1
from memplug.models import AgentQuestion, Recalled
from memplug.options import resolve
from memplug.protocols import BuildOptions, MetricConfig, ScoreContext

COMMIT = "455306dcabc3842526eb83cd4e225e5d486c5c5d"


# --- MemoryAgentBench's code (455306d) ----------------------------------------------------

SYSTEM_MESSAGE = "You are a helpful assistant that can read the context and memorize it for future retrieval."
FACTCONSOLIDATION: dict[str, Any] = {
    "system": SYSTEM_MESSAGE,
    "memorize": "Dialogue between User and Assistant {time_stamp} \\n<User> The following context is the facts I have learned: \n{context}\n <Assistant> I have learned the facts and I will answer the question you ask.",  # noqa: E501
    "query": {
        "rag_agent": "Pretend you are a knowledge management system. Each fact in the knowledge pool is provided with a serial number at the beginning, and the newer fact has larger serial number. \n You need to solve the conflicts of facts in the knowledge pool by finding the newest fact with larger serial number. You need to answer a question based on this rule. You should give a very concise answer without saying other words for the question **only** from the knowledge pool you have memorized rather than the real facts in real world. \n\nFor example:\n\n [Knowledge Pool] \n\n Question: Based on the provided Knowledge Pool, what is the name of the current president of Russia? \nAnswer: Donald Trump \n\n Now Answer the Question: Based on the provided Knowledge Pool, {question} \nAnswer:",  # noqa: E501
    },
}


def chunk_text_into_sentences(text, model_name="gpt-4o-mini", chunk_size=4096):
    import nltk
    import tiktoken

    # nltk.download('punkt', quiet=True)  -- offline: memplug's sentence_splitter() found punkt_tab
    try:
        encoding = tiktoken.encoding_for_model(model_name)
    except KeyError:
        encoding = tiktoken.encoding_for_model("gpt-4o-mini")
    sentences = nltk.sent_tokenize(text)
    text_chunks = []
    current_chunk_sentences: list[str] = []
    current_chunk_token_count = 0
    for sentence in sentences:
        sentence_tokens = encoding.encode(sentence, allowed_special={"<|endoftext|>"})
        sentence_token_count = len(sentence_tokens)
        if current_chunk_token_count + sentence_token_count > chunk_size:
            text_chunks.append(" ".join(current_chunk_sentences))
            current_chunk_sentences = [sentence]
            current_chunk_token_count = sentence_token_count
        else:
            current_chunk_sentences.append(sentence)
            current_chunk_token_count += sentence_token_count
    if current_chunk_sentences:
        text_chunks.append(" ".join(current_chunk_sentences))
    return text_chunks


def memorize(message, time_stamp):  # agent.py _handle_rag_agent, time.strftime(...) passed in
    memorize_template = FACTCONSOLIDATION["memorize"]
    return memorize_template.format(
        context=message, **({"time_stamp": time_stamp} if "{time_stamp}" in memorize_template else {})
    )  # noqa: E501


def format_chat(message, include_system=True, system_message="You are a helpful assistant."):
    chat_messages = [{"role": "user", "content": message}]
    if include_system:
        chat_messages.insert(0, {"role": "system", "content": system_message})
    return chat_messages


def bm25_rag_messages(page_contents, message):  # agent.py _handle_bm25_rag, after retrieval
    retrieval_context = [f"{doc}\n" for doc in page_contents]
    retrieval_memory_string = "\n".join([f"Memory {i + 1}:\n{text}" for i, text in enumerate(retrieval_context)])
    ask_llm_message = retrieval_memory_string + "\n" + message
    return format_chat(message=ask_llm_message, system_message=FACTCONSOLIDATION["system"])


def normalize_answer(answer_text):
    text = answer_text.lower()
    text = "".join(char for char in text if char not in string.punctuation)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    text = " ".join(text.split())
    return text


def f1_score(prediction, ground_truth):
    normalized_prediction = normalize_answer(prediction)
    normalized_ground_truth = normalize_answer(ground_truth)
    ZERO_METRIC = (0, 0, 0)
    special_answers = {"yes", "no", "noanswer"}
    if (
        normalized_prediction in special_answers or normalized_ground_truth in special_answers
    ) and normalized_prediction != normalized_ground_truth:
        return ZERO_METRIC
    prediction_tokens = normalized_prediction.split()
    ground_truth_tokens = normalized_ground_truth.split()
    common_tokens = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_common_tokens = sum(common_tokens.values())
    if num_common_tokens == 0:
        return ZERO_METRIC
    precision = num_common_tokens / len(prediction_tokens)
    recall = num_common_tokens / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1, precision, recall


def drqa_exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def substring_exact_match_score(prediction, ground_truth):
    return normalize_answer(ground_truth) in normalize_answer(prediction)


def drqa_metric_max_over_ground_truths(metric_function, prediction, ground_truths):
    if isinstance(ground_truths, str):
        ground_truth_list = [ground_truths]
    elif ground_truths and isinstance(ground_truths[0], list):
        ground_truth_list = [gt for gt_sublist in ground_truths for gt in gt_sublist]
    else:
        ground_truth_list = ground_truths
    return max(metric_function(prediction, gt) for gt in ground_truth_list)


def parse_output(output_text, answer_prefix="Answer:"):
    extraction_patterns = [
        re.compile(f"(?:{answer_prefix})(.*)(?:\n|$)", flags=re.IGNORECASE),
        re.compile(r"(?:^)(.*)(?:\n|$)"),
    ]
    for pattern in extraction_patterns:
        match = pattern.search(output_text)
        if match:
            extracted_text = match[1].strip()
            clean_answer = re.sub(f"^{re.escape(answer_prefix)}", "", extracted_text, flags=re.IGNORECASE).strip()
            return clean_answer
    return None


def calculate_metrics(prediction, ground_truth_answers):  # ROUGE left out
    return {
        "exact_match": drqa_metric_max_over_ground_truths(drqa_exact_match_score, prediction, ground_truth_answers),
        "f1": drqa_metric_max_over_ground_truths(lambda x, y: f1_score(x, y)[0], prediction, ground_truth_answers),
        "substring_exact_match": drqa_metric_max_over_ground_truths(
            substring_exact_match_score, prediction, ground_truth_answers
        ),
    }


def default_post_process(output, answer):
    prediction = output["output"]
    metrics = calculate_metrics(prediction, answer)
    parsed_prediction = parse_output(prediction)
    if parsed_prediction is not None:
        parsed_metrics = calculate_metrics(parsed_prediction, answer)
        metrics = {
            metric_name: max(original_score, parsed_metrics[metric_name])
            for metric_name, original_score in metrics.items()
        }
    return metrics, {"parsed_output": parsed_prediction}


# --- fixtures: the real release -----------------------------------------------------------


@pytest.fixture(scope="module")
def punkt():
    """memplug's splitter, loaded first: it puts the punkt_tab memplug ships on nltk's data
    path, where the official ``nltk.sent_tokenize`` above then finds it."""
    return sentence_splitter()


def build(shared_data, **values):
    builder = FactConBuilder()
    resolved = resolve(builder.options, values, "factcon")
    data = shared_data / "factconsolidation" / "factconsolidation_sh_6k.json"
    (sample,) = builder.build(BuildOptions(values=resolved, data=data))
    return sample, builder.info_for(resolved, data)


@pytest.fixture(scope="module")
def release(shared_data):
    import json

    path = shared_data / "factconsolidation" / "factconsolidation_sh_6k.json"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("chunk", [512, 4096])
def test_memories_are_the_official_chunks(shared_data, release, punkt, chunk):
    sample, info = build(shared_data, chunk=chunk)
    official = [memorize(c, TIME_STAMP) for c in chunk_text_into_sentences(release["context"], chunk_size=chunk)]
    assert [m.text for m in sample.messages] == official
    assert len(official) == (12 if chunk == 512 else 2)
    # the official chunker may cut a fact's serial from its sentence; memplug keeps that
    assert (
        sample.messages[0].text.endswith(
            " 37.\n <Assistant> I have learned the facts and I will answer the question you ask."
        )
        or chunk != 512
    )
    assert protocol_of(info).chunk_size == chunk and protocol_of(info).unit == "message"


def test_the_context_is_read_back_exactly(shared_data, release):
    sample, _ = build(shared_data, unit="fact")
    assert context_of(sample) == release["context"]


def test_unwrapped_chunks_are_a_named_deviation(shared_data, release, punkt):
    sample, info = build(shared_data, wrap="false")
    assert [m.text for m in sample.messages] == chunk_text_into_sentences(release["context"], chunk_size=512)
    assert protocol_of(info).variations == ("wrap=false",)


def test_the_prompt_equals_memoryagentbenchs_on_the_same_memories(shared_data, release):
    sample, info = build(shared_data)
    protocol = protocol_of(info)
    assert protocol.top_k == 10 and protocol.official and protocol.describe()["official"]
    assert COMMIT[:7] in protocol.source
    chunks = [m.text for m in sample.messages][:10]
    for i in (0, 1, 99):
        question = sample.questions[i]
        query = FACTCONSOLIDATION["query"]["rag_agent"].format(question=release["questions"][i])
        ours = protocol.messages(AgentQuestion.of(question), [Recalled(c) for c in chunks])
        assert ours == bm25_rag_messages(chunks, query)
        assert protocol.messages(AgentQuestion.of(question), []) == bm25_rag_messages([], query)


#: raw replies a model gives to "Which sport is goaltender associated with?" (gold: pesäpallo)
REPLIES = [
    "pesäpallo",  # clean
    "Pesäpallo.",  # clean, capitalised, full stop
    "  pesäpallo \n",  # white space
    "Answer: pesäpallo",  # "Answer: ..."
    "answer: Answer: pesäpallo",  # the prefix repeated
    "Based on the knowledge pool, the newest fact is 388, so goaltender is associated with pesäpallo.",  # verbose
    "The newest fact about goaltender has serial 388.\nAnswer: pesäpallo",  # reasoning, then the answer line
    "pesäpallo\nThe newest fact (388) says so.",  # answer, then an explanation
    "The newest fact about goaltender has serial 388.\npesäpallo",  # answer on the second line
    "答案：pesäpallo",  # Chinese prefix
    "ice hockey",  # wrong
    "Answer: ice hockey\nor pesäpallo",  # wrong on the answer line, gold further on
    "",  # empty
]
#: MemoryAgentBench's default_post_process on REPLIES (computed by the copied code above)
OFFICIAL: dict[str, list[float]] = {  # (exact_match, substring_exact_match, f1): max over the raw and the parsed output
    "em": [1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0],
    "subem": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0],
    "f1": [1, 1, 1, 1, 1, 0.133, 1, 1, 0.222, 0, 0, 0.333, 0],
}
#: the replies where scoring the raw output as well finds the gold answer that the parsed
#: line lacks: the protocol's score_raw_too keeps the better of both, as the official code does
RAW_ONLY = {8: "answer on the second line", 11: "gold after the answer line"}


def _ours(protocol, question, reply, raw_too=True):
    import asyncio

    from memplug.metrics import score_with

    config = MetricConfig()
    ctx = ScoreContext(question, protocol.parse_reply(reply), ())
    raw = reply if raw_too and protocol.score_raw_too else None
    return {
        m.name: asyncio.run(score_with(m, ctx, raw))
        for m in (ExactMatch(config), SubstringExactMatch(config), TokenF1(config))
    }


def test_replies_are_parsed_and_scored_as_memoryagentbenchs_code_does(shared_data):
    sample, info = build(shared_data)
    protocol = protocol_of(info)
    question = sample.questions[0]
    assert question.answers == ("pesäpallo",)
    for i, reply in enumerate(REPLIES):
        parsed = parse_output(reply)
        assert protocol.parse_reply(reply) == parsed, reply
        ours = _ours(protocol, question, reply)
        # memplug's score of the parsed output alone equals the official metric functions' on it
        on_parsed = calculate_metrics(parsed, list(question.answers))
        assert _ours(protocol, question, reply, raw_too=False) == {
            "em": float(on_parsed["exact_match"]),
            "subem": float(on_parsed["substring_exact_match"]),
            "f1": pytest.approx(on_parsed["f1"]),
        }, reply
        # and the official post-processing (best of raw and parsed) differs only where the raw reply holds the gold
        official, extra = default_post_process({"output": reply}, [list(question.answers)])
        assert extra["parsed_output"] == parsed
        assert float(official["exact_match"]) == OFFICIAL["em"][i], reply
        assert float(official["substring_exact_match"]) == OFFICIAL["subem"][i], reply
        assert official["f1"] == pytest.approx(OFFICIAL["f1"][i], abs=1e-3), reply
        # and with the raw reply scored too, memplug's equals the official post-processing on every reply
        assert (ours["em"], ours["subem"], ours["f1"]) == pytest.approx(
            (float(official["exact_match"]), float(official["substring_exact_match"]), official["f1"])
        ), reply
        if i in RAW_ONLY:
            assert _ours(protocol, question, reply, raw_too=False)["subem"] < ours["subem"], reply


def test_plain_parsing_and_the_paper_prompt_are_named_recorded_deviations(shared_data):
    sample, info = build(shared_data, parse="plain", prompt="paper")
    protocol = protocol_of(info)
    assert protocol.variations == ("prompt=paper", "parse=plain")
    assert protocol.describe()["official"] is False and protocol.system is None
    assert protocol.parse_reply("Answer: pesäpallo\n") == "Answer: pesäpallo"
    (message,) = protocol.messages(AgentQuestion.of(sample.questions[0]), [Recalled("0. A is\nB."), Recalled("1. C")])
    assert message["content"].startswith("Here is a knowledge pool with lots of new facts: 1. 0. A is B.\n2. 1. C.\n")


def test_one_fact_per_memory_is_a_named_deviation(shared_data):
    sample, info = build(shared_data, unit="fact")
    protocol = protocol_of(info)
    assert protocol.variations == ("unit=fact",) and protocol.chunk_size is None
    assert sample.messages[0].text == "0. Thomas Kyd was born in the city of London." and len(sample.messages) == 455


def test_a_run_records_the_protocol_and_feeds_whole_chunks(tmp_path, shared_data):
    from memplug.results import RunDir
    from memplug.runner import Evaluation, RunSpec

    data = shared_data / "factconsolidation" / "factconsolidation_sh_6k.json"
    path = Evaluation(RunSpec(agent="bm25", dataset="factcon", data=str(data), limit=3)).run(output=tmp_path)
    run = RunDir(path)
    resolved = run.info().resolved
    protocol = resolved["protocol"]
    assert protocol["name"] == "memoryagentbench-factconsolidation" and protocol["official"]
    assert protocol["parse"] == "memoryagentbench" and protocol["top_k"] == 10 and protocol["chunk_size"] == 512
    assert resolved["memory_unit"] == "message" and resolved["top_k"] == 10
    for record in run.records():
        assert len(record.recalled) == 10
        assert all(item.text.startswith("Dialogue between User and Assistant") for item in record.recalled)


#: nltk_data's packages/tokenizers/punkt_tab.zip (sha256 e57f6418…0106), its english/ folder
PUNKT_TAB_ENGLISH = {
    "abbrev_types.txt": "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779",
    "collocations.tab": "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf",
    "ortho_context.tab": "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
    "sent_starters.txt": "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac",
}

#: abbreviations, initials, decimals and quotes: where punkt's learned parameters decide
TRICKY = (
    'Mr. J. R. Smith paid $3.50 at 5 p.m. on Jan. 4 in Washington, D.C. and left. "Why?" he asked. '
    "Dr. Lee works for Acme Inc. in the U.S. Prof. Kim disagreed! Fact 36. Hines Ward plays cornerback. 37."
)


def test_the_shipped_punkt_model_is_nltk_datas_english_punkt_tab():
    import hashlib

    from memplug.datasets.factcon.protocol import NLTK_DATA

    folder = NLTK_DATA / "tokenizers" / "punkt_tab" / "english"
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()} == PUNKT_TAB_ENGLISH
    readme = (NLTK_DATA / "README.md").read_text(encoding="utf-8")
    assert "MIT" in readme and all(digest in readme for digest in PUNKT_TAB_ENGLISH.values())


def test_sentences_equal_nltks_own_on_the_copy_llama_index_ships(monkeypatch, release, punkt):
    """memplug's loader on its copy cuts as nltk's own (``sent_tokenize``'s PunktTokenizer, loaded
    afresh) on the punkt_tab that llama-index-core bundles, where memplug found the model before."""
    import nltk
    from nltk.tokenize.punkt import PunktTokenizer

    pytest.importorskip("llama_index.core")
    import llama_index.core

    bundled = Path(llama_index.core.__file__).parent / "_static" / "nltk_cache"
    monkeypatch.setattr(nltk.data, "path", [str(bundled)])
    nltks = PunktTokenizer("english")
    for text in (release["context"], TRICKY):
        assert [text[a:b] for a, b in punkt.span_tokenize(text)] == nltks.tokenize(text)
    assert punkt.tokenize(TRICKY)[0] == "Mr. J. R. Smith paid $3.50 at 5 p.m. on Jan. 4 in Washington, D.C. and left."
    assert len(punkt.tokenize(TRICKY)) == 7


def test_the_machines_own_nltk_data_does_not_change_the_sentences(monkeypatch, tmp_path):
    """A punkt_tab elsewhere on nltk's data path (another download, another version) is not used."""
    import nltk
    from nltk.tokenize.punkt import PunktTokenizer

    from memplug.datasets.factcon import protocol as fc

    other = tmp_path / "tokenizers" / "punkt_tab" / "english"
    other.mkdir(parents=True)
    for name in PUNKT_TAB_ENGLISH:
        (other / name).write_text("", encoding="utf-8")  # a model that knows no abbreviation
    expected = fc.sentence_splitter().tokenize(TRICKY)
    fc.sentence_splitter.cache_clear()
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])
    try:
        assert fc.sentence_splitter().tokenize(TRICKY) == expected
        assert len(PunktTokenizer("english").tokenize(TRICKY)) > len(expected)  # nltk itself takes the other
    finally:
        fc.sentence_splitter.cache_clear()

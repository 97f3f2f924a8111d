"""Retrieval building blocks: tokenizer, BM25 (lazy re-index), dense index, embedders, re-ranking."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memplug.adapters.retrieval import embedders as emb
from memplug.adapters.retrieval.bm25_index import BM25Index, top_k
from memplug.adapters.retrieval.dense_index import DenseIndex
from memplug.adapters.retrieval.memory_types import EPISODIC, SEMANTIC, classify
from memplug.adapters.retrieval.rerank import PerLTQAReranker
from memplug.adapters.retrieval.retriever import Retriever
from memplug.adapters.retrieval.timestamps import parse_time
from memplug.adapters.retrieval.tokenizer import tokenize
from memplug.errors import MemplugError


def test_tokenizer_english_words_without_stopwords():
    assert tokenize("The CEO of Apple Inc. is Tim Cook.") == ["ceo", "apple", "inc", "tim", "cook"]


def test_tokenizer_chinese_unigrams_and_bigrams_mixed_with_latin():
    assert tokenize("上司叫Zhao") == ["上", "司", "叫", "上司", "司叫", "zhao"]


def test_bm25_finds_chinese_and_english_and_reindexes_lazily():
    index = BM25Index()
    index.add(["我的上司名叫赵雅琳。", "我表弟学历是博士。", "Roy Rogers is married to Dale Evans."])
    assert index.search("我上司叫什么名字", 1)[0][0] == 0
    assert index.search("Who is Roy Rogers married to?", 1)[0][0] == 2
    index.add(["The capital of Romania is Bucharest."])  # added after a search: rebuilt on the next
    assert index.search("capital of Romania", 1)[0][0] == 3
    assert index.search("nothing matches zzz", 3) == []


def test_top_k_orders_by_score_then_position_and_fills_with_zeros_on_request():
    scores = np.array([0.0, 2.0, 1.0, 2.0, 0.0])
    assert top_k(scores, 3) == [(1, 2.0), (3, 2.0), (2, 1.0)]
    assert [i for i, _ in top_k(scores, 5, keep_zero=True)] == [1, 3, 2, 0, 4]


def test_bm25_index_is_bm25s_bit_for_bit():
    """The numpy build gives bm25s's own index (lucene, k1 1.5, b 0.75) and scores, empty documents included."""
    import bm25s

    rng = np.random.default_rng(7)
    words = "alpha beta gamma delta epsilon 上司 叫 zhao the of".split()
    texts = [" ".join(rng.choice(words, size=rng.integers(0, 14))) for _ in range(300)]
    index = BM25Index()
    for start in range(0, len(texts), 16):
        index.add(texts[start : start + 16])
    vocab = dict(index._vocab)
    vocab[""] = len(vocab)
    ids, lengths = list(index._tokens), list(index._lengths)
    docs, at = [], 0
    for n in lengths:
        docs.append(ids[at : at + n] or [vocab[""]])
        at += n
    reference = bm25s.BM25(k1=1.5, b=0.75)
    reference.index((docs, vocab), show_progress=False, create_empty_token=False)
    for query in ["alpha beta", "上司叫 zhao", "gamma gamma delta", "epsilon"]:
        q = sorted({vocab[t] for t in tokenize(query) if t in vocab})
        assert np.array_equal(index.scores(query), reference.get_scores_from_ids(q))
    assert np.array_equal(index._data, reference.scores["data"])
    assert np.array_equal(index._indices, reference.scores["indices"])


def test_top_k_on_long_arrays_keeps_the_earliest_of_tied_scores():
    """From 32,768 scores on: exactly the first k of (score descending, index), ties and NaN included."""
    rng = np.random.default_rng(3)
    n = 50_000
    with_nan = rng.random(n)
    with_nan[::7] = np.nan
    cases: list[np.ndarray[Any, Any]] = [
        rng.random(n).astype(np.float32),
        np.zeros(n, dtype=np.float32),
        rng.integers(0, 3, n).astype(np.float32),
        (rng.random(n) < 2e-4) * rng.random(n),
        -rng.integers(0, 50, n).astype(np.float64),
        with_nan,
    ]
    for scores in cases:
        ranked = np.lexsort((np.arange(n), -np.where(np.isnan(scores), -np.inf, scores)))
        for k in (1, 2, 5, 20, 5000):
            assert [i for i, _ in top_k(scores, k, keep_zero=True)] == ranked[:k].tolist()


def test_dense_index_grows_and_returns_cosine_top_k():
    index = DenseIndex(2)
    for _ in range(40):  # past the first allocation
        index.add(np.array([[1.0, 0.0]]))
    index.add(np.array([[0.0, 1.0], [0.6, 0.8]]))
    best = index.search(np.array([0.0, 1.0]), 2)
    assert [i for i, _ in best] == [40, 41]
    assert best[0][1] == pytest.approx(1.0)


def test_dense_index_reserve_keeps_rows_and_allocates_once():
    index = DenseIndex(2)
    index.add(np.array([[1.0, 0.0]]))
    index.reserve(10)
    matrix = index._matrix
    for _ in range(9):
        index.add(np.array([[0.0, 1.0]]))
    assert index._matrix is matrix and len(index) == 10
    assert index.vectors[0].tolist() == [1.0, 0.0] and index.vectors[9].tolist() == [0.0, 1.0]


def test_wordllama_loads_offline_from_memplug_cache(tmp_path, monkeypatch):
    import wordllama.wordllama as wl

    def no_network(*args, **kwargs):
        raise AssertionError("wordllama tried to download")

    monkeypatch.setattr(wl.requests, "get", no_network)
    monkeypatch.setenv("MEMPLUG_CACHE", str(tmp_path))
    monkeypatch.setattr(emb, "_CACHE", {})
    embedder = emb.get_embedder("wordllama")
    assert (tmp_path / "wordllama" / "tokenizers").is_dir()
    vectors = embedder.embed(["my boss is called Zhao", "the boss's name is Zhao", "rain in Spain"])
    assert vectors.shape == (3, embedder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert emb.get_embedder("wordllama") is embedder  # cached per process


def test_unknown_embedder_is_a_user_error():
    with pytest.raises(MemplugError, match="unknown embedder"):
        emb.get_embedder("glove")


def test_litellm_embedder_goes_through_the_llm_layer(monkeypatch):
    llm_module = pytest.importorskip("memplug.llm")

    class FakeLLM:
        api_base = api_key = None

        def __init__(self, model="run-model", api_base=None, api_key=None):
            self.model = model

        def embed(self, texts):
            return [[3.0, 4.0] for _ in texts]

    monkeypatch.setattr(llm_module, "LLM", FakeLLM)
    embedder = emb.LiteLLMEmbedder("openai/text-embedding-3-small", FakeLLM())  # type: ignore[arg-type]  # a stand-in LLM
    out = embedder.embed(["a", "b"])
    assert embedder.name == "litellm:openai/text-embedding-3-small"
    assert np.allclose(out, [[0.6, 0.8], [0.6, 0.8]]) and embedder.dim == 2


def test_feedback_reaches_the_fact_named_by_the_first_hit():
    texts = [
        "我的下属的单位叫深圳华厦建设有限公司。",
        "我的下属身高才160厘米。",
        "我叔叔的身高有173厘米。",
        "我表哥个子好高，有190厘米呢。",
        "我上司个子挺高的，有185厘米呢。",
    ]
    question = "那个单位名称是深圳华厦建设有限公司的人，身高是什么？"
    plain, fed = Retriever(feedback=0.0), Retriever(feedback=1.0)
    for r in (plain, fed):
        r.add(texts)
    assert [i for i, _ in fed.search(question, 2)] == [0, 1]
    assert fed.scores(question)[1] > fed.scores(question)[2]


def test_hybrid_blends_scaled_scores():
    r = Retriever(lexical=1.0, dense=1.0)
    r.add(["Tim Cook runs Apple.", "Bananas are yellow.", "Paris is in France."])
    scores = r.scores("Who runs Apple?")
    assert scores.argmax() == 0 and 0.0 <= scores.min() and scores.max() <= 2.0


def test_memory_type_classifier_and_metadata():
    assert classify("Yesterday we went to the museum together.")[0] == EPISODIC
    assert classify("Wang Wei is a cameraman and my colleague.")[0] == SEMANTIC
    assert classify("x", {"memory_type": "event"}) == (EPISODIC, 1.0)


def test_perltqa_rescoring_follows_eq3():
    reranker = PerLTQAReranker()
    reranker.add(["e1", "s1", "e2"], [{"memory_type": "event"}, {"memory_type": "profile"}, {"memory_type": "event"}])
    ranked = reranker.rerank("What happened at the party yesterday?", np.array([0.0, 5.0, 1.0]), 2)
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    # episodic question: P(pi|m) = 1 for events, 0 for the profile
    assert [i for i, _ in ranked] == [2, 0]
    assert [s for _, s in ranked] == pytest.approx([0.5 + 0.5 * sig(1.0), 0.5 + 0.5 * sig(0.0)])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2024年04月01日 周一 08:39", "2024-04-01T08:39:00+00:00"),
        ("2024-05-12T01:40:00", "2024-05-12T01:40:00+00:00"),
        ("1700000000", None),
    ],
)
def test_timestamps(text, expected):
    from datetime import datetime, timezone

    value = parse_time(text)
    if expected is None:
        assert value == 1_700_000_000
    else:
        assert value is not None
        assert datetime.fromtimestamp(value, timezone.utc).isoformat() == expected
    assert parse_time("next Tuesday-ish") is None


_ODD_TEXTS = [
    "",
    " ",
    "  a",
    "a ",
    "x  y",
    "▁hi",
    "\n",
    "héllo 😀 世界",
    "<s> hi </s>",
    "a<unk>b",
    "我的上司名叫赵雅琳",
    "tab\there",
    "I I I I I",
    "a" * 300,
    "Dr. Smith's 2nd appointment is on May 3, 2024 at 9:15.",
]


def test_static_pooler_is_wordllama_embed_bit_for_bit():
    """The word-cached, unpadded path gives WordLlama's own token ids and rows."""
    from memplug.adapters.retrieval.static_pool import StaticPooler, splits_at_words

    embedder = emb.get_embedder("wordllama")
    assert isinstance(embedder, emb.WordLlamaEmbedder)
    model = embedder._model
    pooler = StaticPooler(model.embedding, model.tokenizer)
    assert pooler._words is not None  # the shipped tokenizer takes the word-cached path
    rng = np.random.default_rng(0)
    words = "the boss name is Zhao rain in Spain married to Anna Berg 2024 上司 名叫 café naïve".split()
    texts = _ODD_TEXTS + [" ".join(rng.choice(words, size=int(rng.integers(1, 40)))) for _ in range(300)]
    texts += texts[:5]  # repeats are embedded once and copied
    expected = [e.ids for e in pooler._whole.encode_batch(texts, add_special_tokens=False)]
    assert pooler.token_ids(texts) == expected
    assert np.array_equal(pooler.embed(texts), model.embed(texts, batch_size=256))
    assert np.array_equal(emb.get_embedder("wordllama").embed(texts), emb.normalise(model.embed(texts, batch_size=256)))
    small = StaticPooler(model.embedding, model.tokenizer)
    small_cache = pytest.MonkeyPatch.context()
    with small_cache as patch:  # a full word cache is emptied and refilled: the same ids
        patch.setattr("memplug.adapters.retrieval.static_pool.MAX_WORDS", 5)
        assert [small.token_ids(texts[i : i + 7]) for i in range(0, 70, 7)] == [
            expected[i : i + 7] for i in range(0, 70, 7)
        ]
        assert len(small._cache) <= 40
    # a tokenizer the word cache does not reproduce goes through the tokenizer whole
    import json

    spec = json.loads(model.tokenizer.to_str())
    assert not splits_at_words(dict(spec, pre_tokenizer={"type": "Whitespace"}))
    vocab = dict(spec["model"]["vocab"], **{"a▁b": len(spec["model"]["vocab"])})
    assert not splits_at_words(dict(spec, model=dict(spec["model"], vocab=vocab)))


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def test_dense_index_is_exact_below_approximate_from():
    rng = np.random.default_rng(1)
    vectors, queries = _unit_rows(rng, 5000, 16), _unit_rows(rng, 20, 16)
    exact, never = DenseIndex(16, approximate_from=6000), DenseIndex(16)
    exact.add(vectors)
    never.add(vectors)
    for q in queries:
        assert exact.search(q, 5) == never.search(q, 5) == top_k(vectors @ q, 5, keep_zero=True)
        assert exact.candidates(q)[0] is None and not exact.approximate
    few = DenseIndex(16, approximate_from=10)  # fewer vectors than candidates: every row, exactly
    few.add(vectors[:500])
    assert few.approximate and few.candidates(queries[0])[0] is None


def test_two_stage_search_returns_the_exact_top_k_with_exact_cosines():
    # 5000 random rows (48 dimensions: the sign codes are padded to a 64-bit word), and
    # for each query five rows planted close to it: the sign pass must keep them among
    # its 100 candidates, and the re-rank then gives exact search's list and scores
    rng = np.random.default_rng(3)
    dim = 48
    queries = _unit_rows(rng, 10, dim)
    planted = np.repeat(queries, 5, axis=0) + 0.03 * rng.normal(size=(50, dim)).astype(np.float32)
    planted /= np.linalg.norm(planted, axis=1, keepdims=True)
    vectors = np.concatenate([_unit_rows(rng, 2500, dim), planted, _unit_rows(rng, 2450, dim)])
    ann = DenseIndex(dim, approximate_from=1000, min_candidates=100, candidates_per_k=10)
    never = DenseIndex(dim)
    ann.add(vectors)
    never.add(vectors)
    for q in queries:
        exact = never.search(q, 5)
        rows, scores = ann.candidates(q, 5)
        assert rows is not None and 100 <= len(rows) <= 400 and np.all(np.diff(rows) > 0)
        assert {i for i, _ in exact} <= set(rows.tolist())  # the case: the candidates hold them
        # exact cosines (float32; the BLAS may sum a subset in another order: last bit)
        assert np.allclose(scores, vectors[rows].astype(np.float64) @ q, rtol=0, atol=1e-6)
        found = ann.search(q, 5)
        assert [i for i, _ in found] == [i for i, _ in exact]
        assert np.allclose([s for _, s in found], [s for _, s in exact], rtol=0, atol=1e-6)
    many, _ = ann.candidates(queries[0], 20)
    assert many is not None and len(many) >= 200  # candidates_per_k * k when larger
    ann.add(_unit_rows(rng, 10, dim))  # rows added after the encoding are encoded and found
    assert ann.search(ann.vectors[-1], 1)[0][0] == 5009


def test_popcount_without_bitwise_count_is_the_same(monkeypatch):
    from memplug.adapters.retrieval import dense_index

    words = np.random.default_rng(4).integers(0, 2**63, size=1000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    words[:2] = [0, np.iinfo(np.uint64).max]
    expected = np.array([bin(int(w)).count("1") for w in words], dtype=np.uint8)
    assert np.array_equal(dense_index.popcount(words), expected)
    monkeypatch.delattr(np, "bitwise_count", raising=False)  # numpy < 2.0
    assert np.array_equal(dense_index.popcount(words), expected)


def test_two_stage_search_bounds_the_rows_tied_at_the_cut():
    same = np.zeros((3000, 16), dtype=np.float32)
    same[:, 0] = 1.0
    ann = DenseIndex(16, approximate_from=1000, min_candidates=10, candidates_per_k=1)
    ann.add(same)
    rows, scores = ann.candidates(same[0])  # all 3000 at distance 0: the first 10 rows
    assert rows is not None and rows.tolist() == list(range(10)) and np.all(scores == 1.0)
    assert ann.search(same[0], 3) == [(0, 1.0), (1, 1.0), (2, 1.0)]


def test_dense_only_search_goes_through_the_index_with_the_same_list(monkeypatch):
    rng = np.random.default_rng(2)
    table = {f"t{i}": v for i, v in enumerate(_unit_rows(rng, 300, 8))}

    class Fixed:
        name, dim = "fixed", 8

        def embed(self, texts):
            return np.asarray([table[t] for t in texts], dtype=np.float32)

    monkeypatch.setattr("memplug.adapters.retrieval.retriever.get_embedder", lambda name, llm=None: Fixed())
    r = Retriever(lexical=0.0, dense=1.0)
    r.add([f"t{i}" for i in range(250)])
    for q in ("t260", "t270", "t3"):
        assert r.search(q, 5) == top_k(r.scores(q), 5, keep_zero=True)

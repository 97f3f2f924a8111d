"""`hybrid`: lexical + dense retrieval made for conversations, fully offline.

Built to close issue 16 point 6 (LoCoMo turn recall@5 and session hit@5 with nothing
downloaded) by general means, each measured on the whole of LoCoMo's locomo10.json
(docs/agents/hybrid.md has the numbers with each part taken away). Every part, and why:

1. **Tokens** — lower-cased words, Snowball-stemmed ("painting"/"painted" meet), minus
   a full English stop-word list that also holds chat filler ("really", "gonna" …); CJK
   runs as character unigrams and bigrams, as the shared tokenizer does. Plain BM25
   spends its top 5 on short turns that share only "what"/"did"/a name with the question.
2. **Speaker names** — in a conversation between named speakers, every turn carries a
   name, so names are taken out of the lexical index and the query (a name would make
   "Nate said: See ya!" a top hit for any question about Nate) and come back as a
   prior: turns *spoken by* the one speaker a question names get ``speaker`` added
   (on LoCoMo, 96% of the evidence turns of such questions are that speaker's).
3. **Leading timestamps** — a message text that starts with its own date ("1:56 pm on
   8 May, 2023: …") has it cut before indexing: every turn of a session shares it, so
   it only adds noise to words and vectors. Time is used through the next part.
4. **Dates** — a question naming a date ("in October", "on December 4, 2023", "in
   2022", "2024年04月01日") gets ``date`` added to the turns whose dataset time falls in
   that day, month or year, or up to 14 days after (people tell of an event in the next
   session: "I went there yesterday").
5. **Context** — a turn is indexed together with the previous turn of its session
   (``context``), because answers are often a reply ("Yes, last week!") to the turn that
   names the topic. The item returned is still the one turn.
6. **Query expansion** — each query word pulls in up to three words of the memory's own
   vocabulary whose wordllama vectors are close (cosine ≥ 0.4), at ``expand`` times that
   similarity ("martial arts" reaches "taekwondo"); only words the memory holds, so no
   out-of-vocabulary noise.
7. **Dense fusion** — the wordllama cosine of the question (names removed) with the turn
   (timestamp and "X said" removed) is min-max scaled and added at weight ``dense`` to the
   min-max scaled BM25 score: the two scores fail on different questions.
8. **Session-aware selection** — the first ``keep`` items are the best turns; the other
   slots go to the best turn of each next session, sessions ranked by a soft maximum
   (log-sum-exp, temperature 0.1) of their turns' scores. The best turns stay first (turn
   recall), and the top K spans more sessions (session hit). ``keep`` ≥ K turns this off.
   Sessions come from ``meta["session"]`` or the id's part before its last ":" (LoCoMo's
   "D3:5"); messages without one are plain top-K.

Everything is in memory; wordllama's weights ship in its wheel, so nothing is downloaded.
``stored()`` lists every ingested turn (the run's stored.jsonl).
"""

from __future__ import annotations

import calendar
import functools
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, cast

import numpy as np

from memplug.adapters.retrieval.bm25_index import top_k
from memplug.adapters.retrieval.embedders import Embedder, embed_batched, get_embedder, is_remote
from memplug.adapters.retrieval.timestamps import parse_time
from memplug.adapters.retrieval.tokenizer import _CJK, _IS_CJK
from memplug.adapters.retrieval.weighted_bm25 import WeightedBM25
from memplug.models import AgentQuestion, Chunk, Message, Recall, Recalled, StoredItem
from memplug.options import Option, resolve
from memplug.protocols import AgentConfig

#: a full English stop-word list (NLTK's, contractions split as the tokenizer splits
#: them) plus conversational filler and question boilerplate
STOPWORDS = frozenset(
    """
a about above after again against ain all am an and any are aren as at be because been before being below between both
but by can couldn d did didn do does doesn doing don down during each few for from further had hadn has hasn have haven
having he her here hers herself him himself his how i if in into is isn it its itself just ll m ma me mightn more most
mustn my myself needn no nor not now o of off on once only or other our ours ourselves out over own re s same shan she
should shouldn so some such t than that the their theirs them themselves then there these they this those through to
too under until up ve very was wasn we were weren what when where which while who whom why will with won wouldn y you
your yours yourself yourselves would could also really much many even ever still yet get got go going went make made
thing things kind sort lot lots one ones way ways said say says tell told like gonna wanna gotta yeah yep hey oh wow
okay ok hi hello
""".split()
)

_CJK_OR_WORD = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_LATIN_WORD = re.compile(r"[^\W\d_]{2,}")

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m and m != "May"})
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: "8 May, 2023", "December 4, 2023", "October", "May 2023", "2022"
_DATE = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?({_MONTH_RE})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?\b)?,?"
    rf"(?:\s+((?:19|20)\d\d))?\b|\b((?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_ZH_DATE = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月(?:\s*(\d{1,2})\s*日)?")
#: a leading timestamp ending in ": " (time of day, then a date with a month or a year)
_LEADING_STAMP = re.compile(
    rf"^\s*(?:\d{{1,2}}[:.]\d{{2}}\s*(?:[ap]\.?m\.?)?\s*(?:on\s+)?)?[^:\n\"]{{0,30}}?"
    rf"(?:\b(?:{_MONTH_RE})\b|\b(?:19|20)\d\d\b|\d{{4}}-\d{{2}}-\d{{2}})[^:\n\"]{{0,12}}?:\s+",
    re.IGNORECASE,
)
DATE_SLACK = timedelta(days=14)
LSE_TEMPERATURE = 0.1


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return _stemmer()(word)


@functools.cache
def _stemmer() -> Callable[[str], str]:
    """Snowball's English stemmer, made at the first word: importing snowballstemmer (all
    its languages) at import cost `memplug list`, which reads this module's options, 10 ms."""
    import snowballstemmer

    return cast(Callable[[str], str], snowballstemmer.stemmer("english").stemWord)


def tokens(text: str, drop: frozenset[str] = frozenset()) -> list[str]:
    """Stemmed words minus stop words and ``drop``; CJK runs as unigrams and bigrams."""
    out: list[str] = []
    for match in _CJK_OR_WORD.finditer(text.lower()):
        run = match.group()
        if _IS_CJK.match(run):
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif run not in STOPWORDS and run not in drop:
            out.append(stem(run))
    return out


def strip_stamp(text: str) -> str:
    """The text without a leading timestamp ("1:56 pm on 8 May, 2023: ")."""
    match = _LEADING_STAMP.match(text)
    return text[match.end() :] if match else text


def date_intervals(text: str) -> list[tuple[datetime | None, int | None, datetime | None]]:
    """Dates a question names, as (start, month, end) intervals: a day, a month (of a
    given year, or of any year: start None, month set), or a year."""
    out: list[tuple[datetime | None, int | None, datetime | None]] = []
    for m in _DATE.finditer(text):
        d1, month, d2, year, year_only = m.groups()
        if year_only:
            y = int(year_only)
            out.append((datetime(y, 1, 1), None, datetime(y + 1, 1, 1)))
            continue
        mo, day = _MONTHS[month.lower()], d1 or d2
        if not year:
            out.append((None, mo, None))
            continue
        y = int(year)
        try:
            start = datetime(y, mo, int(day)) if day else datetime(y, mo, 1)
        except ValueError:
            continue
        end = start + timedelta(days=1) if day else datetime(y + mo // 12, mo % 12 + 1, 1)
        out.append((start, None, end))
    for m in _ZH_DATE.finditer(text):
        y, mo, day = int(m.group(1)), int(m.group(2)), m.group(3)
        try:
            start = datetime(y, mo, int(day)) if day else datetime(y, mo, 1)
        except ValueError:
            continue
        out.append((start, None, start + timedelta(days=1) if day else datetime(y + mo // 12, mo % 12 + 1, 1)))
    return out


def date_mask(
    intervals: list[tuple[datetime | None, int | None, datetime | None]], times: list[datetime | None]
) -> np.ndarray:
    """Which message times fall in one of the intervals, or up to DATE_SLACK after."""
    mask = np.zeros(len(times), dtype=bool)
    for start, month, end in intervals:
        for i, t in enumerate(times):
            if t is None:
                continue
            if month is not None:
                hit = t.month == month or (t - DATE_SLACK).month == month
            else:  # without a month an interval has both ends (see date_intervals)
                hit = start is not None and end is not None and start <= t < end + DATE_SLACK
            mask[i] |= hit
    return mask


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi - lo > 1e-12 else np.zeros_like(x)


def _session(message: Message) -> str | None:
    session = message.meta.get("session") if message.meta else None
    if session:
        return str(session)
    head, sep, _ = message.id.rpartition(":")
    return head if sep and head else None


class HybridAgent:
    """BM25 (stemmed, names out, with the previous turn) + wordllama cosine + speaker and
    date priors, with session-aware selection of the top K. See the module docstring."""

    options = (
        Option(
            "dense",
            float,
            0.5,
            "weight of the min-max scaled wordllama cosine added to the scaled BM25 score",
            low=0.0,
            high=100.0,
        ),
        Option("context", bool, True, "index each turn together with the previous turn of its session"),
        Option(
            "expand",
            float,
            0.3,
            "query expansion: weight (times cosine) of close in-memory words; 0 turns it off",
            low=0.0,
            high=10.0,
        ),
        Option(
            "speaker",
            float,
            0.6,
            "prior added to turns spoken by the one speaker the question names",
            low=0.0,
            high=100.0,
        ),
        Option(
            "date",
            float,
            0.6,
            "prior added to turns dated in (or up to 14 days after) a date the question names",
            low=0.0,
            high=100.0,
        ),
        Option(
            "keep",
            int,
            2,
            "items taken by turn score before one per further session (>= top-k: plain top-k)",
            low=0,
            high=10_000,
        ),
    )
    blocking = False

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        self.config = config
        self.opts = resolve(type(self).options, config.options, type(self).__name__)
        self.blocking = is_remote(config.embedder)
        self._embedder_name, self._llm = config.embedder, config.llm
        self._embedder: Embedder | None = None
        self.bm25 = WeightedBM25()
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.bodies: list[str] = []
        self.body_tokens: list[list[str]] = []
        self.speakers: list[str | None] = []
        self.sessions: list[str | None] = []
        self.times: list[datetime | None] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._vocab: dict[str, str] = {}  # lower-cased word -> stem, in first-seen order
        self._vocab_words: list[str] = []
        self._vocab_vectors = np.zeros((0, 0), dtype=np.float32)
        self._vocab_upto = 0  # messages whose words are in the vocabulary
        self._drop: frozenset[str] | None = None  # the names the lexical index was built without

    # ----------------------------------------------------------------- ingestion
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self._embedder_name, self._llm)
        return self._embedder

    def _names(self) -> frozenset[str]:
        """Lower-cased words of the speakers' names, when two or more named people talk."""
        named = {s for s in self.speakers if s and s.lower() not in ("user", "assistant", "system")}
        if len(named) < 2:
            return frozenset()
        return frozenset(w for s in named for w in re.findall(r"[^\W_]+", s.lower()))

    def ingest(self, chunk: Chunk) -> None:
        for m in chunk.messages:
            body = strip_stamp(m.text)
            if m.speaker:
                # "Caroline said, \"…\"": the speaker is a feature of its own (part 2)
                body = re.sub(rf'^\s*{re.escape(m.speaker)}\s+said,\s*"?', "", body)
            when = parse_time(m.time)
            self.ids.append(m.id)
            self.texts.append(m.text)
            self.bodies.append(body)
            self.speakers.append(m.speaker)
            self.sessions.append(_session(m))
            self.times.append(None if when is None else datetime.fromtimestamp(when, timezone.utc).replace(tzinfo=None))

    def _index(self) -> None:
        """Tokenise and embed what came in since the last search. New speaker names mean
        every message is tokenised again; otherwise only the new ones are."""
        drop = self._names()
        if drop == self._drop and len(self.body_tokens) == len(self.ids):
            return
        if drop != self._drop:
            self.body_tokens = []
        self.body_tokens += [tokens(b, drop) for b in self.bodies[len(self.body_tokens) :]]
        self._drop = drop
        docs = []
        for i, toks in enumerate(self.body_tokens):
            if (
                self.opts["context"]
                and i > 0
                and self.sessions[i] is not None
                and self.sessions[i - 1] == self.sessions[i]
            ):
                toks = toks + self.body_tokens[i - 1]
            docs.append(toks)
        self.bm25 = WeightedBM25()
        self.bm25.add(docs)
        if self.opts["dense"] > 0 and len(self._vectors) < len(self.bodies):
            new = embed_batched(self.embedder, self.bodies[len(self._vectors) :])
            self._vectors = new if len(self._vectors) == 0 else np.concatenate([self._vectors, new])
        if self.opts["expand"] > 0:
            fresh = []
            for b in self.bodies[self._vocab_upto :]:
                for w in _LATIN_WORD.findall(b.lower()):
                    if w not in self._vocab and w not in STOPWORDS and w not in drop:
                        self._vocab[w] = stem(w)
                        fresh.append(w)
            if fresh:
                vecs = embed_batched(self.embedder, fresh)
                self._vocab_words += fresh
                self._vocab_vectors = (
                    vecs if len(self._vocab_vectors) == 0 else np.concatenate([self._vocab_vectors, vecs])
                )
            self._vocab_upto = len(self.bodies)

    # ------------------------------------------------------------------- recall
    def _query(self, text: str, drop: frozenset[str]) -> dict[str, float]:
        weights: dict[str, float] = {}
        for t in tokens(text, drop):
            weights[t] = weights.get(t, 0.0) + 1.0
        alpha = self.opts["expand"]
        words = [w for w in dict.fromkeys(_LATIN_WORD.findall(text.lower())) if w not in STOPWORDS and w not in drop]
        if alpha > 0 and words and len(self._vocab_words):
            sims = self.embedder.embed(words) @ self._vocab_vectors.T
            for row in sims:
                for j in np.argsort(-row)[:3]:
                    if row[j] < 0.4:
                        break
                    term = self._vocab[self._vocab_words[j]]
                    if term not in weights or weights[term] < alpha * row[j]:
                        weights[term] = max(weights.get(term, 0.0), alpha * float(row[j]))
        return weights

    def scores(self, question: str) -> np.ndarray:
        """One fused score per message (parts 1-7 of the module docstring)."""
        self._index()
        n = len(self.ids)
        drop = self._names()
        lexical = self.bm25.scores(self._query(question, drop))
        total = _minmax(lexical)
        if self.opts["dense"] > 0:
            plain = question
            for name in {s for s in self.speakers if s} if drop else ():
                plain = re.sub(rf"\b{re.escape(name)}\b", " ", plain)
            cosine = self._vectors @ self.embedder.embed([plain])[0]
            total = total + self.opts["dense"] * _minmax(cosine.astype(np.float64))
        if self.opts["speaker"] > 0 and drop:
            lowered = question.lower()
            named = {s for s in self.speakers if s and re.search(rf"\b{re.escape(s.lower())}\b", lowered)}
            if len(named) == 1:
                who = named.pop()
                total = total + self.opts["speaker"] * np.array([s == who for s in self.speakers], dtype=np.float64)
        if self.opts["date"] > 0:
            intervals = date_intervals(question)
            if intervals:
                total = total + self.opts["date"] * date_mask(intervals, self.times)
        return total[:n]

    def select(self, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The best ``keep`` turns, then the best turn of each next session (part 8)."""
        keep = self.opts["keep"]
        ranked = top_k(scores, len(scores), keep_zero=True)
        if keep >= k or not any(self.sessions):
            return ranked[:k]
        chosen = ranked[:keep]
        seen = {self.sessions[i] for i, _ in chosen}
        best: dict[str | None, tuple[int, float]] = {}
        mass: dict[str | None, float] = {}
        top = float(scores.max())
        for i, s in ranked:  # best first, so the first turn seen of a session is its best
            session = self.sessions[i]
            best.setdefault(session, (i, s))
            mass[session] = mass.get(session, 0.0) + float(np.exp((s - top) / LSE_TEMPERATURE))
        order = sorted(mass, key=lambda sess: -mass[sess])
        taken = {i for i, _ in chosen}
        for session in order:
            if len(chosen) >= k:
                break
            if session in seen or session is None:
                continue
            chosen.append(best[session])
            taken.add(best[session][0])
            seen.add(session)
        for i, s in ranked:  # fewer sessions than slots: fill with the next best turns
            if len(chosen) >= k:
                break
            if i not in taken:
                chosen.append((i, s))
                taken.add(i)
        return chosen

    def recall(self, question: AgentQuestion) -> Recall:
        if not self.ids:
            return Recall(())
        ranked = self.select(self.scores(question.text), self.config.top_k)
        return Recall(tuple(Recalled(self.texts[i], s, (self.ids[i],)) for i, s in ranked))

    def stored(self) -> list[StoredItem]:
        """Every ingested turn, in ingestion order, as it is returned (its text, its message id),
        with its session and speaker in ``meta`` when it has them."""
        return [
            StoredItem(
                text, str(i), (message_id,), {k: v for k, v in (("session", session), ("speaker", speaker)) if v}
            )
            for i, (text, message_id, session, speaker) in enumerate(
                zip(self.texts, self.ids, self.sessions, self.speakers)
            )
        ]

    def close(self) -> None:
        """Everything lives in memory; nothing to release."""

"""Ingest throughput, recall latency and peak memory of bm25, embedding, decay and emg at scale.

For each agent a fresh process generates N synthetic user messages (templated
sentences about people, places, dates, jobs, purchases and plans, drawn from word
lists with a fixed seed; ~13 cl100k tokens a message, so 1,000,000 messages are about
13M tokens, the scale of the seeds' longest histories), packs them into chunks of
``--chunk-size`` tokens with the runner's own chunker (``memplug.chunking``), and
drives the agent through its public API exactly as the runner does: ``ingest(chunk)``
for every chunk, then ``recall(question)`` for each of ``--questions`` questions.

- ``ingest_msgs_per_s`` is N over the time to make N messages searchable: every
  ``ingest`` call plus the first recall, where agents build what ingestion left for
  later (bm25 indexes, dense agents embed the queued texts); ``ingest_s`` and
  ``build_s`` are the two parts.
  ``ingest_cpu_s`` is the CPU time the process spent on them (all its threads), which
  a busy shared machine inflates less than wall time; ``load_avg`` is the machine's
  1-minute load average before and after the measurement.
- ``recall_p50_ms`` / ``recall_p95_ms`` are over the questions after that first one.
- ``peak_rss_mb`` is the process's peak resident memory from just before the agent
  was built (VmHWM, reset through /proc/self/clear_refs; where that is refused,
  ``getrusage``'s peak since the start, and ``peak_since`` says "start");
  ``agent_peak_mb`` is that minus ``baseline_mb``, the resident memory at that moment
  (interpreter, libraries, the embedder and the generated messages already loaded).

    .venv/bin/python bench/agents_scale.py                           # 1,000,000 messages, all four
    .venv/bin/python bench/agents_scale.py --messages 100000 --agents bm25,emg
    .venv/bin/python bench/agents_scale.py --agents embedding,decay -o ann_from=250000   # approximate dense search

``-o KEY=VALUE`` passes an agent option to every agent that declares it; with an
approximate dense index (``ann_from``) ``ann_recall_at_k`` is the share of the exact
top-k (cosine over every vector) that the agent's search returned, over the questions.

One JSON line per agent and size, then a summary JSON line (the last line) keyed by
agent, then by size, with the targets (>= 20,000 msgs/s, recall p50 <= 10 ms) checked.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import multiprocessing
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

AGENTS = ("bm25", "embedding", "decay", "emg")
TARGET_MSGS_PER_S = 20_000
TARGET_P50_MS = 10.0

FIRST = """James Mary Robert Patricia John Jennifer Michael Linda David Elizabeth William Barbara Richard
Susan Joseph Jessica Thomas Sarah Charles Karen Christopher Lisa Daniel Nancy Matthew Betty Anthony
Margaret Mark Sandra Donald Ashley Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth
Carol Kevin Amanda Brian Dorothy George Melissa Timothy Deborah Ronald Stephanie Edward Rebecca Jason
Sharon Jeffrey Laura Ryan Cynthia Jacob Kathleen Gary Amy Nicholas Angela Eric Shirley Jonathan Anna
Stephen Brenda Larry Pamela Justin Emma Scott Nicole Brandon Helen Benjamin Samantha Samuel Katherine
Gregory Christine Alexander Debra Frank Rachel Patrick Carolyn Raymond Janet Jack Catherine Dennis Maria
Jerry Heather Tyler Diane Aaron Ruth Jose Julie Adam Olivia Nathan Joyce Henry Virginia Douglas Victoria
Zachary Kelly Peter Lauren Kyle Christina Ethan Joan Walter Evelyn Noah Judith Jeremy Megan Christian
Andrea Keith Cheryl Roger Hannah Terry Jacqueline Gerald Martha Harold Gloria Sean Teresa Austin Ann
Carl Sara Arthur Madison Lawrence Frances Dylan Kathryn Jesse Janice Jordan Jean Bryan Abigail Billy
Alice Joe Julia Bruce Judy Gabriel Sophia Logan Grace Albert Denise Willie Amber Alan Doris Juan Marilyn
Wayne Danielle Elijah Beverly Randy Isabella Roy Theresa Vincent Diana Ralph Natalie Eugene Brittany
Russell Charlotte Bobby Marie Mason Kayla Philip Alexis Louis Lori Wei Fang Hiroshi Yuki Priya Arjun
Ahmed Fatima Omar Leila Mateo Lucia Sven Ingrid Dmitri Olga Kwame Amara Tomas Elena Rafael Camila""".split()
LAST = """Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez
Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez
Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker
Hall Rivera Campbell Mitchell Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins
Reyes Stewart Morris Morales Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly
Howard Ramos Kim Cox Ward Richardson Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes
Price Alvarez Castillo Sanders Patel Myers Long Ross Foster Jimenez Powell Jenkins Perry Russell Sullivan
Bell Coleman Butler Henderson Barnes Gonzales Fisher Vasquez Simmons Romero Jordan Patterson Alexander
Hamilton Graham Reynolds Griffin Wallace Moreno West Cole Hayes Bryant Herrera Gibson Ellis Tran Medina
Aguilar Stevens Murray Ford Castro Marshall Owens Harrison Fernandez McDonald Woods Washington Kennedy
Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns Crawford Olson Simpson Porter Hunter Gordon
Mendez Silva Shaw Snyder Mason Dixon Munoz Hunt Hicks Holmes Palmer Wagner Black Robertson Boyd Rose
Stone Salazar Fox Warren Mills Meyer Rice Schmidt Garza Daniels Ferguson Nichols Stephens Soto Weaver
Ryan Gardner Payne Grant Dunn Kelley Spencer Hawkins Arnold Pierce Hansen Peters Santos Hart Bradley
Knight Elliott Cunningham Duncan Armstrong Hudson Carroll Lane Riley Andrews Alvarado Ray Delgado Berry
Perkins Hoffman Johnston Matthews Pena Richards Willis Carpenter Lawrence Sandoval Wang Zhang Liu Tanaka
Sato Suzuki Singh Kumar Sharma Okafor Mensah Novak Kowalski Ivanov Petrov Larsen Berg Dubois Moreau""".split()
CITIES = """Paris London Berlin Madrid Rome Lisbon Vienna Prague Warsaw Budapest Athens Dublin Oslo Stockholm
Helsinki Copenhagen Amsterdam Brussels Zurich Geneva Munich Hamburg Milan Naples Barcelona Seville Porto
Krakow Tallinn Riga Vilnius Reykjavik Edinburgh Manchester Liverpool Boston Chicago Seattle Portland
Denver Austin Dallas Houston Phoenix Atlanta Miami Orlando Nashville Memphis Detroit Cleveland Pittsburgh
Philadelphia Baltimore Toronto Montreal Vancouver Calgary Ottawa Tokyo Osaka Kyoto Seoul Busan Beijing
Shanghai Shenzhen Guangzhou Chengdu Hangzhou Taipei Singapore Bangkok Hanoi Manila Jakarta Mumbai Delhi
Bangalore Chennai Karachi Dubai Istanbul Cairo Nairobi Lagos Accra Casablanca Johannesburg Sydney
Melbourne Brisbane Perth Auckland Wellington Lima Bogota Santiago Quito Havana Montevideo Caracas""".split()
JOBS = """nurse teacher accountant architect pharmacist electrician plumber carpenter lawyer paramedic
dentist veterinarian librarian journalist photographer chef baker barista pilot mechanic engineer
programmer designer translator economist geologist biologist chemist physicist surgeon therapist
firefighter detective curator editor consultant analyst auditor surveyor florist tailor""".split()
COMPANIES = [
    f"{a} {b}"
    for a in "Northwind Bluepeak Redwood Silverline Greenfield Ironbridge Sunrise Oakridge Clearwater Brightstone Harbor Summit".split()
    for b in "Logistics Bank Hospital Studio Labs Foods Energy Insurance Airlines Motors Media Pharma".split()
]
RELATIVES = (
    "sister brother cousin aunt uncle niece nephew colleague neighbour friend boss mother father daughter son".split()
)
ITEMS = """bicycle laptop camera kettle blender backpack umbrella guitar telescope jacket sofa lamp printer
headphones tent keyboard monitor watch sneakers suitcase vacuum toaster microwave drone tablet scarf
mattress bookshelf desk chair rug mirror painting vase plant aquarium skateboard violin piano""".split()
STORES = [
    f"{a} {b}"
    for a in "Corner Central Village Harbor Maple Golden Union Riverside".split()
    for b in "Market Outlet Store Emporium Bazaar Mall".split()
]
HOBBIES = """pottery salsa chess climbing yoga painting fencing archery sailing knitting baking photography
swimming surfing karate tennis badminton calligraphy origami gardening birdwatching kayaking""".split()
EVENTS = """wedding conference concert interview meeting workshop reunion exhibition marathon seminar
festival party appointment presentation recital webinar hackathon fundraiser tournament ceremony""".split()
FOODS = "sushi ramen tacos paella curry pizza dumplings falafel risotto pho kimchi goulash lasagna ceviche".split()
MONTHS = "January February March April May June July August September October November December".split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
WEATHER = "storm snow heatwave flood fog rain wind hail".split()
ADJ = "Silent Hidden Broken Golden Distant Crimson Endless Quiet Burning Frozen Lost Wandering".split()
NOUN = "River Garden Kingdom Lighthouse Forest Mirror Harbor Mountain Letter Island Window Bridge".split()


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


A_JOBS, A_ITEMS = [_a(w) for w in JOBS], [_a(w) for w in ITEMS]

#: message templates; every slot draws from the lists above (see _fill)
TEMPLATES = [
    "I had dinner with {p} at a {food} place in {city} on {date}.",
    "My {rel} {f} just started a new job as {ajob} at {co}.",
    "{p} is married to {p2}.",
    "{p} was born in {city} in {year}.",
    "{p} works as a {job} in {city}.",
    "Remind me that the {event} with {p} is on {date} at {hour}.",
    "I bought {aitem} for {price} dollars at {store} last {wday}.",
    "We are planning a trip to {city} in {month} with {f} and {f2}.",
    "{p} moved from {city} to {city2} in {year}.",
    "The {event} in {city} was cancelled because of the {weather}.",
    "I started learning {hobby} with {p} last {wday}.",
    "{f}'s birthday is on {date}, she would love a new {item}.",
    "My appointment with Dr. {l} is on {date} at {hour}.",
    "I finished reading The {adj} {noun} by {p}, it took me {num} days.",
    "{p} recommended {ajob} called {p2} who lives in {city}.",
    "My {rel} {p} lent me {price} dollars for the {item}.",
]
QUESTIONS = [
    "Who is {p} married to?",
    "Where was {p} born?",
    "What does {p} do for a living in {city}?",
    "When is the {event} with {p}?",
    "How much did I pay for the {item} at {store}?",
    "Who is coming on the trip to {city} in {month}?",
    "Where does my {rel} {f} work now?",
    "When did {p} move to {city}?",
    "Who am I learning {hobby} with?",
    "When is my appointment with Dr. {l}?",
]


def _fill(template: str, rng: np.random.Generator) -> str:
    def pick(seq):
        return seq[int(rng.integers(len(seq)))]

    slots = {
        "p": f"{pick(FIRST)} {pick(LAST)}",
        "p2": f"{pick(FIRST)} {pick(LAST)}",
        "f": pick(FIRST),
        "f2": pick(FIRST),
        "l": pick(LAST),
        "city": pick(CITIES),
        "city2": pick(CITIES),
        "job": pick(JOBS),
        "co": pick(COMPANIES),
        "rel": pick(RELATIVES),
        "item": pick(ITEMS),
        "store": pick(STORES),
        "hobby": pick(HOBBIES),
        "event": pick(EVENTS),
        "food": pick(FOODS),
        "month": pick(MONTHS),
        "wday": pick(WEEKDAYS),
        "weather": pick(WEATHER),
        "adj": pick(ADJ),
        "noun": pick(NOUN),
        "date": f"{pick(MONTHS)} {int(rng.integers(1, 29))}, {int(rng.integers(2015, 2026))}",
        "year": str(int(rng.integers(1950, 2025))),
        "hour": f"{int(rng.integers(7, 20))}:{pick(('00', '15', '30', '45'))}",
        "price": str(int(rng.integers(5, 3000))),
        "num": str(int(rng.integers(2, 60))),
    }
    return template.format(**slots)


def generate(n: int, seed: int = 0) -> list:
    """N messages, one a minute from 2020-01-01, deterministic for a seed."""
    from datetime import datetime, timedelta

    from memplug.models import Message

    rng = np.random.default_rng(seed)
    # draw every slot index in bulk (per-call rng.integers is slow at 1M messages)
    pools = {
        "p": (FIRST, LAST),
        "p2": (FIRST, LAST),
        "f": (FIRST,),
        "f2": (FIRST,),
        "l": (LAST,),
        "city": (CITIES,),
        "city2": (CITIES,),
        "job": (JOBS,),
        "ajob": (A_JOBS,),
        "aitem": (A_ITEMS,),
        "co": (COMPANIES,),
        "rel": (RELATIVES,),
        "item": (ITEMS,),
        "store": (STORES,),
        "hobby": (HOBBIES,),
        "event": (EVENTS,),
        "food": (FOODS,),
        "month": (MONTHS,),
        "wday": (WEEKDAYS,),
        "weather": (WEATHER,),
        "adj": (ADJ,),
        "noun": (NOUN,),
    }
    drawn = {k: [rng.integers(len(seq), size=n) for seq in seqs] for k, seqs in pools.items()}
    tpl = rng.integers(len(TEMPLATES), size=n)
    day, dmonth, dyear = rng.integers(1, 29, size=n), rng.integers(12, size=n), rng.integers(2015, 2026, size=n)
    year, hour, minute = rng.integers(1950, 2025, size=n), rng.integers(7, 20, size=n), rng.integers(4, size=n)
    price, num = rng.integers(5, 3000, size=n), rng.integers(2, 60, size=n)
    import string

    start = datetime(2020, 1, 1)
    # only the slots a template names are filled (all are drawn, so the texts do not depend on it)
    fields = [[f for _, f, _, _ in string.Formatter().parse(t) if f] for t in TEMPLATES]
    drawn_lists = {k: [idx.tolist() for idx in v] for k, v in drawn.items()}
    computed = {
        "date": lambda i: f"{MONTHS[dmonth[i]]} {day[i]}, {dyear[i]}",
        "year": lambda i: str(year[i]),
        "hour": lambda i: f"{hour[i]}:{('00', '15', '30', '45')[minute[i]]}",
        "price": lambda i: str(price[i]),
        "num": lambda i: str(num[i]),
    }
    out = []
    for i, t in enumerate(tpl.tolist()):
        slots = {}
        for k in fields[t]:
            if k in computed:
                slots[k] = computed[k](i)
            else:
                slots[k] = " ".join(seq[idx[i]] for seq, idx in zip(pools[k], drawn_lists[k]))
        text = TEMPLATES[t].format(**slots)
        out.append(Message(str(i), text, time=(start + timedelta(minutes=i)).isoformat()))
    return out


def questions(count: int, n_messages: int, seed: int = 1) -> list:
    from datetime import datetime, timedelta

    from memplug.models import AgentQuestion

    rng = np.random.default_rng(seed)
    asked = (datetime(2020, 1, 1) + timedelta(minutes=n_messages)).isoformat()
    return [
        AgentQuestion(f"q{j}", _fill(QUESTIONS[j % len(QUESTIONS)], rng), "bench", time=asked) for j in range(count)
    ]


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def _reset_peak() -> bool:
    """Start the peak resident memory (VmHWM) again from now (Linux >= 4.0), so that
    generating and counting the messages does not count as the agent's peak."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_kb(reset: bool) -> int:
    if reset:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux; since start


def _make_agent(name: str, top_k: int, options: dict | None = None):
    from memplug.protocols import AgentConfig

    cls = _make_agent_class(name)
    return cls(AgentConfig(options=dict(options or {}), top_k=top_k), Path("."))


def _exact_recall(agent, asked: list, k: int) -> float | None:
    """For an agent whose dense search is approximate at this size: the share of the exact
    top-k (by cosine over every vector) that the approximate search returned, over the
    questions (None when the search is exact)."""
    retriever = getattr(agent, "retriever", None)
    dense = getattr(retriever, "_dense", None)
    if dense is None or not dense.approximate:
        return None
    from memplug.adapters.retrieval.bm25_index import top_k as exact_top_k

    found = total = 0
    for q in asked:
        query = retriever.embed_query(q.text)
        exact = {i for i, _ in exact_top_k(dense.similarities(query), k, keep_zero=True)}
        found += len(exact & {i for i, _ in dense.search(query, k)})
        total += len(exact)
    return round(found / max(total, 1), 4)


def measure(
    name: str, n: int, n_questions: int, chunk_size: int, top_k: int, profile: str | None, options: dict | None = None
) -> dict:
    """One agent at one size, in this process; see the module docstring for the fields."""
    from memplug.adapters.retrieval.embedders import get_embedder
    from memplug.chunking import chunk_messages
    from memplug.tokens import encoding

    t = time.perf_counter()
    msgs = generate(n)
    counts = [len(ids) for ids in encoding().encode_ordinary_batch([m.text for m in msgs], num_threads=1)]
    chunks = list(chunk_messages(msgs, chunk_size, counts))
    asked = questions(n_questions + 1, n)
    prep_s = time.perf_counter() - t
    if name != "bm25":
        get_embedder("wordllama")  # loaded before the baseline, as in a warm process
    gc.collect()
    gc.freeze()  # as the runner does: the dataset is not rescanned by every collection
    baseline_kb = _rss_kb()
    reset = _reset_peak()
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    load_before = os.getloadavg()[0]
    agent = _make_agent(name, top_k, options)
    c0, t0 = time.process_time(), time.perf_counter()
    for chunk in chunks:
        agent.ingest(chunk)
    t1 = time.perf_counter()
    agent.recall(asked[0])  # builds what ingestion left for later
    c2, t2 = time.process_time(), time.perf_counter()
    latencies, cpu = [], []
    for q in asked[1:]:
        c, t = time.process_time(), time.perf_counter()
        agent.recall(q)
        latencies.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    if profiler:
        profiler.disable()
        profiler.dump_stats(f"{profile}/{name}-{n}.prof")
    peak_kb = _peak_kb(reset)
    ann_recall = _exact_recall(agent, asked[1:], top_k)
    agent.close()
    row = {
        "agent": name,
        "messages": n,
        "tokens": int(sum(counts)),
        "chunks": len(chunks),
        "ingest_msgs_per_s": round(n / (t2 - t0), 1),
        "ingest_s": round(t1 - t0, 3),
        "build_s": round(t2 - t1, 3),
        # CPU seconds of this process (all its threads) for ingest + build: on a shared
        # machine wall time includes waiting for a core, this does not
        "ingest_cpu_s": round(c2 - c0, 3),
        "ingest_msgs_per_cpu_s": round(n / max(c2 - c0, 1e-9), 1),
        "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 3),
        "recall_p95_ms": round(float(np.percentile(latencies, 95)) * 1000, 3),
        "recall_max_ms": round(float(np.max(latencies)) * 1000, 3),
        "recall_cpu_p50_ms": round(float(np.percentile(cpu, 50)) * 1000, 3),
        "questions": len(latencies),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "agent_peak_mb": round(max(peak_kb - baseline_kb, 0) / 1024, 1),
        "baseline_mb": round(baseline_kb / 1024, 1),
        # VmHWM reset after the messages were made (else getrusage's peak since start)
        "peak_since": "agent" if reset else "start",
        "prep_s": round(prep_s, 1),
        "options": dict(options or {}),
        # approximate dense search only (-o ann_from=N): share of the exact top-k found
        "ann_recall_at_k": ann_recall,
        # the machine's 1-minute load average before and after (2 cores: above 2 means waiting)
        "load_avg": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    row["meets_ingest"] = row["ingest_msgs_per_s"] >= TARGET_MSGS_PER_S
    row["meets_recall"] = row["recall_p50_ms"] <= TARGET_P50_MS
    return row


def _child(args: tuple) -> dict:
    return measure(*args)


def _options_for(name: str, pairs: list[str]) -> dict:
    """The -o pairs that the agent declares (strings; the agent parses them)."""
    declared = {o.name for o in _make_agent_class(name).options}
    return {k: v for k, _, v in (p.partition("=") for p in pairs) if k in declared}


def _make_agent_class(name: str):
    from memplug.adapters.bm25 import BM25Agent
    from memplug.adapters.decay import DecayAgent
    from memplug.adapters.emg import EMGAgent
    from memplug.adapters.embedding import EmbeddingAgent

    return {"bm25": BM25Agent, "embedding": EmbeddingAgent, "decay": DecayAgent, "emg": EMGAgent}[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", default="1000000", help="messages to ingest; a comma list runs several sizes")
    parser.add_argument("--agents", default=",".join(AGENTS), help=f"comma list of {', '.join(AGENTS)}")
    parser.add_argument("--questions", type=int, default=200, help="recalls timed after the first")
    parser.add_argument("--chunk-size", type=int, default=512, help="tokens per chunk, as the runner's default")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--profile", metavar="DIR", help="write a cProfile of each measurement to DIR")
    parser.add_argument(
        "--inline", action="store_true", help="measure in this process (for py-spy); peak memory is then shared"
    )
    parser.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an agent option, as memplug eval's -o (e.g. ann_from=250000); given to every agent that has it",
    )
    args = parser.parse_args()
    names = [a for a in args.agents.split(",") if a]
    unknown = sorted(set(names) - set(AGENTS))
    if unknown:
        parser.error(f"unknown agents {unknown}; choose from {', '.join(AGENTS)}")
    sizes = [int(s.replace("_", "")) for s in args.messages.split(",") if s]
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    summary: dict = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "targets": {"ingest_msgs_per_s": TARGET_MSGS_PER_S, "recall_p50_ms": TARGET_P50_MS},
        "results": {},
    }
    for name in names:
        for n in sizes:
            job = (name, n, args.questions, args.chunk_size, args.top_k, args.profile, _options_for(name, args.option))
            if args.inline:
                row = measure(*job)
            else:
                # a fresh process per measurement, so peak memory is this agent's alone
                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    row = pool.apply(_child, (job,))
            summary["results"].setdefault(name, {})[str(n)] = {
                k: v for k, v in row.items() if k not in ("agent", "messages")
            }
            print(json.dumps(row), flush=True)
    summary["all_targets_met"] = all(
        r["meets_ingest"] and r["meets_recall"] for per in summary["results"].values() for r in per.values()
    )
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    sys.exit(main())

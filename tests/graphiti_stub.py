"""Replies to graphiti-core's structured-output requests, for the loopback OpenAI stub.

graphiti asks its LLM for JSON matching pydantic models and names the model in
``response_format.json_schema.name`` (memplug's graphiti bridge sends it the way
graphiti's own ``OpenAIGenericClient`` does). :func:`graphiti_reply` answers each one
deterministically from the request's own text, the way a small but honest model would:

- ``ExtractedEntities``: in the episode (``<CURRENT MESSAGE>`` or ``<TEXT>``), the speaker
  (the part before ``:`` on a line), every name (capitalised words, with the numbers
  that follow them: "Item 0-1", "Mary Lewis") and the last word of every sentence (its
  object: "accountant", "lamp");
- ``ExtractedEdges``: one fact per sentence that names two entities of ``<ENTITIES>``
  (the speaker counts), from the first to the second; the fact is the sentence itself,
  so what is recalled can be checked against the messages ingested;
- ``NodeResolutions``: an entity is a duplicate of an existing one with the same name;
- anything else (edge dedupe, timestamps, summaries, attributes): the smallest value
  the JSON schema accepts (empty lists, nulls, empty strings), built from the schema.

Requests without a JSON schema (the run's reader) go to ``fallback``
(:func:`openai_stub.echo_reply` unless given).

Run as a script for a manual ``memplug eval --agent graphiti``:
    python tests/graphiti_stub.py --port 8000
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from openai_stub import OpenAIStub, echo_reply  # noqa: E402

#: capitalised words that start sentences or name days and months, not entities
FILLER = frozenset(
    """I My Me We Our Us You Your He She His Her They Their It Its The A An This That These
Those There Here What When Where Who Why How Do Does Did Is Are Was Were Be Been Have Has Had Can Could
Will Would Should May Might Must Yes No Not And But Or So If Then Also Just Oh Hi Hello Thanks Ok Okay
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April June July August
September October November December""".split()
)
_NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:[A-Z][\w'’-]*|\d[\w-]*))*")
_LAST_WORD = re.compile(r"(\w[\w-]*)\W*$")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def _tag(text: str, *names: str) -> str:
    """The text between ``<NAME>`` and ``</NAME>`` for the first name present."""
    for name in names:
        found = re.search(rf"<{name}>\n?(.*?)</{name}>", text, re.S)
        if found:
            return found.group(1).strip()
    return ""


def _speaker_and_text(line: str) -> tuple[str | None, str]:
    head, sep, rest = line.partition(":")
    if sep and head.strip() and len(head.split()) <= 3 and not head.strip().startswith("["):
        return head.strip(), rest.strip()
    return None, line.strip()


def entities(message: str) -> list[str]:
    """Speakers, names and each sentence's last word, each once, in order of appearance."""
    found: list[str] = []
    for line in message.splitlines():
        speaker, text = _speaker_and_text(line)
        if speaker:
            found.append(speaker)
        for sentence in _SENTENCE.findall(text):
            for run in _NAME.findall(sentence):
                words = run.split()
                while words and words[0] in FILLER:
                    words = words[1:]
                while words and (words[-1] in FILLER or words[-1][0].isdigit() and len(words) == 1):
                    words = words[:-1]
                name = " ".join(words).removesuffix("'s").removesuffix("’s")
                if name:
                    found.append(name)
            last = _LAST_WORD.search(sentence)
            if (
                last
                and last.group(1) not in FILLER
                and not last.group(1).isdigit()
                and not any(last.group(1) in n.split() for n in found)
            ):
                found.append(last.group(1))
    return list(dict.fromkeys(found))


def edges(message: str, names: list[str]) -> list[dict[str, Any]]:
    """One edge per sentence: the speaker (or the sentence's first entity) to the next entity it names."""
    by_length = sorted(names, key=len, reverse=True)
    out: list[dict[str, Any]] = []
    for line in message.splitlines():
        speaker, text = _speaker_and_text(line)
        for sentence in (s.strip() for s in _SENTENCE.findall(text)):
            named = sorted(
                (n for n in by_length if n != speaker and re.search(rf"\b{re.escape(n)}\b", sentence)),
                key=sentence.find,
            )
            ends = ([speaker] if speaker in names else []) + named
            if len(ends) < 2:
                continue
            out.append(
                {
                    "source_entity_name": ends[0],
                    "target_entity_name": ends[1],
                    "relation_type": "MENTIONS",
                    "fact": f"{ends[0]}: {sentence}" if speaker else sentence,
                    "valid_at": None,
                    "invalid_at": None,
                    "episode_indices": [0],
                }
            )
    return out


def minimal(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The smallest value of a JSON schema: required fields only, empty lists, nulls."""
    if "$ref" in schema:
        return minimal(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = schema[key]
            if any(o.get("type") == "null" for o in options):
                return None
            return minimal(options[0], defs)
    kind = schema.get("type", "")  # "": none of the kinds below
    if "default" in schema:
        return schema["default"]
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: minimal(props[name], defs) for name in schema.get("required", []) if name in props}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False, "null": None}.get(kind)


#: how graphiti appends the schema to the prompt when it asks for json_object
SCHEMA_IN_PROMPT = "Respond with a JSON object in the following format:"


def _schema_in_prompt(body: dict[str, Any]) -> dict[str, Any]:
    """``{"name", "schema"}`` from a schema graphiti put in the prompt (json_object mode), or {}."""
    for message in reversed(body.get("messages") or []):
        content = str(message.get("content") or "")
        if SCHEMA_IN_PROMPT in content:
            tail = content.rsplit(SCHEMA_IN_PROMPT, 1)[1].strip()
            try:
                schema, _ = json.JSONDecoder().raw_decode(tail)
            except json.JSONDecodeError:
                return {}
            return {"name": schema.get("title"), "schema": schema}
    return {}


def graphiti_reply(body: dict[str, Any], fallback: Callable[[dict[str, Any]], str] | None = None) -> str:
    """A valid reply to any graphiti request; ``fallback`` (or :func:`echo_reply`) for the rest."""
    fmt = body.get("response_format") or {}
    spec = fmt.get("json_schema") or _schema_in_prompt(body)
    name = spec.get("name")
    if not name:
        if fallback is not None:
            return fallback(body)
        text = echo_reply(body)
        return json.dumps({"text": text}) if fmt.get("type") == "json_object" else text
    user = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "user")
    if name == "ExtractedEntities":
        message = _tag(user, "CURRENT MESSAGE", "CURRENT_MESSAGE", "TEXT", "JSON")
        return json.dumps(
            {
                "extracted_entities": [
                    {"name": n, "entity_type_id": 0, "episode_indices": [0]} for n in entities(message)
                ]
            }
        )
    if name == "ExtractedEdges":
        listed = json.loads(_tag(user, "ENTITIES") or "[]")
        names = [e["name"] for e in listed if isinstance(e, dict) and e.get("name")]
        return json.dumps({"edges": edges(_tag(user, "CURRENT_MESSAGE", "CURRENT MESSAGE"), names)})
    if name == "NodeResolutions":
        new = json.loads(_tag(user, "ENTITIES") or "[]")
        existing = {e.get("name"): e.get("candidate_id") for e in json.loads(_tag(user, "EXISTING ENTITIES") or "[]")}
        return json.dumps(
            {
                "entity_resolutions": [
                    {"id": e["id"], "name": e["name"], "duplicate_candidate_id": existing.get(e["name"], -1)}
                    for e in new
                ]
            }
        )
    schema = spec.get("schema") or {}
    return json.dumps(minimal(schema, schema.get("$defs") or {}))


def main() -> None:
    parser = argparse.ArgumentParser(description="loopback OpenAI-compatible server that answers graphiti's requests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--embed-dim", type=int, default=64)
    args = parser.parse_args()
    stub = OpenAIStub(reply=graphiti_reply, embed_dim=args.embed_dim, host=args.host, port=args.port)
    print(f"serving {stub.base_url} (graphiti replies)", flush=True)
    stub.serve()


if __name__ == "__main__":
    main()

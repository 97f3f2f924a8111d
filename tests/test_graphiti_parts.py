"""The graphiti agent's parts that need neither graphiti-core nor Kùzu: episodes, times, the
registry entry without the extra, the preflight, and the stub's answers to graphiti's schemas
(tests/integration/test_graphiti.py runs the real library)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from memplug.adapters import graphiti
from memplug.errors import MemplugError
from memplug.models import Chunk, Message


def test_episode_body_is_speaker_lines_with_times_only_when_they_differ():
    same = (
        Message("a", "I moved.", time="2024-04-01T08:30", speaker="Ana"),
        Message("b", "Where to?", time="2024-04-01T08:30", speaker="Bo"),
    )
    assert graphiti.episode_body(same) == "Ana: I moved.\nBo: Where to?"
    apart = (
        Message("a", "I moved.", time="2024-04-01T08:30", speaker="Ana"),
        Message("b", "Noted.", time="2024-04-02"),
    )
    assert graphiti.episode_body(apart) == "[2024-04-01T08:30] Ana: I moved.\n[2024-04-02] Noted."


def test_reference_time_is_the_first_readable_message_time():
    chunk = Chunk(3, [Message("a", "x", time="whenever"), Message("b", "y", time="2024年04月01日 周一 08:39")])
    assert graphiti.reference_time(chunk, None) == datetime(2024, 4, 1, 8, 39, tzinfo=timezone.utc)
    untimed = Chunk(3, [Message("a", "x")])
    earlier = datetime(2023, 1, 1, tzinfo=timezone.utc)
    assert graphiti.reference_time(untimed, earlier) == earlier  # the previous episode's, so order holds
    assert graphiti.reference_time(untimed, None) == datetime(1970, 1, 1, 0, 0, 3, tzinfo=timezone.utc)


def test_group_id_is_what_graphiti_accepts():
    assert graphiti.group_id("memsim-en-0/00001 x") == "memsim-en-0_00001_x"
    assert graphiti.group_id("") == "sample"


def test_a_reply_that_is_not_json_is_one_clear_line():
    assert graphiti._json_reply('```json\n{"a": 1}\n```', "X") == {"a": 1}
    with pytest.raises(MemplugError, match=r"graphiti asked the LLM for ExtractedEdges and the reply is not JSON"):
        graphiti._json_reply("Sure! Here are the edges", "ExtractedEdges")
    with pytest.raises(MemplugError, match="got list"):
        graphiti._json_reply("[]", "ExtractedEdges")


def test_without_llm_the_preflight_says_what_to_set():
    with pytest.raises(MemplugError, match=r"agent 'graphiti' needs an LLM for entity and fact extraction: set --llm"):
        graphiti.GraphitiAgent.preflight({"reranker": "rrf"}, {}, None)


def test_list_shows_the_install_command_when_the_extra_is_missing(plugins, monkeypatch):
    from memplug import plugins as registry

    installed = registry._installed
    monkeypatch.setattr(registry, "_installed", lambda m: m not in ("graphiti_core", "kuzu") and installed(m))
    entry = plugins.registry("agents").get("graphiti")
    described = entry.describe()
    assert not described["available"] and described["install"] == "pip install 'memplug[graphiti]'"
    with pytest.raises(
        MemplugError, match=r"agent 'graphiti' needs graphiti_core, kuzu: pip install 'memplug\[graphiti\]'"
    ):
        entry.load()

    from click.testing import CliRunner

    from memplug.cli import cli

    out = CliRunner().invoke(cli, ["list", "--json", "--kind", "agents"])
    assert out.exit_code == 0, out.output
    (listed,) = [a for a in json.loads(out.output)["agents"] if a["name"] == "graphiti"]
    assert listed["install"] == "pip install 'memplug[graphiti]'"


# --- the stub's answers (tests/graphiti_stub.py) -----------------------------------------


def _request(schema_name: str, user: str) -> dict[str, Any]:
    return {
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": user}],
        "response_format": {"type": "json_schema", "json_schema": {"name": schema_name, "schema": {}}},
    }


def test_stub_extracts_speakers_names_and_objects():
    from graphiti_stub import entities, graphiti_reply

    assert entities("Item 0-1 is lamp.") == ["Item 0-1", "lamp"]
    assert entities("user: My assistant Mary Lewis's personality is outgoing.") == ["user", "Mary Lewis", "outgoing"]
    reply = json.loads(
        graphiti_reply(_request("ExtractedEntities", "<CURRENT MESSAGE>\nAna: I moved to Lisbon.\n</CURRENT MESSAGE>"))
    )
    assert [e["name"] for e in reply["extracted_entities"]] == ["Ana", "Lisbon"]


def test_stub_writes_one_fact_per_sentence_between_named_entities():
    from graphiti_stub import graphiti_reply

    user = (
        "<CURRENT_MESSAGE>\nAna: I moved to Lisbon. It rains.\n</CURRENT_MESSAGE>\n"
        '<ENTITIES>\n[{"name": "Ana"}, {"name": "Lisbon"}]\n</ENTITIES>'
    )
    (edge,) = json.loads(graphiti_reply(_request("ExtractedEdges", user)))["edges"]
    assert (edge["source_entity_name"], edge["target_entity_name"], edge["fact"]) == (
        "Ana",
        "Lisbon",
        "Ana: I moved to Lisbon.",
    )


def test_stub_answers_other_schemas_minimally_and_reads_schemas_from_the_prompt():
    from graphiti_stub import SCHEMA_IN_PROMPT, graphiti_reply

    schema = {
        "title": "EdgeDuplicate",
        "type": "object",
        "required": ["duplicate_facts", "contradicted_facts"],
        "properties": {
            "duplicate_facts": {"type": "array"},
            "contradicted_facts": {"type": "array"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
    }
    body = {
        "messages": [{"role": "user", "content": f"facts...\n\n{SCHEMA_IN_PROMPT}\n\n{json.dumps(schema)}"}],
        "response_format": {"type": "json_object"},
    }
    assert json.loads(graphiti_reply(body)) == {"duplicate_facts": [], "contradicted_facts": []}
    plain = {"messages": [{"role": "user", "content": "What is item 0-1?"}]}
    assert graphiti_reply(plain) == "What is item 0-1?"
    assert graphiti_reply(plain, fallback=lambda body: "lamp") == "lamp"


def test_cognees_kuzu_shim_is_one_line_naming_the_fix(monkeypatch, tmp_path):
    """cognee 1.6 installs a kuzu/ over Kùzu's own: graphiti would fail every ingest (no FTS) or crash."""
    import sys
    import types

    from memplug.adapters.graphiti import open_kuzu
    from memplug.errors import MemplugError

    shim = types.ModuleType("kuzu", "Compatibility shim exposing Ladybug under the legacy Kuzu module name.")
    monkeypatch.setitem(sys.modules, "kuzu", shim)
    with pytest.raises(MemplugError, match=r"pip install --force-reinstall --no-deps kuzu==0\.11\.3"):
        open_kuzu(object, tmp_path / "kuzu", 64)

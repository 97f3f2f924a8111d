"""factcon's packaged relation templates and knowledge base against MQuAKE's files."""

from __future__ import annotations

import json
from pathlib import Path

from memplug.datasets.factcon.knowledge import knowledge_base
from memplug.datasets.factcon.relations import RELATIONS


def test_templates_agree_with_mquake(shared_data: Path) -> None:
    cloze = json.loads((shared_data / "mquake" / "cloze_templates.json").read_text(encoding="utf-8"))
    questions = json.loads((shared_data / "mquake" / "question_templates.json").read_text(encoding="utf-8"))
    assert set(RELATIONS) == set(cloze) == set(questions)
    for pid, relation in RELATIONS.items():
        assert relation.cloze == cloze[pid]
        assert relation.question == questions[pid]
        assert "[X]" in relation.noun


def test_fact_sentences_read_like_the_release(shared_data: Path) -> None:
    context = json.loads((shared_data / "factconsolidation" / "factconsolidation_sh_6k.json").read_text())["context"]
    assert RELATIONS["P26"].fact("Victoria Beckham", "David Beckham") in context
    assert RELATIONS["P30"].fact("Bengaluru", "Asia") in context


def test_knowledge_base_is_consistent() -> None:
    kb = knowledge_base()
    assert len(kb.facts) > 500
    for (subject, relation), obj in kb.facts.items():
        assert relation in RELATIONS
        assert subject in kb.types and obj in kb.types
        # an edit needs another object of the same type to move to
        assert len(kb.of_type(kb.types[obj])) > 1

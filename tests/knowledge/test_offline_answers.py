"""Offline answers: "not found" for questions the documentation does not cover (the README's own example,
asked of the demo's documentation), the page that answers as the first reference, the part of a question
an answer could not support named, and hostile questions answered cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from convener.api.errors import InvalidArgument
from convener.demo.knowledge import docs_folder, install_knowledge
from convener.knowledge.answers import NOT_FOUND, OFFLINE_NOTE, UNSUPPORTED_NOTE
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.text import MAX_QUERY_CHARACTERS
from convener.services import Services
from tests.knowledge.conftest import BASE_URL, name_of

README_QUESTION = "What do I do when a bag arrives damaged?"
"""The README's example, about the Harbor Coffee handbook of examples/docs: Convener's own docs do not cover it."""


def test_the_readme_example_is_not_found_in_the_demo_documentation(services: Services) -> None:
    assert docs_folder() is not None
    install_knowledge(services)

    answer = services.knowledge.answer(README_QUESTION)

    assert answer.text == NOT_FOUND
    assert answer.references == []


def test_a_question_the_demo_documentation_covers_references_the_page_that_answers_first(
        services: Services) -> None:
    install_knowledge(services)

    answer = services.knowledge.answer("How do I import a Slack export into Convener?")

    assert answer.text.startswith(OFFLINE_NOTE)
    assert answer.references[0].endswith("/chat.md")


def test_the_readme_example_is_answered_from_the_handbook_it_is_about(services: Services) -> None:
    handbook = Path(__file__).resolve().parents[2] / "examples" / "docs"
    services.knowledge.ingest(IngestPlan.make(handbook, "https://docs.harbor.test/"))

    answer = services.knowledge.answer(README_QUESTION)

    assert answer.references[0] == "documents/docs.harbor.test/wholesale/returns.html"
    assert "photo" in answer.text


def test_out_of_scope_questions_are_not_found(services: Services, docs: Path) -> None:
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    for question in ("How do I configure a Kubernetes ingress to route traffic to two backend services?",
                     "How do I train a PyTorch model on several GPUs?",
                     "What is the capital of France?"):
        assert services.knowledge.answer(question).text == NOT_FOUND, question


def test_an_answer_resting_on_part_of_the_question_names_the_part_it_could_not_support(
        services: Services, docs: Path) -> None:
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    # "tape" is an ordinary word the documentation does not use, not a name (see test_scope).
    answer = services.knowledge.answer("What is the default storage quota of a workspace on tape?")

    assert answer.references[0] == name_of("admin/configuration.html")
    assert "The default quota is 50 gigabytes." in answer.text
    assert answer.text.endswith(UNSUPPORTED_NOTE + '"tape".')
    whole = services.knowledge.answer("What is the default storage quota per workspace?")
    assert UNSUPPORTED_NOTE not in whole.text


@pytest.mark.parametrize("query", [
    "'; DROP TABLE knowledge_chunks; --", '"NEAR(quill backup)" OR * AND -', "?!* -- \"\" '' () : ^ ~ {}",
    "the of and to a in", "\x00\x01\x7f quota", "quota " * 300, "配額は何ギガバイトですか", "🙂🙃 quill",
    "q" * MAX_QUERY_CHARACTERS,
])
def test_hostile_questions_answer_cleanly(services: Services, docs: Path, query: str) -> None:
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    answer = services.knowledge.answer(query[:MAX_QUERY_CHARACTERS])

    assert answer.text == NOT_FOUND or answer.text.startswith(OFFLINE_NOTE)
    assert all(reference.startswith("documents/") for reference in answer.references)
    assert services.knowledge.answer("What is the default storage quota per workspace?").references


@pytest.mark.parametrize("query", ["", "   \n\t", "q" * (MAX_QUERY_CHARACTERS + 1)])
def test_empty_and_over_long_questions_are_invalid(services: Services, query: str) -> None:
    with pytest.raises(InvalidArgument):
        services.knowledge.answer(query)

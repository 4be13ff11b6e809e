"""Questions that name something the documentation does not cover are not answered: a name no chunk holds,
or a rare one that only another page mentions; names are told from ordinary words by how they are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from convener.knowledge.answers import NOT_FOUND, OFFLINE_NOTE, Evidence, Passage, extractive_answer
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.scope import RARE_NAME_RARITY, compounds, family, holds_phrase, name_runs, names
from convener.services import Services
from tests.knowledge.conftest import BASE_URL, name_of


@pytest.mark.parametrize(("query", "expected"), [
    ("How do I use SQLAlchemy's async session with aiosqlite?", {"sqlalchemy"}),
    ("Can GitLab require two approvals?", {"gitlab"}),
    ("How do I train a PyTorch model on GPUs?", {"pytorch", "gpu"}),
    ("In VS Code's panel, how?", {"vs", "code"}),
    ("Kubernetes: how do I route traffic?", set()),  # a capital starting a sentence is no sign of a name
    ("I'm new here. Where's the guide?", set()),  # contractions and a new sentence's first word
    ("start with 'git flow feature start'", set()),
    ("why does it fail?", set()),
])
def test_names_are_the_words_written_as_names(query: str, expected: set[str]) -> None:
    assert names(query) == expected


def test_a_question_naming_a_tool_no_page_mentions_is_not_found(services: Services, docs: Path) -> None:
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    # Every other word is supported by one sentence of the configuration page.
    answer = services.knowledge.answer("What is the default storage quota of a workspace in Terraform?")

    assert answer.text == NOT_FOUND
    assert answer.references == []


def test_the_same_word_starting_the_question_is_not_taken_for_a_name(services: Services, docs: Path) -> None:
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    answer = services.knowledge.answer("Terraform: what is the default storage quota of a workspace?")

    assert answer.text.startswith(OFFLINE_NOTE)
    assert answer.references[0] == name_of("admin/configuration.html")


def test_a_name_the_documentation_uses_does_not_stop_an_answer(services: Services, docs: Path) -> None:
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    answer = services.knowledge.answer("How do I restore the newest backup with Quill?")

    assert answer.references[0] == name_of("admin/backups.rst")


RESTORE = Passage("documents/x/restore.html",
                  "To restore a backup, stop the server and copy the backup folder back in place.", 0,
                  "Restoring › Steps")
MENTION = Passage("documents/x/history.html",
                  "Early versions were tested on Zephyrix before the first release.", 0, "History")
RARITY = {"restor": 3.0, "backup": 2.0, "folder": 2.0, "zephyrix": RARE_NAME_RARITY + 1}


def test_a_rare_name_held_only_by_another_page_than_the_answer_is_not_found() -> None:
    answer = extractive_answer("How do I restore a backup folder on Zephyrix?", [RESTORE, MENTION],
                               Evidence(RARITY))

    assert answer.text == NOT_FOUND


def test_a_rare_name_held_by_the_page_that_answers_is_answered() -> None:
    held = Passage(RESTORE.document, RESTORE.content + " The same steps restore a backup on Zephyrix.", 0,
                   RESTORE.heading)

    answer = extractive_answer("How do I restore a backup folder on Zephyrix?", [held, MENTION],
                               Evidence(RARITY))

    assert answer.references[0] == RESTORE.document


def test_a_rare_ordinary_word_is_no_name() -> None:
    answer = extractive_answer("How do I restore a backup folder on zephyrix?", [RESTORE, MENTION],
                               Evidence(RARITY))

    assert answer.references[0] == RESTORE.document


EVEN = {"ledger": 2.0, "rollup": 2.0, "nightly": 2.0, "harbor": 2.0}
HALF = Passage("documents/x/ledger.html", "The ledger rollup starts after the last import.", 0, "Notes")
"""Holds half of each question below: less than a question naming something needs, enough for one that
does not."""


def test_a_question_naming_nothing_is_answered_on_less_support() -> None:
    answer = extractive_answer("ledger rollup nightly harbor?", [HALF], Evidence(EVEN))

    assert answer.references == [HALF.document]


def test_a_question_naming_something_needs_more_support() -> None:
    assert extractive_answer("ledger rollup nightly Harbor?", [HALF], Evidence(EVEN)).text == NOT_FOUND


def test_a_name_the_documentation_uses_everywhere_counts_as_naming_nothing() -> None:
    evidence = Evidence(EVEN, common=frozenset({"harbor"}))

    assert extractive_answer("ledger rollup nightly Harbor?", [HALF], evidence).references == [HALF.document]


@pytest.mark.parametrize(("query", "common", "expected"), [
    ("How do I configure a GitHub Actions workflow?", set(), [("github", "actions")]),
    ("How do I set up Entity Framework Core with it?", set(), [("entity", "framework", "core")]),
    ("Open it in DB Browser for SQLite", set(), [("db", "browser")]),
    ("In SQLite FTS5, how do I rank?", {"sqlite"}, []),  # the documentation's own subject qualifies a name
    ("Are SQLite's JSON functions fast?", set(), []),  # a possessive ends a name
    ("Does GitHub, GitLab or Gitea mirror it?", set(), []),  # names apart, not one name
    ("Kubernetes Ingress: how?", set(), []),  # the first word of a sentence is no sign of a name
])
def test_name_runs_are_names_of_several_words_written_together(query: str, common: set[str],
                                                             expected: list[tuple[str, ...]]) -> None:
    assert name_runs(query, common) == expected


def test_a_phrase_is_held_whatever_its_case_and_punctuation_between() -> None:
    assert holds_phrase("Runs on GitHub-actions too.", ("github", "actions"))
    assert not holds_phrase("GitHub runs the actions.", ("github", "actions"))
    assert not holds_phrase("See MyGitHub Actionsfile.", ("github", "actions"))


MIRROR_MD = """# Quill Mirror

Quill Mirror copies every backup to a second server. To restore the newest backup from Quill Mirror, run
`quill restore --mirror latest`.
"""


def test_a_name_of_several_words_no_page_holds_together_is_not_found(services: Services, docs: Path) -> None:
    (docs / "mirror.md").write_text(MIRROR_MD, encoding="utf-8")
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    # "Homebrew" is on the installation page and "Mirror" on the mirror's; "Homebrew Mirror" on none.
    unheld = services.knowledge.answer("How do I restore the newest backup from Homebrew Mirror?")
    held = services.knowledge.answer("How do I restore the newest backup from Quill Mirror?")

    assert unheld.text == NOT_FOUND
    assert held.references[0] == name_of("mirror.md")


def test_an_unheld_name_of_several_words_stops_an_answer() -> None:
    question = "How do I restore a backup folder with the Zephyrix Cloud?"
    held = Passage(RESTORE.document, RESTORE.content + " Zephyrix keeps it in the cloud.", 0, RESTORE.heading)
    rarity = {**RARITY, "cloud": 2.0}

    assert extractive_answer(question, [held], Evidence(rarity)).references == [RESTORE.document]
    assert extractive_answer(question, [held], Evidence(rarity, unheld=(("zephyrix", "cloud"),))).text == NOT_FOUND


def test_compounds_are_the_hyphenated_words_split_at_their_hyphens() -> None:
    assert compounds("Use git-flow's 'git flow start' or a two-factor up-to-date key") == [
        ("git", "flow"), ("two", "factor"), ("up", "to", "date")]


def test_a_family_is_what_the_documentation_names_with_a_prefix() -> None:
    assert family(["Run git-add, then Git-Commit; not legit-x or git-", "git-add again"], "git") == {"add", "commit"}


COMMANDS_MD = "# Commands\n\n" + "\n\n".join(f"The quill-task{index} command runs task {index}." for index in range(60))


def test_a_hyphenated_name_of_the_documentation_s_own_kind_that_it_lacks_is_not_found(
        services: Services, docs: Path) -> None:
    question = "How do I restore the newest backup with quill-mirror?"
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    assert services.knowledge.answer(question).references[0] == name_of("admin/backups.rst")

    # With sixty commands named "quill-…", "quill-mirror" reads as a command the documentation does not have.
    (docs / "commands.md").write_text(COMMANDS_MD, encoding="utf-8")
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))

    assert services.knowledge.answer(question).text == NOT_FOUND
    assert services.knowledge.answer("How do I restore the newest backup with quill-task7?").text != NOT_FOUND

"""How the offline answer picks the pages it quotes and references, on passages given directly (no store):
pages that score alike are each quoted, a page far behind is not, and hostile questions stay clean."""

from __future__ import annotations

import pytest

from convener.knowledge.answers import NOT_FOUND, OFFLINE_NOTE, Evidence, Passage, extractive_answer
from convener.knowledge.text import MAX_QUERY_CHARACTERS, stem

STASH = Passage("documents/x/git-stash.html",
                "Use git stash to shelve uncommitted changes and git stash pop to restore them later.", 0,
                "git-stash(1) › Description")
WORKTREE = Passage("documents/x/git-worktree.html",
                   "A second worktree can shelve uncommitted changes on one branch, to restore them later.", 0,
                   "git-worktree(1) › Description")
GLOSSARY = Passage("documents/x/glossary.html",
                   "The index holds the changes that the next commit records in the repository history.", 0,
                   "Glossary › Index")
RARITY = Evidence({"shelve": 4.0, "uncommitt": 3.0, "chang": 1.0, "restor": 2.0, "later": 1.0})


def test_a_page_scoring_close_to_the_best_is_quoted_and_referenced_after_it() -> None:
    answer = extractive_answer("How do I shelve uncommitted changes and restore them later?",
                               [STASH, WORKTREE], RARITY)

    assert answer.references == [STASH.document, WORKTREE.document]
    assert STASH.content in answer.text and WORKTREE.content in answer.text


def test_a_page_far_behind_the_best_is_not_referenced() -> None:
    answer = extractive_answer("How do I shelve uncommitted changes and restore them later?",
                               [STASH, GLOSSARY], RARITY)

    assert answer.references == [STASH.document]
    assert GLOSSARY.content not in answer.text


@pytest.mark.parametrize("query", ["", "the of and to a in", "配額は何ギガバイトですか", "shelve " * 500,
                                   "q" * MAX_QUERY_CHARACTERS, "🙂 stash?!"])
def test_hostile_questions_give_not_found_or_quotes(query: str) -> None:
    answer = extractive_answer(query, [STASH, WORKTREE, GLOSSARY], RARITY)

    assert answer.text == NOT_FOUND or answer.text.startswith(OFFLINE_NOTE)
    assert len(answer.references) == len(set(answer.references)) <= 3


def test_words_of_how_a_question_is_put_do_not_weigh() -> None:
    # Rare in technical pages, "actually", "trying", "stuff" and "somewhere" would outweigh "shelve".
    answer = extractive_answer("I'm actually trying to shelve my stuff somewhere, how?", [GLOSSARY, STASH], RARITY)

    assert answer.references[0] == STASH.document


EVEN = Evidence({word: 2.0 for word in ("quorum", "lattice", "beacon", "harbor", "zephyr")})
SCATTERED = Passage("documents/x/notes.html", "The quorum option is listed first. The lattice option is listed "
                    "second. The beacon option is listed third.", 0, "Notes")
TOGETHER = Passage("documents/x/guide.html", "Set quorum, lattice and beacon before the first start.", 0, "Guide")


def test_words_scattered_over_a_page_support_less_than_one_sentence_holding_them() -> None:
    # Both pages hold three of the question's five words alike; only one has a sentence that holds all three.
    # "Quorum", written as a name, holds the question to the bar of one naming something (see test_scope).
    question = "the Quorum lattice beacon harbor zephyr?"

    assert extractive_answer(question, [SCATTERED], EVEN).text == NOT_FOUND
    assert extractive_answer(question, [TOGETHER], EVEN).references == [TOGETHER.document]


def test_a_possessive_weighs_as_its_noun() -> None:
    assert stem("git's") == stem("git") == "git"
    assert stem("coworker's") == stem("coworker")


def test_the_page_quotable_in_one_sentence_is_referenced_before_one_ranked_higher() -> None:
    # Both pages hold the same words; retrieval ranks the scattered one first.
    answer = extractive_answer("quorum lattice beacon?", [SCATTERED, TOGETHER], EVEN)

    assert answer.references[0] == TOGETHER.document

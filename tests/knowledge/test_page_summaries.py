"""With embeddings, a page's summary (its title and description) weighs in the offline answer: what the whole
page is about, which a task-worded question may share no word with. The vectors of summaries are kept between
answers, and the question's vector is made once for its search and its pages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from convener.knowledge.answers import Evidence, Passage, extractive_answer
from convener.knowledge.embeddings import Vectors
from convener.knowledge.retrieval import TEXT_VECTORS, VectorIndex
from convener.knowledge.service import _summary

TEXT = "Each working tree of the repository can have its own branch checked out."
RARITY = Evidence({"work": 1.0, "tree": 1.0, "branch": 1.0, "check": 1.0})


def passage(document: str, summary: float | None) -> Passage:
    return Passage(document, TEXT, 0, "Description", similarity=0.5, summary_similarity=summary)


def test_the_page_whose_summary_is_closest_is_referenced_first() -> None:
    question = "How can I have each working tree check out its own branch?"
    # Retrieval ranks the clone page first; the passages are the same words.
    answer = extractive_answer(question, [passage("clone.html", 0.1), passage("worktree.html", 0.9)], RARITY)
    assert answer.references[0] == "worktree.html"

    answer = extractive_answer(question, [passage("clone.html", None), passage("worktree.html", None)], RARITY)
    assert answer.references[0] == "clone.html"


def test_a_summary_is_the_title_and_a_description_that_says_more() -> None:
    assert _summary("git-worktree(1)", "git-worktree - Manage multiple working trees") == \
        "git-worktree(1): git-worktree - Manage multiple working trees"
    assert _summary("About SQLite", "SQLite") == "About SQLite"
    assert _summary("Backups and restores", "Backups and restores") == "Backups and restores"
    assert _summary("Backups", "") == "Backups"


class CountingEmbedder:
    """Unit vectors on two axes ("tree" and anything else), counting the texts it is asked to embed."""

    model = "counting"

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.embedded += texts
        return np.array([[1.0, 0.0] if "tree" in text else [0.0, 1.0] for text in texts], dtype=np.float32)


def test_closeness_keeps_summary_vectors_and_the_questions() -> None:
    embedder = CountingEmbedder()
    index = VectorIndex(embedder)

    assert index.closeness("a tree", ["worktree", "clone", "worktree"]) == [1.0, 0.0, 1.0]
    assert embedder.embedded == ["worktree", "clone", "a tree"]
    assert index.closeness("a tree", ["clone", "log"]) == [0.0, 0.0]
    assert embedder.embedded[3:] == ["log"]  # the question's vector and "clone"'s were kept
    assert index.closeness("a tree", []) == []


def test_closeness_keeps_at_most_its_bound_of_vectors() -> None:
    index = VectorIndex(CountingEmbedder())
    for start in range(0, TEXT_VECTORS + 10, 1000):
        index.closeness("q", [f"page {n}" for n in range(start, min(start + 1000, TEXT_VECTORS + 10))])
    assert len(index._texts) == TEXT_VECTORS
    # more texts than it keeps, in one call
    assert len(index.closeness("q", [f"other {n}" for n in range(TEXT_VECTORS + 5)])) == TEXT_VECTORS + 5
    assert len(index._texts) == TEXT_VECTORS

"""Chunks follow the heading structure, stay under the size cap, and are exact slices of their document."""

from __future__ import annotations

from convener.knowledge.chunking import byte_offsets, chunk_markdown
from convener.knowledge.retrieval import Ranked, fuse
from convener.knowledge.text import query_terms, sentences

GUIDE = """Intro before any heading.

# Guide

## Install

Run `pip install x`. Then start it!

### Linux

```sh
# a comment, not a heading
apt install x
```

## Empty section

## Configure

Setting
-------

Set `A=1`. See [the docs](http://x) for é and ü.
"""


def test_each_section_is_a_chunk_headed_by_its_path_and_empty_sections_fold_into_the_next() -> None:
    chunks = chunk_markdown("Guide", GUIDE, min_characters=0)

    assert [c.heading for c in chunks] == ["Guide", "Guide › Install", "Guide › Install › Linux",
                                           "Guide › Setting"]  # a setext H2 ends "## Configure"
    assert "# a comment, not a heading" in chunks[2].content
    assert chunks[3].content.startswith("## Empty section")


def test_small_sections_join_their_neighbours_under_the_cap() -> None:
    page = ("# git-stash(1)\n\n## NAME\n\ngit-stash - Stash the changes away\n\n## DESCRIPTION\n\n"
            + "Use git stash to record the working directory. " * 8 + "\n\n## GIT\n\nPart of the git(1) suite\n")

    chunks = chunk_markdown("git-stash(1)", page)

    assert len(chunks) == 1
    assert chunks[0].content == page
    assert chunks[0].heading == "git-stash(1) › DESCRIPTION"
    assert len(chunk_markdown("git-stash(1)", page, min_characters=0)) == 3


def test_chunks_are_exact_slices_with_utf8_byte_offsets() -> None:
    chunks = chunk_markdown("Guide", GUIDE, min_characters=0)
    encoded = GUIDE.encode()

    for chunk, (start, end) in zip(chunks, byte_offsets(GUIDE, chunks), strict=True):
        assert GUIDE[chunk.start:chunk.end] == chunk.content
        assert encoded[start:end] == chunk.content.encode()


def test_a_long_section_is_cut_at_paragraphs_under_the_cap_and_nothing_is_lost() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 40 for i in range(40)]
    text = "# Long\n\n" + "\n\n".join(paragraphs) + "\n"

    chunks = chunk_markdown("Long", text, max_characters=500)

    assert len(chunks) > 1
    assert all(len(c.content) <= 500 for c in chunks)
    assert "".join(c.content for c in chunks) == text
    assert all(c.content.rstrip().endswith(("word", "Long")) for c in chunks)


def test_a_paragraph_longer_than_the_cap_is_still_cut() -> None:
    text = "x" * 5000

    chunks = chunk_markdown("Blob", text, max_characters=1000)

    assert [len(c.content) for c in chunks] == [1000] * 5


def test_query_terms_drop_filler_and_keep_the_topic() -> None:
    assert query_terms("How do I temporarily put away my uncommitted changes?") == [
        "temporarily", "put", "away", "uncommitted", "changes"]
    assert query_terms("how do I do it") == []
    assert query_terms('"NEAR" OR quill*') == ["near", "quill"]


def test_sentences_are_prose_only_and_exact() -> None:
    spans = list(sentences(GUIDE))
    found = [GUIDE[a:b] for a, b in spans]

    assert "Run `pip install x`." in found and "Then start it!" in found
    assert not any("apt install" in s or s.startswith("#") for s in found)


def test_reciprocal_rank_fusion_rewards_agreement_and_scales_to_one() -> None:
    lexical = [Ranked(1, 9.0), Ranked(2, 5.0), Ranked(3, 1.0)]
    semantic = [Ranked(1, 0.9), Ranked(3, 0.8), Ranked(4, 0.1)]

    fused = fuse([lexical, semantic])

    assert [r.row_id for r in fused] == [1, 3, 2, 4]
    assert fused[0].score == 1.0
    assert all(0.0 < r.score <= 1.0 for r in fused)

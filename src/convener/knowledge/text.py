"""Words and sentences: the one tokenizer the query, the answer composer and the support check share.

Search itself tokenizes in the engine (FTS5's Porter tokenizer, PostgreSQL's ``english`` configuration);
this module only decides which words of a query are worth looking for, and cuts text into sentences that
can be quoted verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from convener.outside.limits import KNOWLEDGE_QUERY_CHARACTERS

MAX_QUERY_CHARACTERS = KNOWLEDGE_QUERY_CHARACTERS
"""Google's limit on a query; longer ones are INVALID_ARGUMENT."""

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
"""A word: letters and digits, an apostrophe inside it kept ("Git's", "don't")."""

STOPWORDS = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "let's", "me", "more", "most", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "per", "same", "she", "should", "shouldn't", "so", "some", "such", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "wasn't", "we", "were", "weren't", "what", "what's", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "won't", "would", "wouldn't", "you", "your", "yours", "yourself", "yourselves", "use", "used", "using", "want", "way", "get", "make", "also", "via", "just", "e.g", "i.e", "something", "anything", "someone"])
"""English function words, and question filler ("how do I use …") that says nothing about the topic."""


def words(text: str) -> list[str]:
    """Lowercased words of ``text`` (letters and digits; an apostrophe inside a word stays)."""
    return [match.group().lower().replace("’", "'") for match in WORD.finditer(text)]


def query_terms(text: str) -> list[str]:
    """The distinct words of a query worth searching for, in order: no stopwords, no lone letters."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
            seen.setdefault(word, None)
    return list(seen)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper, enough to match "branches"/"branch", "rebasing"/"rebase", "configured"/
    "configure" between a question and a sentence. Not Porter: it only has to agree with itself. A possessive
    is its noun ("Git's" is "git"), not a rarer word of its own."""
    if word.endswith("'s") and len(word) > 3:
        word = word[:-2]
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("edly", ""), ("ed", ""), ("es", ""),
                         ("ly", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss" if suffix == "s" else "\0"):
            return word[: len(word) - len(suffix)] + keep
    return word


def stems(text: str) -> set[str]:
    return {stem(word) for word in words(text) if word not in STOPWORDS}


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9`*_])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_NOT_PROSE = re.compile(r"^\s*(#{1,6}\s|\||[-=*_]{3,}\s*$|<)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")


def sentences(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` character spans of the prose sentences of Markdown ``text``: paragraphs and list
    items cut at sentence ends. Headings, tables, code blocks and rules are not sentences. Each span is an
    exact slice of ``text``, so a sentence can be quoted verbatim and traced back."""
    position = 0
    in_code = False
    paragraph: tuple[int, int] | None = None
    for line in text.splitlines(keepends=True):
        start, end = position, position + len(line)
        position = end
        if _FENCE.match(line):
            in_code = not in_code
            yield from _flush(text, paragraph)
            paragraph = None
            continue
        if in_code or not line.strip() or _NOT_PROSE.match(line):
            yield from _flush(text, paragraph)
            paragraph = None
            continue
        mark = _LIST_MARK.match(line)
        if mark:
            yield from _flush(text, paragraph)
            paragraph = (start + mark.end(), end)
        elif paragraph is None:
            paragraph = (start + len(line) - len(line.lstrip()), end)
        else:
            paragraph = (paragraph[0], end)
    yield from _flush(text, paragraph)


def _flush(text: str, span: tuple[int, int] | None) -> Iterator[tuple[int, int]]:
    if span is None:
        return
    start, end = span
    block = text[start:end]
    cursor = 0
    for match in _SENTENCE_END.finditer(block):
        yield from _trimmed(text, start + cursor, start + match.start())
        cursor = match.end()
    yield from _trimmed(text, start + cursor, end)


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end - start >= 2:
        yield start, end

"""A column said in the words of its description: a true/false one by its condition ("nests observed with
both eggs" for ``clutch_completion``, "Whether the nest was observed with a full clutch of two eggs"), any
other by what its description says it is ("airline code" for ``carrier``, "Two-letter airline code").

A yes/no column's name is often a noun ("clutch completion") while people ask with the verb its description
uses. Only a description that reads "Whether <the row> <was verb-ed> …" is used, and only when the question
says that verb and at least one more content word of the description close after it: the verb alone ("the
nests observed") says too little to be the condition.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from convener.analytics.planner.vocabulary import parting
from convener.analytics.shapes import TableInfo
from convener.analytics.wording import CONTENT_STOPWORDS, Token, parted, phrase, stem

_REACH = 5
"""How many words after the verb the description's other words may come ("observed with both of its eggs")."""


def described_spans(tokens: Sequence[Token], content: Sequence[int], description: str, name: Sequence[str],
                    row_words: set[str]) -> list[tuple[int, int]]:
    """Spans (start, end) of ``tokens`` that say the condition of a true/false column described by
    ``description`` (whose name's stems are ``name``; a verb the name already says is read by the name)."""
    match = re.match(r"\s*whether\s+(.*)", description, re.IGNORECASE | re.DOTALL)
    if not match:
        return []
    said = re.split(r"[(;:]", match.group(1))[0]
    verb = next((stem(word) for word in re.findall(r"[a-z]+", said.lower()) if word.endswith("ed")), None)
    if verb is None or verb in name:
        return []
    others = {word for word in phrase(said) if word != verb and word not in row_words and len(word) > 2}
    counts = _counts(said)
    spans = []
    for index in content:
        if tokens[index].kind != "word" or tokens[index].stem != verb:
            continue
        last = None
        strays = 0
        for after in range(index + 1, min(len(tokens), index + 1 + _REACH)):
            token = tokens[after]
            if token.kind == "word" and token.stem in others:
                told = _count_before(tokens, after)
                if told is not None and token.stem in counts and counts[token.stem] != told:
                    break  # "observed with an egg" is not "observed with two eggs"
                last = after
            elif not token.is_stopword and token.kind != "number":
                strays += 1
                if strays > 1:
                    break
        if last is not None:
            spans.append((index, last + 1))
    return spans


_HOW_LATE = frozenset({"late", "early", "later", "earlier", "behind", "ahead", "schedule", "time", "promptly"})
_NEVER = re.compile(r"\b(?:never|not|didn't|did not|no longer)\s+([a-z]+)", re.IGNORECASE)


_PHRASAL_FORMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "depart": (("took", "off"), ("take", "off"), ("taken", "off")),
}
"""Phrasal verbs that say what a verb a description uses (by its stem) says: a flight that never departed never
took off. ("Miles flown" is not one: those who ask it mean every flight's distance, as the references of every
set do.)"""


def unsaid_spans(tokens: Sequence[Token], content: Sequence[int], description: str,
                 row_words: set[str]) -> list[tuple[int, int]]:
    """Where the question says what a true/false column's description says its true rows never did ("departed
    flights" for ``cancelled``, "Whether the flight was cancelled (it never departed)", or in other words "took
    off"): each such span names the column false, said of the rows themselves: right before their
    noun ("departed flights"), or ending its clause ("flights that actually departed", "that did depart, what
    …", "flights that took off and …"). Followed by anything else it says how or where they did it ("departed
    from JFK", "departed more than an hour late"), as any of them did."""
    verbs = {stem(word.lower()) for word in _NEVER.findall(description)}
    said = {(verb,) for verb in verbs} | {words for verb in verbs for words in _PHRASAL_FORMS.get(verb, ())}
    words = set(content)

    def of_the_rows(index: int, end: int) -> bool:
        if index > 0 and tokens[index - 1].norm in _HOW_LATE:
            return False  # "late departing": when they did it
        if end >= len(tokens) or parted(tokens, end - 1, end):
            return True  # the end of the question, or punctuation after the words
        return tokens[end].stem in row_words or tokens[end].norm in ("only", "and")

    return [(index, index + len(words_said)) for index in content for words_said in said
            if all(index + offset in words and tokens[index + offset].kind == "word"
                   and (tokens[index + offset].stem if offset == 0 else tokens[index + offset].norm) == word
                   for offset, word in enumerate(words_said)) and of_the_rows(index, index + len(words_said))]


_COUNT_WORDS = {"a": 1, "an": 1, "one": 1, "single": 1, "both": 2, "two": 2, "pair": 2, "three": 3}
"""Words that say how many of a thing a phrase is about ("both eggs", "an egg")."""


def _counts(said: str) -> dict[str, int]:
    """How many of each noun a description says ("a full clutch of two eggs": egg → 2)."""
    words = re.findall(r"[a-z0-9]+", said.lower())
    return {stem(noun): int(word) if word.isdigit() else _COUNT_WORDS[word]
            for word, noun in zip(words, words[1:], strict=False) if word.isdigit() or word in _COUNT_WORDS}


def _count_before(tokens: Sequence[Token], index: int) -> int | None:
    """How many the word right before ``index`` says there are ("both eggs": 2), if it says."""
    if index == 0:
        return None
    before = tokens[index - 1]
    if before.number is not None and before.is_integer:
        return int(before.number)
    return _COUNT_WORDS.get(before.norm)


def what_it_is_spans(tokens: Sequence[Token], content: Sequence[int], description: str, name: Sequence[str],
                     text: str) -> list[tuple[int, int]]:
    """Spans (start, end) of two or three words of ``tokens`` side by side that the first clause of
    ``description`` (what the column is: its first words, up to a word such as "of", a number or a ";", ":",
    "(" or ",") says side by side, in that order
    ("airline code" in "Two-letter airline code; the airlines table gives its name"). Not a word alone ("code"
    is every code's), nor words the column's name (stems ``name``) says already ("full name" is the name's,
    "flight number" the flight's), nor a name in capitals ("New York" in "the New York airport …")."""
    head = []
    for word in re.findall(r"[a-z0-9]+", re.split(r"[;:(,]", description)[0].lower()):
        if word in CONTENT_STOPWORDS or word.isdigit():
            break  # "FAA code of the New York airport the flight left from": what it is ends at "of"
        head.append(stem(word))
    said = tuple(head)
    runs = {said[start:start + size] for size in (2, 3) for start in range(len(said) - size + 1)}
    named = set(name)
    words = set(content)
    spans = []
    for size in (2, 3):
        for first in range(len(tokens) - size + 1):
            window = range(first, first + size)
            if any(i not in words or tokens[i].kind != "word" or tokens[i].stem in named for i in window):
                continue
            if all(tokens[i].text[:1].isupper() for i in window) and first > 0:
                continue
            if any(parting(text[tokens[i].end:tokens[i + 1].start]) for i in window[:-1]):
                continue
            last = window[-1]
            if last + 1 in words and "(" in text[tokens[last].end:tokens[last + 1].start]:
                # "a nitrogen isotope (delta 15N) reading": glossed, the parenthesis says the column (not one
                # read already: "by the hour of their scheduled departure (0-23)")
                continue
            if tuple(tokens[i].stem for i in window) in runs:
                spans.append((first, first + size))
    return spans


_CAPITALISED_RUN = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+){1,3}\b")


@lru_cache(maxsize=1024)
def described_initials(table: TableInfo) -> dict[str, tuple[str, ...]]:
    """The initials of each name of two to four capitalised words in a table's description, with the stems
    of its words ("nyc": ("new", "york", "citi") where the description says "New York City")."""
    found: dict[str, tuple[str, ...]] = {}
    for match in _CAPITALISED_RUN.finditer(table.description or ""):
        words = match.group(0).split()
        found["".join(word[0] for word in words).lower()] = phrase(match.group(0))
    return found

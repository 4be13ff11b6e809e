"""Whether a question is about something the documentation covers at all, judged by the names it uses.

An out-of-scope question usually names a product, tool or service ("Kubernetes", "SQLAlchemy's", "GitLab")
that the documentation never mentions, while the rest of it is ordinary vocabulary the documentation shares
("configure", "branch", "table"). Users write such names as names: capitalised inside a sentence, or with
capitals inside the word. Their other words are no guide: a question put in a user's own words is full of
words the documentation never uses ("park my half-done work", "a teammate's commits"), so an absent
lower-case word only lowers the answer's support; an absent *name* means the question is about something
else. On every question of ``benchmarks/knowledge_gold/`` that has an answer, none names a thing the
documentation lacks, while most out-of-scope ones do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set

from convener.knowledge.text import STOPWORDS, WORD, stem

RARE_NAME_RARITY = math.log(100)
"""A name this rare (IDF over the index's chunks: held by fewer than about one chunk in 100) must be held by
the page an answer rests on: "Visual Studio" or "GitHub" in a question about Git's manual matches a passing
mention somewhere, not the page that would answer it. (On the tuning questions, one in 150 catches one
out-of-scope question fewer and one answerable question more.)"""
_SENTENCE_MARKS = frozenset(".!?:;\"'‘“([—–-")
"""After these a capital starts a sentence, a quotation or an aside, and says nothing about a name."""


def names(query: str) -> frozenset[str]:
    """Stems of the words ``query`` writes as names: capitalised other than at the start of a sentence, or
    with a capital inside ("GitHub", "SQLite", "JVM"). A possessive is its name ("SQLAlchemy's"); a
    contraction ("I'm", "Where's") and a function word are not names."""
    found = set()
    for match in WORD.finditer(query):
        word = match.group().replace("’", "'")
        if "'" in word:
            word, _, tail = word.partition("'")
            if tail.lower() != "s":
                continue
        if len(word) < 2 or word.lower() in STOPWORDS:
            continue
        before = query[:match.start()].rstrip()
        initial = not before or before[-1] in _SENTENCE_MARKS
        if any(letter.isupper() for letter in word[1:]) or (word[0].isupper() and not initial):
            found.add(stem(word.lower()))
    return frozenset(found)


def names_elsewhere(named: Set[str], absent: Set[str], rarity: Mapping[str, float], held: Set[str]) -> bool:
    """Whether the question names something the documentation does not cover: a name no chunk holds, or a
    rare one (``RARE_NAME_RARITY``) that the page the answer rests on does not hold (``held``, its words)."""
    return any(term in absent or (rarity.get(term, 0.0) >= RARE_NAME_RARITY and term not in held)
               for term in named)

"""Whether a question is about something the documentation covers at all, judged by the names it uses.

An out-of-scope question usually names a product, tool or service ("Kubernetes", "SQLAlchemy's", "GitLab")
that the documentation never mentions, while the rest of it is ordinary vocabulary the documentation shares
("configure", "branch", "table"). Users write such names as names: capitalised inside a sentence, or with
capitals inside the word. Their other words are no guide: a question put in a user's own words is full of
words the documentation never uses ("park my half-done work", "a teammate's commits"), so an absent
lower-case word only lowers the answer's support; an absent *name* means the question is about something
else. On every question of ``benchmarks/knowledge_gold/`` that has an answer, none names a thing the
documentation lacks, while most out-of-scope ones do. A name of several words ("GitHub Actions", "DB Browser")
is one thing: the documentation covers it only where it holds the words together, not where it mentions
"GitHub" on one page and "actions" on every other (none of the answerable questions names several words
the documentation never holds together; 2 of git-doc's out-of-scope ones answered before do).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence, Set

from convener.knowledge.text import STOPWORDS, WORD, stem

RARE_NAME_RARITY = math.log(100)
"""A name this rare (IDF over the index's chunks: held by fewer than about one chunk in 100) must be held by
the page an answer rests on: "Visual Studio" or "GitHub" in a question about Git's manual matches a passing
mention somewhere, not the page that would answer it. (On the tuning questions, one in 150 catches one
out-of-scope question fewer and one answerable question more.)"""
FAMILY_SIZE = 50
"""A prefix the documentation makes this many different hyphenated names with, in the chunks a search for it
finds first, is how it names its own things ("git-add", "git-commit": 121 in Git's manual); a name of that
form it never holds ("git-flow", "git-annex") is another project's. Prefixes of ordinary compounds stay far
below ("pre-" 24, "multi-" 17, "case-" 4 in the two manuals measured)."""
_COMPOUND = re.compile(r"(?<![\w-])[^\W_]+(?:-[^\W_]+)+")
_SENTENCE_MARKS = frozenset(".!?:;\"'‘“([—–-")
"""After these a capital starts a sentence, a quotation or an aside, and says nothing about a name."""


def names(query: str) -> frozenset[str]:
    """Stems of the words ``query`` writes as names: capitalised other than at the start of a sentence, or
    with a capital inside ("GitHub", "SQLite", "JVM"). A possessive is its name ("SQLAlchemy's"); a
    contraction ("I'm", "Where's") and a function word are not names."""
    return frozenset(stem(word.lower()) for word, _, _ in _names(query))


def name_runs(query: str, common: Set[str] = frozenset()) -> list[tuple[str, ...]]:
    """The names of several words ``query`` writes ("GitHub Actions", "Entity Framework Core"): two or more
    words written as names, one after the other with only spaces between, lowercased. Leading words the
    documentation uses everywhere (``common``, stems) are its own subject qualifying the name ("SQLite FTS5"
    is FTS5 of SQLite), so they are left off, and a run left with one word is no run. A possessive ends a run:
    "SQLite's JSON functions" are SQLite's, not a thing called "SQLite JSON"."""
    runs: list[list[str]] = []
    end = -1
    for word, start, stop in _names(query):
        if runs and not query[end:start].strip() and not _possessive(query[:end]):
            runs[-1].append(word.lower())
        else:
            runs.append([word.lower()])
        end = stop
    found = []
    for run in runs:
        while run and stem(run[0]) in common:
            run.pop(0)
        if len(run) > 1:
            found.append(tuple(run))
    return found


def holds_phrase(text: str, phrase: Sequence[str]) -> bool:
    """Whether ``text`` holds the words of ``phrase`` together, in order, whatever their case and whatever
    spaces or punctuation stand between them ("GitHub Actions", "GitHub-actions")."""
    pattern = r"(?<![^\W_])" + r"[\W_]+".join(re.escape(word) for word in phrase) + r"(?![^\W_])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def compounds(query: str) -> list[tuple[str, ...]]:
    """The hyphenated words of ``query`` ("git-flow's", "two-factor"), lowercased, split at their hyphens."""
    return [tuple(match.group().lower().split("-")) for match in _COMPOUND.finditer(query)]


def family(texts: Iterable[str], prefix: str) -> set[str]:
    """What follows ``prefix`` and a hyphen in ``texts``: the names the documentation makes with it."""
    pattern = re.compile(r"(?<![\w-])" + re.escape(prefix) + r"-([^\W_]+)", re.IGNORECASE)
    return {found.lower() for text in texts for found in pattern.findall(text)}


def _names(query: str) -> list[tuple[str, int, int]]:
    """Each word of ``query`` written as a name (see ``names``), possessive dropped, with where it stands."""
    found = []
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
            found.append((word, match.start(), match.end()))
    return found


def _possessive(text: str) -> bool:
    return text.replace("’", "'").lower().endswith("'s")


def names_elsewhere(named: Set[str], absent: Set[str], rarity: Mapping[str, float], held: Set[str]) -> bool:
    """Whether the question names something the documentation does not cover: a name no chunk holds, or a
    rare one (``RARE_NAME_RARITY``) that the page the answer rests on does not hold (``held``, its words)."""
    return any(term in absent or (rarity.get(term, 0.0) >= RARE_NAME_RARITY and term not in held)
               for term in named)

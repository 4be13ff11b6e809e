"""Changed facts: where an answer contradicts the expected one, whatever the words they share.

Similarity, read from words or from sentence embeddings, rewards overlap: "Order A-1001 is shipped." shares
all but one word with "Order A-1001 is pending." and embeds close to it. This module reads the *facts* of
both texts into slots and reports a :class:`Conflict` when the expected text asserts a fact the actual one
replaces or denies:

- *figures* (numbers, amounts, times, dates, identifiers, as read by :func:`convener.llm.offline_judge.read`):
  an expected figure absent from the answer while the answer states another of the same kind;
- *days* (weekdays, today/tomorrow/yesterday) and *periods* (week, month, year): same rule;
- *states* from small groups of mutually exclusive statuses (pending / shipped / delivered / cancelled,
  approved / rejected, in stock / out of stock, locked / unlocked ...): the answer states a status of the
  group the expected text does not, and does not state the expected one; or it negates the expected one;
- *names* (capitalised words that are not sentence openers, or are used as names elsewhere in the pair):
  an expected name missing while the answer names another;
- *negation*: a word negated on one side only, when the other side has no negation at all, or when the
  negations swapped places (each side negates a word the other affirms).

A paraphrase keeps its facts, so it does not trip these rules: a figure written another way (``three``,
``15:45``, ``12 March``) is the same figure, a status said in other words ("left our warehouse") is no
status at all here, and a negation moved within the sentence ("can't be refunded" for "unable to offer a
refund") is not a flip because both sides negate. Known limits: a fact said with words outside the lists
("unlimited data" for "20 GB") is not read; a status implied by tense alone ("has been completed" for "is
being processed") is not read either.

Work is bounded: each text is read up to :data:`MAX_CHARACTERS`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from convener.llm.offline_judge import NEGATIONS, STOP_WORDS, Figure, claims, concept, found, normalise, read

MAX_CHARACTERS = 20_000
"""Characters of each text the detector reads: a longer text is judged on its beginning (bounded work)."""


@dataclass(frozen=True)
class Conflict:
    """One fact the answer contradicts: which slot, what the expected text says, what the answer says."""

    slot: str
    expected: str
    actual: str

    def describe(self) -> str:
        return f"{self.slot}: expected {self.expected}, the response says {self.actual}"


# -- states -----------------------------------------------------------------------------------------

STATE_GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "status": {
        "pending": ("pending", "processing", "being processed", "waiting", "queued", "in the queue", "on hold",
                    "under review", "being reviewed", "in review", "ongoing", "underway", "in progress"),
        "shipped": ("shipped", "dispatched", "in transit", "on its way", "on the way"),
        "delivered": ("delivered", "arrived"),
        "cancelled": ("cancelled", "canceled", "called off"),
        "returned": ("returned to the sender", "returned to sender", "sent back to the sender"),
        "approved": ("approved", "accepted", "granted"),
        "rejected": ("rejected", "declined", "denied", "refused", "turned down"),
        "completed": ("completed", "resolved", "restored", "fixed", "finished", "back to normal"),
        "expired": ("expired", "lapsed", "no longer valid"),
        "confirmed": ("confirmed", "booked"),
        "waived": ("waived",),
    },
    "stock": {
        "in stock": ("in stock", "available now", "ships today"),
        "out of stock": ("out of stock", "sold out", "unavailable", "back-ordered", "backordered"),
    },
    "timing": {
        "delayed": ("delayed", "running late", "held up"),
        "on time": ("on time", "on schedule"),
    },
    "access": {
        "locked": ("locked", "blocked", "frozen", "suspended"),
        "unlocked": ("unlocked", "unblocked", "accessible", "reactivated"),
    },
    "validity": {
        "active": ("active", "valid"),
        "expired": ("expired", "lapsed", "no longer valid", "inactive"),
    },
    "verification": {
        "verified": ("verified",),
        "unverified": ("unverified", "not verified"),
    },
    "plan": {
        "upgraded": ("upgraded",),
        "downgraded": ("downgraded",),
    },
}
"""Statuses that exclude one another within a group, each with the phrases that state it. Kept to plain,
unambiguous status phrases: a word that often means something else ("sent", "left", "open") is left out,
which makes a paraphrase safe at the cost of missing some changes."""

_STATE_PATTERNS = [
    (group, state, re.compile(r"\b" + r"\s+".join(map(re.escape, phrase.split())) + r"\b"))
    for group, states in STATE_GROUPS.items()
    for state, phrases in states.items()
    for phrase in phrases
]

NEGATION_CUES = frozenset({"not", "never", "cannot", "unable", "nor", "neither", "without"}) | (
    NEGATIONS - {"no", "none", "nothing", "nobody", "nowhere", "nada", "aucun", "aucune", "ningun", "ninguna"})
"""Cues that negate a predicate: the next few content words are negated (a few Portuguese, Spanish and
French ones too, so that a translation keeps its polarity)."""
DETERMINER_NEGATIONS = frozenset({"no", "none", "nothing", "nobody", "zero", "nada", "aucun", "aucune",
                                  "ningun", "ninguna"})
"""Cues that negate one noun phrase only ("no fee", "no free returns"): the next content word (two when
the first is an adjective-like modifier is not told apart, so the next two)."""
PREDICATE_SCOPE = 3
DETERMINER_SCOPE = 2
_CLAUSE_BREAK = re.compile(r"[.;:!?,()\u2014\u2013]|\s-\s|\b(?:but|however|although|though|while|whereas|so|because)\b")
_LEXICAL_NEGATIONS = (
    (re.compile(r"\b(?:instead of|rather than|no longer|not any more|not anymore)\b"), "not"),
    (re.compile(r"\bfree of charge\b"), "no charge"),
    (re.compile(r"\bclosed\b"), "not open"),
)
"""Phrases that state a negation without a cue word ("Friday instead of Wednesday" is "not Wednesday",
"closed on Sundays" is "not open on Sundays"), rewritten before negations are read."""
_SKIP = frozenset(
    "under over into about after before as than up out off again also only just "
    "a an the and or to of in on at by for with from is are was were be been being am do does did have has had "
    "will would can could shall should may might must it its this that these those there any yet i we you he "
    "she they me us them my our your his her their".split()
)


@dataclass(frozen=True)
class Facts:
    """The slots of one text."""

    figures: tuple[Figure, ...]
    days: frozenset[str]
    periods: frozenset[str]
    states: frozenset[tuple[str, str]]  # (group, state) affirmed
    denied: frozenset[tuple[str, str]]  # (group, state) negated ("not shipped")
    names: frozenset[str]  # capitalised words inside sentences, casefolded
    concepts: frozenset[str]  # content words (stemmed, as the offline judge reads them)
    negated: frozenset[str]
    negates: bool  # any negation cue at all
    words: frozenset[str]  # every word, casefolded
    numerals: frozenset[str]  # digit runs, thousands separators dropped ("2 350" and "2,350" are 2350)


WEEKDAYS = {
    "monday": "Monday", "mon": "Monday", "tuesday": "Tuesday", "tue": "Tuesday", "tues": "Tuesday",
    "wednesday": "Wednesday", "wed": "Wednesday", "thursday": "Thursday", "thu": "Thursday",
    "thurs": "Thursday", "friday": "Friday", "fri": "Friday", "saturday": "Saturday", "sat": "Saturday",
    "sunday": "Sunday", "sun": "Sunday", "today": "today", "tonight": "today", "tomorrow": "tomorrow",
    "yesterday": "yesterday",
}
WEEKEND = frozenset({"Saturday", "Sunday"})
WEEKDAY_SET = frozenset({"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"})
PERIODS = {"week": "week", "weekly": "week", "weeks": "week", "month": "month", "monthly": "month",
           "months": "month", "year": "year", "yearly": "year", "annual": "year", "annually": "year",
           "years": "year"}

_NAME = re.compile(r"(?<![\w'])([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\u2014\u2013\"(]\s*|\n\s*)$")
_NOT_NAMES = frozenset(
    (
        "I Im Ive Id Ill Dr Mr Mrs Ms St Street Road Avenue Team Customer Support Service Order Ticket Gate "
        "Good News Thanks Thank Sorry Unfortunately Apologies Yes No Okay Ok Hi Hello Dear Please Great Done "
        "Confirmed Note Expect Head Use Check Email Call Your You We Our The A An It This That There Of To"
    ).casefold().split()
)
_MONTH_WORDS = frozenset(
    "january february march april may june july august september october november december".split()
)


def facts(text: str) -> Facts:
    """The slots of ``text`` (its first :data:`MAX_CHARACTERS` characters)."""
    return _facts(text[:MAX_CHARACTERS])


@functools.lru_cache(maxsize=1024)
def _facts(text: str) -> Facts:
    # Kept: a similarity reads each text's facts three times (conflicts, added and missing figures), and an
    # evaluation compares the same expected responses run after run.
    reading = read(text)
    plain = normalise(text)
    spelled = tuple(Figure(kind, value, match.group(0), loose)
                    for pattern, kind, value, loose in _SPELLED for match in pattern.finditer(plain))
    words = re.findall(r"[a-z]+", plain)
    days = frozenset(WEEKDAYS[word] for word in words if word in WEEKDAYS)
    if "weekday" in plain or "weekdays" in plain:
        days |= WEEKDAY_SET
    if "weekend" in plain:
        days |= WEEKEND
    periods = frozenset(PERIODS[word] for word in words if word in PERIODS)
    affirmed, denied = _states(plain)
    names = _names(text)
    negated, negates = _negated(plain)
    digits = re.sub(r"(?<=\d)[\s.,\u00a0\u202f](?=\d{3}\b)", "", plain)
    return Facts(reading.figures + spelled, days, periods, affirmed, denied, names, reading.concepts,
                 negated, negates, frozenset(words), frozenset(re.findall(r"(?<![a-z\d])\d+(?![a-z\d])", digits)))


_SPELLED_HOURS = {word: number for number, word in enumerate(
    "one two three four five six seven eight nine ten eleven twelve".split(), start=1)}
_SPELLED: list[tuple[re.Pattern[str], str, str, str | None]] = [
    (re.compile(r"\bnoon\b|\bmidday\b"), "time", "12:00", "12"),
    (re.compile(r"\bmidnight\b"), "time", "0:00", "12"),
    (re.compile(r"\b(?:a|one) week\b"), "number", "7", None),
    (re.compile(r"\b(?:a|one) fortnight\b"), "number", "14", None),
    (re.compile(r"\bhalf an hour\b|\bhalf a minute\b"), "number", "30", None),
    (re.compile(r"\bthe first\b"), "number", "1", None),
    (re.compile(r"\b(?:a|one) day\b"), "number", "24", None),
    *[(re.compile(rf"\bhalf past {word}\b"), "time", f"{hour}:30", None) for word, hour in _SPELLED_HOURS.items()],
    *[(re.compile(rf"\bquarter past {word}\b"), "time", f"{hour}:15", None) for word, hour in _SPELLED_HOURS.items()],
    *[(re.compile(rf"\b{word} o'?clock\b"), "time", f"{hour}:00", str(hour)) for word, hour in _SPELLED_HOURS.items()],
]
"""Times and durations written in words, read as the figures they state ("half past nine" is 9:30,
"a week" is 7 days, "a day" is 24 hours): so that a paraphrase using them keeps its figures."""


def _states(plain: str) -> tuple[frozenset[tuple[str, str]], frozenset[tuple[str, str]]]:
    affirmed: set[tuple[str, str]] = set()
    denied: set[tuple[str, str]] = set()
    taken: list[tuple[int, int]] = []
    # Longer phrases first, so that "not verified" or "no longer valid" is read before "verified"/"valid".
    for group, state, pattern in sorted(_STATE_PATTERNS, key=lambda item: -len(item[2].pattern)):
        for match in pattern.finditer(plain):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            taken.append((match.start(), match.end()))
            if _negated_at(plain, match.start()):
                denied.add((group, state))
            else:
                affirmed.add((group, state))
    return frozenset(affirmed), frozenset(denied)


def _negated_at(plain: str, at: int) -> bool:
    """Whether a negation cue stands shortly before ``at`` within the same clause ("has not shipped",
    "isn't verified", "never arrived")."""
    before = _CLAUSE_BREAK.split(plain[max(0, at - 40):at])[-1]
    cues = re.findall(r"[a-z]+", before)[-4:]
    return any(cue in NEGATION_CUES or cue in DETERMINER_NEGATIONS for cue in cues)


_TITLE = re.compile(r"\b(Dr|Mr|Mrs|Ms|Mx|Prof|St)\.")
_NOT_NAME_ENDINGS = ("ing", "ly", "ed", "ion", "ions", "ness", "ment", "ments", "s")


def _names(text: str) -> frozenset[str]:
    """Capitalised words inside sentences (sentence openers are read by :func:`_opener_conflicts`)."""
    names: set[str] = set()
    text = _TITLE.sub(r"\1", text)
    for match in _NAME.finditer(text):
        word = match.group(1)
        key = word.casefold()
        if key in _NOT_NAMES or key.rstrip("s") in WEEKDAYS or key in _MONTH_WORDS or key in STOP_WORDS:
            continue
        if not _SENTENCE_START.search(text[max(0, match.start() - 3):match.start()]):
            names.add(key)
    return frozenset(names)


def _negated(plain: str) -> tuple[frozenset[str], bool]:
    """Content words in a negation's scope, and whether the text negates anything at all."""
    for pattern, replacement in _LEXICAL_NEGATIONS:
        plain = pattern.sub(replacement, plain)
    negated: set[str] = set()
    negates = False
    for clause in _CLAUSE_BREAK.split(plain):
        left = 0
        for word in re.findall(r"[a-z]+", clause):
            if word in NEGATION_CUES:
                left, negates = PREDICATE_SCOPE, True
                continue
            if word in DETERMINER_NEGATIONS:
                left, negates = DETERMINER_SCOPE, True
                continue
            if word in _SKIP or len(word) < 2:
                continue
            if left:
                negated.add(concept(word))
                left -= 1
    return frozenset(negated), negates


# -- comparing --------------------------------------------------------------------------------------


def conflicts(expected: str, actual: str) -> list[Conflict]:
    """The facts of ``expected`` that ``actual`` contradicts (empty when none is found)."""
    if not expected.strip() or not actual.strip():
        return []
    want, got = facts(expected), facts(actual)
    found_conflicts: list[Conflict] = []
    found_conflicts.extend(_figure_conflicts(want, got))
    for slot, mine, theirs in (("day", want.days, got.days), ("period", want.periods, got.periods)):
        missing, extra = mine - theirs, theirs - mine
        if missing and extra:
            found_conflicts.append(Conflict(slot, _join(missing), _join(extra)))
    found_conflicts.extend(_state_conflicts(want, got))
    # A name is missing when the answer does not have the word at all (in any case or place), and new when
    # the expected text does not; only a missing name *and* a new one make a changed name.
    missing_names = want.names - got.words - got.concepts
    extra_names = got.names - want.words - want.concepts
    if missing_names and extra_names:
        found_conflicts.append(Conflict("name", _join(missing_names), _join(extra_names)))
    else:
        found_conflicts.extend(_opener_conflicts(expected, actual, want, got))
    flipped = _flips(want, got)
    if flipped:
        found_conflicts.append(Conflict("negation", f"{_join(flipped)} ({_polarity(want, flipped)})",
                                        _polarity(got, flipped)))
    return found_conflicts


def missing_figures(expected: str, actual: str) -> list[Figure]:
    """The figures ``expected`` states that ``actual`` does not, in any form it is read in."""
    want, got = facts(expected), facts(actual)
    return [figure for figure in want.figures if not _stated(figure, got)]


def added_figures(expected: str, actual: str) -> list[Figure]:
    """The figures ``actual`` states that ``expected`` does not (written another way is the same figure)."""
    want, got = facts(expected), facts(actual)
    return [figure for figure in got.figures if not _stated(figure, want)]


def _opener_conflicts(expected: str, actual: str, want: Facts, got: Facts) -> list[Conflict]:
    """A name opening a sentence replaced by another in the same sentence ("Emma from our returns team
    will call" / "Olivia from our returns team will call"). A capitalised opener is only a name candidate, so
    this needs the two sentences to agree otherwise (most of their words shared)."""
    out = []
    for mine, theirs in zip(_openers(expected), _openers(actual), strict=False):
        if mine is None or theirs is None or mine[0] == theirs[0]:
            continue
        if mine[0] in got.words or theirs[0] in want.words:
            continue
        rest_mine, rest_theirs = mine[1], theirs[1]
        if rest_mine and len(rest_mine & rest_theirs) * 5 >= len(rest_mine | rest_theirs) * 3:
            out.append(Conflict("name", mine[0], theirs[0]))
    return out


def _openers(text: str) -> list[tuple[str, frozenset[str]] | None]:
    """Per sentence: its first word when it may be a name (capitalised, not a function word, not ending like
    a common word), with the sentence's other words; None for a sentence opening otherwise."""
    out: list[tuple[str, frozenset[str]] | None] = []
    for sentence in claims(_TITLE.sub(r"\1", text[:MAX_CHARACTERS]))[:_MAX_SENTENCES]:
        match = _NAME.match(sentence)
        words = re.findall(r"[a-z]+", normalise(sentence))
        if match is None or not words:
            out.append(None)
            continue
        key = match.group(1).casefold()
        if (key in _NOT_NAMES or key in STOP_WORDS or key in _SKIP or key.endswith(_NOT_NAME_ENDINGS)
                or key.rstrip("s") in WEEKDAYS or key in _MONTH_WORDS):
            out.append(None)
            continue
        out.append((key, frozenset(words[1:])))
    return out


_MAX_SENTENCES = 200


def _figure_conflicts(want: Facts, got: Facts) -> list[Conflict]:
    missing = [figure for figure in want.figures if not _stated(figure, got)]
    extra = [figure for figure in got.figures if not _stated(figure, want)]
    out = []
    for kind in dict.fromkeys(figure.kind for figure in missing):
        theirs = [figure for figure in extra if figure.kind == kind]
        if theirs:
            mine = [figure for figure in missing if figure.kind == kind]
            out.append(Conflict(_KIND_NAMES[kind], _texts(mine), _texts(theirs)))
    return out


def _stated(figure: Figure, side: Facts) -> bool:
    """Whether ``side`` states ``figure``: as the offline judge finds it, or, for a time, on the same
    12-hour clock face ("3:45" for "3:45 pm"), or, for a number, as the same digits with other thousands
    separators ("2 350", "1.200" for "2,350", "1,200")."""
    if found(figure, side.figures):
        return True
    if figure.kind == "time":
        hour, minute = figure.value.split(":")
        return any(other.kind == "time" and other.value.split(":")[1] == minute
                   and int(other.value.split(":")[0]) % 12 == int(hour) % 12 for other in side.figures)
    if figure.kind == "number":
        digits = re.sub(r"\D", "", figure.text)
        return bool(digits) and digits in side.numerals
    return False


_KIND_NAMES = {"number": "number", "time": "time", "date": "date", "id": "identifier"}


def _state_conflicts(want: Facts, got: Facts) -> list[Conflict]:
    out = []
    for group in STATE_GROUPS:
        mine = {state for g, state in want.states if g == group}
        theirs = {state for g, state in got.states if g == group}
        denied_theirs = {state for g, state in got.denied if g == group}
        denied_mine = {state for g, state in want.denied if g == group}
        if mine & denied_theirs:
            out.append(Conflict(group, _join(mine & denied_theirs), "not " + _join(mine & denied_theirs)))
        elif denied_mine & theirs:
            out.append(Conflict(group, "not " + _join(denied_mine & theirs), _join(denied_mine & theirs)))
        elif mine and theirs - mine - denied_mine and not mine & theirs:
            out.append(Conflict(group, _join(mine), _join(theirs - mine)))
    return out


def _flips(want: Facts, got: Facts) -> frozenset[str]:
    """Words negated on one side only: when one side negates nothing, any word it affirms that the other
    negates; when both negate, only if the negations swapped (each side negates a word the other affirms)."""
    affirmed_want = want.concepts - want.negated
    affirmed_got = got.concepts - got.negated
    one_way = want.negated & affirmed_got
    other_way = got.negated & affirmed_want
    if want.negates and not got.negates:
        return frozenset(one_way)
    if got.negates and not want.negates:
        return frozenset(other_way)
    if one_way and other_way:
        return frozenset(one_way | other_way)
    return frozenset()


def _polarity(side: Facts, words: Iterable[str]) -> str:
    negated = [word for word in words if word in side.negated]
    return "negated" if negated else "affirmed"


def _join(values: Iterable[str]) -> str:
    return ", ".join(sorted(values))


def _texts(figures: Iterable[Figure]) -> str:
    return ", ".join(dict.fromkeys(figure.text for figure in figures))


__all__ = ["MAX_CHARACTERS", "Conflict", "Facts", "added_figures", "conflicts", "facts"]

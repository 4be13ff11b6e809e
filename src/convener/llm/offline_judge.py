"""The offline judge: a deterministic, lexical reading of answers, with nothing but the standard library.

The text is reduced to two things (:func:`read`):

- *figures*: numbers, amounts, times, dates and identifiers, normalised so that ``$1,200.00``,
  ``1200`` and ``1.200,00 €`` agree, ``2 pm`` is ``14:00``, ``March 3`` and ``2024-03-03``
  are the same day, ``AC-1001`` is ``ac1001`` and ``five`` is ``5``;
- *concepts*: content words, casefolded, accents stripped, stop words dropped, crudely stemmed
  (plural, -ing, -ed) and mapped through a small customer-service synonym table (parcel = package,
  arrive = delivery, ...), plus which of them fall in the scope of a negation ("not", "never", "can't").

The judgements then compare these sets; each function's docstring gives its rule. Known limits, by
design: a faithful answer in another language shares few words with an English one (only its figures
agree), so it scores low on similarity; paraphrases with no shared words (``half an hour`` for ``30
minutes``, ``Christmas Day`` for ``December 25``) are missed; a figure present in the context is taken as
support wherever it came from; negation is matched by proximity, not parsed.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from convener.llm.judges import (
    CRITERION_LABELS,
    HALLUCINATION_LABELS,
    SIMILARITY_LABELS,
    USER_GOAL_LABELS,
    Verdict,
)

PREFIX = "Offline judge:"

# -- vocabulary -------------------------------------------------------------------------------------


def vocabulary(words: str) -> frozenset[str]:
    """A word list written as whitespace-separated text (easier to read and extend than quoted items)."""
    return frozenset(words.split())


STOP_WORDS = vocabulary(
    """
    a an the and or but if then so as of to in on at by for with from into onto about over under up down
    out off again once is are was were be been being am do does did doing done have has had having
    get gets got
    i me my mine myself we us our ours you your yours yourself he him his she her it its they them their
    this that these those there here what which who whom whose when where why how will would shall should
    can could may must just also very too only own same than such both each few more most other some any
    all s t ll re ve d m o y now still yet already ok okay oh well via per
    """
)
"""Function words: no meaning of their own for these comparisons. Negations are deliberately absent."""

NEGATIONS = vocabulary(
    "not no never none nothing nobody nowhere nor neither cannot without unable nao nunca nem pas jamais"
    " ni nada ningun ninguna aucun aucune"
)
"""Negation cues, English first, then a few Portuguese, Spanish and French ones."""

NEGATION_SCOPE = 3
"""How many content words after a negation cue (within the clause) count as negated."""
CLAUSE_BREAKS = frozenset({"but", "however", "although", "though", "while", "whereas"})

HEDGES = vocabulary(
    "might maybe perhaps probably possibly presumably roughly approximately around guess believe think"
    " unsure seems seem likely"
)
"""Words that make an answer less committal than a plain statement."""

_PLEASANTRY_WORDS = vocabulary(
    """
    help assist assistance welcome thank thanks glad happy pleasure delighted anything else great nice good
    wonderful lovely sorry apologise apologize apology apologies inconvenience understand hope hello hi hey
    dear let know question day weekend moment please wait check look sure certainly absolutely course
    problem stay safe sad see go miss hear customer loyal valued patience appreciate enjoy
    """
)

REQUEST_OPENERS = ("please", "let me", "feel free", "don't hesitate", "do not hesitate")
"""A sentence starting with one of these asks or offers rather than asserts (unless it carries a figure)."""

SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("deliver", "delivery", "arrive", "arrival", "receive", "land"),
    ("ship", "dispatch", "shipment"),
    ("send", "sent", "mail", "post", "email", "forward"),
    ("parcel", "package"),
    ("order", "purchase", "buy", "bought"),
    ("cancel", "cancellation"),
    ("refund", "reimburse", "reimbursement"),
    ("charge", "bill", "billing", "fee", "cost"),
    ("pay", "payment", "paid"),
    ("store", "shop", "branch", "location", "outlet"),
    ("close", "shut"),
    ("photo", "picture", "image"),
    ("block", "freeze", "frozen", "suspend"),
    ("replace", "replacement"),
    ("sign", "log", "login", "signin"),
    ("business", "working", "work"),
    ("balance", "remain", "remaining"),
    ("confirm", "confirmation", "confirmed"),
    ("delete", "deletion", "erase", "remove", "removal"),
    ("escalate", "escalation"),
    ("contact", "call", "reach"),
    ("approve", "approval", "accept", "accepted"),
    ("deny", "denied", "decline", "reject", "rejected"),
    ("warranty", "guarantee"),
    ("delay", "late", "held"),
    ("book", "booked", "reserve", "schedule", "appointment"),
    ("attempt", "try", "tries", "tried"),
    ("fail", "failed", "unsuccessful"),
    ("restart", "reboot"),
    ("unplug", "disconnect"),
    ("upgrade", "upgraded"),
    ("expire", "expiry", "expiration"),
    ("allowance", "limit", "allowed"),
    ("address", "addresses"),
    ("agent", "representative", "supervisor", "manager"),
)
"""Words treated as one concept. Small on purpose: a thesaurus would blur contradictions."""

MONTHS: dict[str, int] = {}
for _number, _spellings in enumerate(
    (
        "january jan janeiro enero janvier",
        "february feb fevereiro febrero fevrier",
        "march mar marco marzo mars",
        "april apr abril avril",
        "may maio mayo mai",
        "june jun junho junio juin",
        "july jul julho julio juillet",
        "august aug agosto aout",
        "september sep setembro septiembre septembre",
        "october oct outubro octubre octobre",
        "november nov novembro noviembre novembre",
        "december dec dezembro diciembre decembre",
    ),
    start=1,
):
    MONTHS.update(dict.fromkeys(_spellings.split(), _number))

NUMBER_WORDS: dict[str, int] = {}
for _number, _spellings in enumerate(
    (
        "two dois duas dos deux",
        "three tres trois",
        "four quatro cuatro quatre",
        "five cinco cinq",
        "six seis",
        "seven sete siete",
        "eight oito ocho huit",
        "nine nove nueve",
        "ten dez diez dix",
        "eleven",
        "twelve",
    ),
    start=2,
):
    NUMBER_WORDS.update(dict.fromkeys(_spellings.split(), _number))
# "one"/"un"/"uma" are left out: far more often a pronoun or an article than a count.

UNITS = vocabulary("kg g gb mb tb km m cm mm h hr hrs min mins s x ml l lb lbs")
"""Suffixes that make ``8kg`` a number and a unit rather than an identifier."""

# -- reading ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """A number, amount, time, date or identifier. ``loose`` is a weaker form another text may use
    (``9:00`` for ``9 am``-style times on the hour is ``9``)."""

    kind: str  # "number", "time", "date" or "id"
    value: str
    text: str
    loose: str | None = None


@dataclass(frozen=True)
class Reading:
    """What the judge sees of a text."""

    figures: tuple[Figure, ...]
    concepts: frozenset[str]
    negated: frozenset[str]
    hedged: bool
    plain: str


_MONTH_ALT = "|".join(sorted(MONTHS, key=len, reverse=True))
_TOKEN = re.compile(
    rf"""
    (?P<iso>\b(?P<iy>\d{{4}})-(?P<im>\d{{1,2}})-(?P<id>\d{{1,2}})
        (?:t(?P<ih>\d{{1,2}}):(?P<imin>\d{{2}})(?::\d{{2}})?)?\b)
    |(?P<md>\b(?P<md_m>{_MONTH_ALT})\.?\s+(?P<md_d>\d{{1,2}})(?:st|nd|rd|th)?\b)
    |(?P<dm>\b(?P<dm_d>\d{{1,2}})(?:st|nd|rd|th|er|o)?\s+(?:of\s+|de\s+)?(?P<dm_m>{_MONTH_ALT})\b)
    |(?P<ampm>\b(?P<ah>\d{{1,2}})(?::(?P<amin>\d{{2}}))?\s*(?P<half>am|pm)\b)
    |(?P<clock>\b(?P<ch>\d{{1,2}})(?::|h)(?P<cmin>\d{{2}})\b)
    |(?P<ident>\b[a-z]+-?\d[a-z0-9]*\b|\b\d+[a-z]+[a-z0-9]*\b)
    |(?P<num>\d+(?:[.,]\d+)*)
    |(?P<word>[a-z]+)
    |(?P<stop>[.;:!?,()\[\]{{}}"])
    """,
    re.VERBOSE,
)
_ORDINAL = re.compile(r"^(\d+)(st|nd|rd|th)$")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_CONTRACTIONS = (
    (re.compile(r"\bcan'?t\b"), "can not"),
    (re.compile(r"\bwon'?t\b"), "will not"),
    (re.compile(r"\bshan'?t\b"), "shall not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'(s|re|ll|ve|d|m)\b"), ""),
    (re.compile(r"\b([ap])\.m\.?"), r"\1m"),
    (re.compile(r"\b(dr|mr|mrs|ms|st)\.(?=\s)"), r"\1"),
)


def normalise(text: str) -> str:
    """Casefolded, accents and curly quotes removed, contractions expanded, ``a.m.`` as ``am``."""
    text = _CAMEL.sub(" ", text).replace("_", " ")
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    decomposed = unicodedata.normalize("NFKD", text)
    text = "".join(char for char in decomposed if not unicodedata.combining(char)).casefold()
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def stem(word: str) -> str:
    """A crude suffix stripper: enough for plural/-ing/-ed forms of the same word to meet."""
    if len(word) <= 3:
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4 or word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


_CONCEPT = {stem(word): group[0] for group in SYNONYMS for word in group}


def concept(word: str) -> str:
    stemmed = stem(word)
    return _CONCEPT.get(stemmed, stemmed)


PLEASANTRIES = frozenset(concept(word) for word in _PLEASANTRY_WORDS)
"""Concepts of courtesy: a sentence made only of these (and stop words) claims nothing."""


def _canonical_number(raw: str) -> str:
    """``1,200.00`` → ``1200``; ``18,75`` → ``18.75``; ``0199`` → ``199``."""
    if "," in raw and "." in raw:
        decimal_mark = "," if raw.rfind(",") > raw.rfind(".") else "."
        thousands = "." if decimal_mark == "," else ","
        raw = raw.replace(thousands, "").replace(decimal_mark, ".")
    elif "," in raw:
        parts = raw.split(",")
        if len(parts) == 2 and len(parts[1]) != 3:
            raw = raw.replace(",", ".")
        else:
            raw = raw.replace(",", "")
    elif raw.count(".") > 1:
        raw = raw.replace(".", "")
    try:
        number = Decimal(raw)
    except InvalidOperation:
        return raw
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def _time(hour: int, minute: int, text: str, half: str | None = None) -> Figure:
    if half == "pm" and hour < 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    loose = str(hour % 12 or 12) if minute == 0 else None
    return Figure("time", f"{hour}:{minute:02d}", text, loose)


def _figures_of(match: re.Match[str]) -> list[Figure]:
    text = match.group(0)
    if match.group("iso"):
        figures = [
            Figure("date", f"{int(match.group('im'))}-{int(match.group('id'))}", text),
            Figure("number", str(int(match.group("iy"))), text),
        ]
        if match.group("ih"):
            figures.append(_time(int(match.group("ih")), int(match.group("imin")), text))
        return figures
    if match.group("md"):
        return [Figure("date", f"{MONTHS[match.group('md_m')]}-{int(match.group('md_d'))}", text)]
    if match.group("dm"):
        return [Figure("date", f"{MONTHS[match.group('dm_m')]}-{int(match.group('dm_d'))}", text)]
    if match.group("ampm"):
        minute = int(match.group("amin") or 0)
        return [_time(int(match.group("ah")), minute, text, match.group("half"))]
    if match.group("clock"):
        return [_time(int(match.group("ch")), int(match.group("cmin")), text)]
    if match.group("ident"):
        ordinal = _ORDINAL.match(text)
        if ordinal:
            return [Figure("number", str(int(ordinal.group(1))), text)]
        digits = re.match(r"^(\d+)([a-z]+)$", text)
        if digits and digits.group(2) in UNITS:
            return [Figure("number", str(int(digits.group(1))), text)]
        return [Figure("id", text.replace("-", ""), text)]
    return [Figure("number", _canonical_number(text), text)]


READINGS_CACHED = 512
"""Readings kept by text: a run of golden evaluations judges each turn against the same context (instructions,
the expected history, tool responses), evaluation after evaluation and repetition after repetition."""
CACHED_TEXT_CHARS = 32_768
"""Longer texts are read afresh each time: the cache holds its texts, and must stay small."""


def read(text: str) -> Reading:
    """Figures, concepts and negated concepts of ``text`` (see the module docstring)."""
    return _read_cached(text) if len(text) <= CACHED_TEXT_CHARS else _read(text)


@functools.lru_cache(maxsize=READINGS_CACHED)
def _read_cached(text: str) -> Reading:
    return _read(text)


def _read(text: str) -> Reading:
    plain = normalise(text)
    figures: list[Figure] = []
    concepts: set[str] = set()
    negated: set[str] = set()
    hedged = False
    negation_left = 0  # content words still in the current negation's scope
    for match in _TOKEN.finditer(plain):
        if match.group("stop") is not None:
            negation_left = 0
            continue
        word = match.group("word")
        if word is None:
            figures.extend(_figures_of(match))
            continue
        if word in CLAUSE_BREAKS:
            negation_left = 0
            continue
        if word in NEGATIONS:
            negation_left = NEGATION_SCOPE
            continue
        if word in HEDGES:
            hedged = True
        if word in NUMBER_WORDS:
            figures.append(Figure("number", str(NUMBER_WORDS[word]), word))
            continue
        if word in STOP_WORDS or len(word) < 2:
            continue
        meaning = concept(word)
        concepts.add(meaning)
        if negation_left:
            negated.add(meaning)
            negation_left -= 1
    if "not sure" in plain or "not certain" in plain:
        hedged = True
    return Reading(tuple(figures), frozenset(concepts), frozenset(negated), hedged, plain)


def found(figure: Figure, among: Iterable[Figure]) -> bool:
    """Whether ``figure`` is stated by one of ``among`` (its exact value, or its loose form either way)."""
    for other in among:
        if other.kind == "date" or figure.kind == "date":
            if other.kind == figure.kind and other.value == figure.value:
                return True
            continue
        if figure.value in (other.value, other.loose) or (
            figure.loose is not None and figure.loose == other.value
        ):
            return True
    return False


def _names(figures: Iterable[Figure]) -> str:
    return ", ".join(dict.fromkeys(figure.text for figure in figures))


def _words(concepts: Iterable[str]) -> str:
    return ", ".join(sorted(concepts))


# -- similarity -------------------------------------------------------------------------------------

FIGURE_WEIGHT = 2
"""A figure counts as much as two content words towards coverage: it is usually what was asked."""
COVERAGE_FLOORS = ((4, 0.8), (3, 0.6), (2, 0.4), (1, 0.2), (0, 0.0))
"""Score given by coverage (share of the expected concepts and figures found), before the caps."""


def similarity(expected: str, actual: str, cosine: float | Callable[[], float] | None = None) -> Verdict:
    """How consistent ``actual`` is with ``expected``, 0-4, read from words (and, given the ``cosine`` of the
    two texts' sentence embeddings, from meaning too); then capped by changed facts.

    Words: coverage is the share of ``expected``'s concepts and figures (figures weigh double) found in
    ``actual``; it maps to 4 (≥ 0.8), 3 (≥ 0.6), 2 (≥ 0.4), 1 (≥ 0.2) or 0. Then: an answer that is mostly
    new material (under half of its concepts shared), that states figures the expected one does not, or
    that hedges ("might", "I think") where the expected one is plain is at most 3; an expected figure
    that is missing caps the score at 2; an expected figure replaced by a different one of the same
    kind, or a shared word negated on one side only, is a contradiction: 1 if the rest agrees well
    (coverage ≥ 0.6), else 0. An empty answer is 0, an identical one (after normalisation) 4.

    Meaning (when ``cosine`` is given, as a value or as the function that embeds both texts, called only when
    the words leave the meaning open, so an answer in the expected words costs no model call): unless the answer is mostly the expected one's own words (then it
    is an omission or a reordering, which words read well and embeddings do not), the score is the higher
    of the words' score and the cosine's (:data:`COSINE_FLOORS`), so that a paraphrase sharing few words
    scores what it means.

    Changed facts (:func:`convener.llm.facts.conflicts`), read either way: when the answer contradicts a
    fact of the expected one (a status, number, amount, name, date or identifier changed, a negation
    flipped), the score is at most 1, whatever the overlap, and the explanation names the fact.
    """
    from convener.llm.facts import added_figures, conflicts, missing_figures

    how = "by words"
    if not actual.strip():
        return _similarity(0, f"{how}: the response is empty")
    want, got = read(expected[:MAX_READ]), read(actual[:MAX_READ])
    if _squash(want.plain) == _squash(got.plain):
        return _similarity(4, f"{how}: the response is the expected one, up to case and punctuation")
    if not want.concepts and not want.figures:
        score = 4 if not got.concepts and not got.figures else 3
        return _similarity(score, f"{how}: the expected response has no content words or figures to compare")
    score, reasons, precision, coverage = _by_words(want, got)
    if callable(cosine):
        cosine = cosine() if precision < OWN_WORDS else None
    if cosine is not None:
        how = f"by sentence embeddings ({EMBEDDING_MODEL}, cosine {cosine:.2f}) and words"
    if cosine is not None and precision < OWN_WORDS:
        meant = next(score for score, floor in COSINE_FLOORS if cosine >= floor)
        if meant > score:
            reasons = [f"the meaning agrees more than the words (words alone: {score}; {'; '.join(reasons)})"]
            score = meant
            if score == 4 and (added_figures(expected, actual) or (got.hedged and not want.hedged)):
                score = 3
                reasons.append("the response adds figures or hedges where the expected one is plain")
            missing = missing_figures(expected, actual)
            if missing and score > 2:
                score = 2
                reasons.append(f"missing: {_names(missing)}")
    changed = conflicts(expected, actual)
    if changed:
        cap = 1 if (cosine if cosine is not None else coverage) >= 0.6 else 0
        if score > cap:
            score = cap
        reasons.append("changed fact: " + "; ".join(conflict.describe() for conflict in changed))
    return _similarity(score, f"{how}: " + "; ".join(reasons))


MAX_READ = 100_000
"""Characters of each text the similarity reads (bounded work on hostile input)."""
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
COSINE_FLOORS = ((4, 0.75), (3, 0.65), (2, 0.5), (1, 0.35), (0, -1.0))
"""Score given by the cosine of the two texts' MiniLM embeddings, calibrated on
tests/data/judge_pairs/tuning.jsonl: paraphrases there embed at 0.70-0.91 (most above 0.76), unrelated
answers below 0.4."""
OWN_WORDS = 0.8
"""An answer whose content words are at least this share the expected one's is read by words alone: it is
the expected text cut or reordered, where coverage tells omissions apart and cosines stay high."""


def _by_words(want: Reading, got: Reading) -> tuple[int, list[str], float, float]:
    """The words' score, its reasons, the share of the answer's concepts the expected text has, coverage."""
    missing = [figure for figure in want.figures if not found(figure, got.figures)]
    extra = [figure for figure in got.figures if not found(figure, want.figures)]
    conflicting = [figure for figure in missing if any(other.kind == figure.kind for other in extra)]
    shared = want.concepts & got.concepts
    matched_figures = len(want.figures) - len(missing)
    total = len(want.concepts) + FIGURE_WEIGHT * len(want.figures)
    coverage = (len(shared) + FIGURE_WEIGHT * matched_figures) / total
    score = next(score for score, floor in COVERAGE_FLOORS if coverage >= floor)
    reasons = [
        (
            f"{len(shared)} of {len(want.concepts)} expected content words and "
            f"{matched_figures} of {len(want.figures)} expected figures found (coverage {coverage:.2f})"
        )
    ]
    precision = len(shared) / len(got.concepts) if got.concepts else 1.0
    if precision < 0.5 and score == 4:
        score = 3
        reasons.append("most of the response is material the expected one does not have")
    if extra and score == 4:
        score = 3
        reasons.append(f"the response adds {_names(extra)}")
    if got.hedged and not want.hedged and score > 3:
        score = 3
        reasons.append("the response hedges where the expected one is plain")
    flipped = _flipped(want, got, shared)
    if conflicting or flipped:
        score = min(score, 1 if coverage >= 0.6 else 0)
        if conflicting:
            others = [figure for figure in extra if any(f.kind == figure.kind for f in conflicting)]
            reasons.append(
                f"contradiction: expected {_names(conflicting)}, the response says {_names(others)}"
            )
        if flipped:
            reasons.append(f"contradiction: negated on one side only: {_words(flipped)}")
    elif missing:
        score = min(score, 2)
        reasons.append(f"missing: {_names(missing)}")
    return score, reasons, precision, coverage


def _flipped(want: Reading, got: Reading, shared: frozenset[str]) -> frozenset[str]:
    """Shared concepts negated in one text only, unless both texts negate some shared concept alike
    (then the negation most likely just moved within a paraphrase)."""
    if want.negated & got.negated & shared:
        return frozenset()
    return (want.negated ^ got.negated) & shared


def _squash(plain: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", plain))


def _similarity(score: int, why: str) -> Verdict:
    return Verdict(score, SIMILARITY_LABELS[score], f"{PREFIX} {why}.")


# -- hallucination ----------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|St|No|Nr|vs|etc|approx)\.(?=\s)", re.IGNORECASE)
_MERIDIEM = re.compile(r"\b([ap])\.m\.", re.IGNORECASE)


def claims(response: str) -> list[str]:
    """The sentences of ``response``, abbreviations (``Dr.``, ``p.m.``) not taken for sentence ends."""
    text = _MERIDIEM.sub(r"\1m", _ABBREVIATION.sub(r"\1", response))
    return [sentence.strip() for sentence in _SENTENCE_END.split(text) if sentence.strip()]


def checkable(sentence: str, reading: Reading) -> bool:
    """Whether a sentence asserts something: not a question, not only courtesy, not a request or offer
    without a figure."""
    if sentence.rstrip().endswith("?"):
        return False
    if reading.figures:
        return True
    if reading.plain.lstrip(" \"'(").startswith(REQUEST_OPENERS):
        return False
    return bool(reading.concepts - PLEASANTRIES)


_EXAMPLE_BEFORE = re.compile(
    r"(?:\blooks?\s+like|\bsuch\s+as|\be\.?\s?g\.?|\bfor\s+(?:example|instance)|\bin\s+the\s+form(?:at)?(?:\s+of)?"
    r"|\bformatted\s+(?:like|as)|\bsimilar\s+to)\W*$"
)
"""What introduces a figure as an example of a format rather than a fact: "it looks like AC-1234"."""


def examples(sentence: str, figures: Sequence[Figure]) -> list[Figure]:
    """The figures ``sentence`` gives as examples (right after :data:`_EXAMPLE_BEFORE`)."""
    plain = normalise(sentence)
    given = []
    for figure in figures:
        at = plain.find(figure.text)
        if at >= 0 and _EXAMPLE_BEFORE.search(plain[:at]):
            given.append(figure)
    return given


def hallucination(response: str, context: Sequence[str]) -> Verdict:
    """Whether every claim of ``response`` is backed by ``context``: 1, 0 or -1.

    A claim is a sentence that is checkable (:func:`checkable`), unless every figure it has is given as an
    example of a format ("order numbers look like AC-1234", "such as", "for example", "e.g."): that
    illustrates, it does not assert. A claim is supported when all its figures (examples aside) are in
    the context and more than half of its content words (courtesy words aside) are. 1 when every claim is
    supported, 0 when one is not (the first is named), -1 when there is no claim.
    """
    source = read("\n".join(context))
    checked = 0
    for sentence in claims(response):
        reading = read(sentence)
        if not checkable(sentence, reading):
            continue
        illustrative = examples(sentence, reading.figures)
        if illustrative and len(illustrative) == len(reading.figures):
            continue
        checked += 1
        unsupported = [figure for figure in reading.figures
                       if figure not in illustrative and not found(figure, source.figures)]
        words = reading.concepts - PLEASANTRIES
        absent = words - source.concepts
        if unsupported:
            why = f"{_names(unsupported)} not in the context"
        elif words and len(absent) * 2 >= len(words):
            known = len(words) - len(absent)
            why = f"{known} of {len(words)} content words in the context (missing: {_words(absent)})"
        else:
            continue
        return _hallucination(0, f'the claim "{sentence}" is not supported: {why}')
    if not checked:
        return _hallucination(-1, "no checkable claim (only courtesy, questions or requests)")
    plural = "claim is" if checked == 1 else f"{checked} claims are"
    return _hallucination(1, f"{'the' if checked == 1 else 'all'} {plural} supported by the context")


def _hallucination(score: int, why: str) -> Verdict:
    return Verdict(score, HALLUCINATION_LABELS[score], f"{PREFIX} {why}.")


# -- criterion --------------------------------------------------------------------------------------

CRITERION_WORDS = frozenset(
    concept(word)
    for word in vocabulary(
        """
    agent assistant bot model user customer caller response responses reply replies respond conversation
    transcript turn turns mention mentions say says said tell tells state states ask asks provide provides
    give gives include includes explicitly clearly correctly properly always inform informs answer
    answers talk talks refer refers discuss discusses avoid avoids refrain refrains reveal reveals share
    shares whether least
    """
    )
)
"""Words that frame a criterion ("the agent mentions ...") rather than name what to look for."""

_QUOTED = re.compile(r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|(?<![A-Za-z])'([^']+)'(?![A-Za-z])")
AVOIDING = frozenset({"avoid", "avoids", "refrain", "refrains", "refuse", "refuses"})
KEY_COVERAGE = 0.6
"""Share of a criterion's key words a transcript must contain for the criterion's subject to be there."""


def criterion(prompt: str, transcript: str) -> Verdict:
    """Whether ``transcript`` meets ``prompt``, read offline: 1 met, 0 not met.

    Quoted phrases in the prompt (``"..."``) must each appear in the transcript (as text, or as all of
    their content words and figures). Without quotes, the prompt's key words (its content words minus
    framing such as "agent", "mentions") must be at least 60% present, and its figures all present.
    A negated criterion ("never mentions", "does not", "avoids"; a negation before the first quote) is
    met when its subject is absent instead. This reads words, not meaning: it cannot tell whether the
    agent *did* something the transcript merely talks about.
    """
    quotes = [next(group for group in match.groups() if group) for match in _QUOTED.finditer(prompt)]
    first_quote = _QUOTED.search(prompt)
    framing = normalise(prompt[: first_quote.start()] if first_quote else prompt)
    negated = any(word in NEGATIONS or word in AVOIDING for word in re.findall(r"[a-z]+", framing))
    text = read(transcript)
    if quotes:
        present = [quote for quote in quotes if _phrase_in(quote, text)]
        absent = [quote for quote in quotes if quote not in present]
        if negated:
            met = not present
            why = (
                f'forbidden phrase "{present[0]}" appears'
                if present
                else "none of the forbidden phrases appears"
            )
        else:
            met = not absent
            why = f'"{absent[0]}" does not appear' if absent else "every quoted phrase appears"
        return _criterion(met, why + " in the transcript")
    subject = read(_QUOTED.sub(" ", prompt))
    keys = subject.concepts - CRITERION_WORDS
    if not keys and not subject.figures:
        return _criterion(False, "the criterion has no quoted phrase or key word to look for")
    found_keys = keys & text.concepts
    missing_figures = [figure for figure in subject.figures if not found(figure, text.figures)]
    there = not missing_figures and (not keys or len(found_keys) >= KEY_COVERAGE * len(keys))
    why = f"{len(found_keys)} of {len(keys)} key words ({_words(keys)}) in the transcript"
    if missing_figures:
        why += f", {_names(missing_figures)} not"
    if negated:
        return _criterion(not there, f"negated criterion; {why}")
    return _criterion(there, why)


def _phrase_in(phrase: str, text: Reading) -> bool:
    if _squash(normalise(phrase)) in _squash(text.plain):
        return True
    wanted = read(phrase)
    if not wanted.concepts and not wanted.figures:
        return False
    return wanted.concepts <= text.concepts and all(found(figure, text.figures) for figure in wanted.figures)


def _criterion(met: bool, why: str) -> Verdict:
    score = 1 if met else 0
    return Verdict(score, CRITERION_LABELS[score], f"{PREFIX} {why}.")


# -- user goal --------------------------------------------------------------------------------------

TASK_FRAMING = frozenset(
    concept(word)
    for word in vocabulary(
        """
    want wants wanted wanting need needs needed ask asks asked try tries trying get user agent you customer
    caller simulated pretend role goal task scenario would like please make sure able
    """
    )
)
"""Words that frame a task ("the user wants to ...") rather than name what is to be done."""

# A transfer target that reads as a person rather than another (AI) agent of the app. Small on purpose.
HUMAN_TARGET = re.compile(
    r"\b(human|person|people|live (agent|chat|support)|real (agent|person)|representative|rep|operator|staff"
    r"|escalat\w*|specialist team|support team|care team|supervisor|manager|handoff|hand off)\b"
)
# What an agent says when it hands the user over to a person. Small on purpose: the phrases of a handoff,
# not of an offer ("would you like me to ...?" is skipped, see _OFFER) or a refusal ("I can't transfer ...").
HANDOFF_PHRASES = (
    re.compile(
        r"\bconnect(ing)? you (with|to) (a |an |the |one of our |our )?(\w+ ){0,2}?"
        r"(human|person|people|representative|colleague|specialist|agent|operator|supervisor|manager|team)"
    ),
    re.compile(r"\b(transfer|transferr|put|putt|pass)(ing)? you (through |over )?to (a|an|the|one|our)\b"),
    re.compile(r"\bhand(ing)? you (over|off) to\b"),
    re.compile(r"\b(member|one) of our (\w+ )?team (will|is going to) (contact|call|reach|get|be in touch)"),
    re.compile(r"\bescalat(e|ed|ing) (this|it|your \w+) to (a|an|the|our) (\w+ ){0,2}?(human|person|team"
               r"|specialist|supervisor|manager)"),
)
_OFFER = re.compile(r"\b(if|would you like|do you want|shall i|should i|can|could|may)\b")
_CLAUSE_START = re.compile(r"[,;:]|\b(?:" + "|".join(sorted(CLAUSE_BREAKS)) + r")\b")
# A refusal or failure stated outright. A plain negation ("no problem") is not one: it must fall on the task
# (see _refusal).
REFUSAL = re.compile(
    r"\b(can not|could not|not able|unable|not eligible|ineligible|not possible|impossible|not allowed"
    r"|not permitted|will not be able|denied|declined|rejected|refuse[sd]?|failed|went wrong)\b"
)
# "sorry" followed by a negation in the sentence, unless it is sympathy ("sorry to hear it did not arrive").
_SORRY_NOT = re.compile(
    r"\b(sorry|unfortunately|afraid)\b(?! (to hear|for|about))[^.!?]*\b(not|no|never|cannot)\b"
)
ERROR_KEYS = frozenset({"error", "errors"})
CLOSING_WORDS = frozenset(concept(word) for word in vocabulary("today else further other need"))
"""With the courtesy words, what a closing question ("anything else I can do today?") is made of."""
_QUOTE_LENGTH = 120

_CALL = "agent called tool "
_TRANSFER = "agent transferred to "
SESSION_ENDED = "agent ended the session"
"""How a transcript says the agent ended the session: then ``: reason``, or ``ESCALATED: reason``."""
ESCALATED = ", escalating to a human agent"
_RESPONDED = re.compile(r"^tool (?P<name>.+?) responded (?P<json>[\[{].*)$")
_TEXTS = {"user: ": "user", "agent: ": "agent", "error: ": "error"}


@dataclass(frozen=True)
class _Line:
    kind: str  # "user", "agent", "error", "call", "transfer", "variables" or "end"
    text: str  # the text, the transfer's target, the tool's name, or why the session ended
    args: object = None
    response: object = None
    answered: bool = False  # a tool call with a response
    escalated: bool = False  # the session ended escalated to a human agent


def transcript_lines(transcript: str) -> list[_Line]:
    """The lines of a transcript (see :func:`convener.ces.evaluation.scoring.transcript_of`); a line that
    starts with none of the known prefixes continues the text before it (a text with a line break)."""
    lines: list[_Line] = []
    for raw in transcript.splitlines():
        prefix = next((prefix for prefix in _TEXTS if raw.startswith(prefix)), None)
        responded = _RESPONDED.match(raw)
        if prefix is not None:
            lines.append(_Line(_TEXTS[prefix], raw[len(prefix) :]))
        elif raw.startswith(_CALL):
            lines.append(_call(raw[len(_CALL) :]))
        elif responded:
            lines.append(_Line("call", responded.group("name"), {}, _json_or(responded.group("json")), True))
        elif raw.startswith(_TRANSFER):
            lines.append(_Line("transfer", raw[len(_TRANSFER) :]))
        elif raw.startswith(SESSION_ENDED):
            rest = raw[len(SESSION_ENDED) :]
            escalated = rest.startswith(ESCALATED)
            reason = rest[len(ESCALATED) :] if escalated else rest
            lines.append(_Line("end", reason.removeprefix(":").strip(), escalated=escalated))
        elif raw.startswith("agent set variables "):
            lines.append(_Line("variables", raw[len("agent set variables ") :]))
        elif lines and lines[-1].kind in _TEXTS.values():
            lines[-1] = _Line(lines[-1].kind, f"{lines[-1].text}\n{raw}")
    return lines


def _call(rest: str) -> _Line:
    """``NAME({args}) -> {response}`` (the response is absent when the tool did not answer)."""
    decoder = json.JSONDecoder()
    for index, char in enumerate(rest):
        if char != "(":
            continue
        try:
            args, end = decoder.raw_decode(rest, index + 1)
        except ValueError:
            continue
        if not rest.startswith(")", end):
            continue
        tail = rest[end + 1 :]
        if tail.startswith(" -> "):
            return _Line("call", rest[:index], args, _json_or(tail[4:]), True)
        return _Line("call", rest[:index], args)
    name, _, tail = rest.partition("(")
    response = tail.rsplit(" -> ", 1)[1] if " -> " in tail else None
    return _Line("call", name, {}, None if response is None else _json_or(response), response is not None)


def _json_or(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def user_goal(task: str, transcript: str) -> Verdict:
    """Whether the simulated user's ``task`` was accomplished in ``transcript``, read offline: 2, 1, 0 or -1.

    The first rule that applies decides:

    1. an empty or blank task is -1 (unspecified);
    2. a handoff is 2: the agent ended the session escalating to a human agent (CES's
       ``session_escalated``), an ``agent transferred to X`` line where X reads as a person (:data:`HUMAN_TARGET`:
       human, live agent, representative, operator, staff, escalation, support team...), or an agent line
       with a hand-off phrase (:data:`HANDOFF_PHRASES`: "connect you with a human", "transfer you to a
       ...", "hand you over to", "a member of our team will contact you") in a sentence that is not a
       question, an offer ("if", "would you like", "I can ...") or negated;
    3. the *resolution* is the agent's last text line, skipping trailing lines that share no key word or
       figure with the task, carry no figure and state no refusal ("You're welcome! Anything else?",
       goodbyes) while an earlier agent line exists. A resolution that refuses or fails is 0 (refused):
       a refusal phrase (:data:`REFUSAL`: can't, unable, not eligible, denied, failed...), "sorry" or
       "unfortunately" followed by a negation in the sentence, or a task key word in a negation's scope;
    4. an open question ends the conversation, 0: the agent's last sentence asks for more than courtesy
       (not "anything else?") and no tool call succeeded after it, so the agent is still gathering what
       it needs or awaiting a go-ahead;
    5. the task is done, 1, when a tool call was answered without an error (no ``error`` key, no
       ``"success": false``) and its name's words or its arguments' figures overlap the task's, or when
       the resolution shares a task figure or at least half of the task's key words and has an assertive
       sentence (:func:`checkable`) sharing some of them;
    6. otherwise 0: no sign the task was completed.

    The task's key words are its concepts minus framing words (:data:`TASK_FRAMING`: want, need, user,
    agent, you...). Words, not meaning: a promise ("I will refund it once ...") reads as an outcome, and a
    successful lookup over the task's order counts as doing it unless the agent ends on an open question.
    """
    if not task.strip():
        return _user_goal(-1, "the task is empty")
    lines = transcript_lines(transcript)
    handoff = _handoff(lines)
    if handoff:
        return _user_goal(2, f"handoff: {handoff}")
    wanted = read(task)
    keys = wanted.concepts - TASK_FRAMING
    agent = [line.text for line in lines if line.kind == "agent" and line.text.strip()]
    resolution = _resolution(agent, wanted, keys)
    if resolution is not None:
        refusal = _refusal(resolution, wanted, keys)
        if refusal:
            return _user_goal(0, f'refused: the agent\'s resolution "{_quote(resolution)}" {refusal}')
    open_question = _open_question(lines)
    if open_question is not None:
        return _user_goal(
            0, f'no sign the task was completed: the agent ends on an open question "{_quote(open_question)}"'
        )
    tool = _tool_evidence(lines, wanted, keys)
    if tool:
        return _user_goal(1, f"completed: {tool}")
    if resolution is not None:
        outcome = _outcome(resolution, wanted, keys)
        if outcome:
            return _user_goal(1, f'completed: the agent\'s resolution "{_quote(resolution)}" {outcome}')
    if not agent:
        return _user_goal(0, "no sign the task was completed: the agent said nothing and no tool call on the"
                          " task succeeded")
    return _user_goal(
        0,
        "no sign the task was completed: no successful tool call on the task and no resolution stating an"
        f" outcome on it ({_task_words(wanted, keys)})",
    )


def _handoff(lines: Sequence[_Line]) -> str | None:
    for line in lines:
        if line.kind == "end" and line.escalated:
            because = f' ("{_quote(line.text)}")' if line.text else ""
            return f"the agent ended the session escalating to a human agent{because}"
        if line.kind == "transfer" and HUMAN_TARGET.search(normalise(line.text)):
            return f"the agent transferred to {line.text.strip()}"
        if line.kind != "agent":
            continue
        for sentence in claims(line.text):
            if sentence.rstrip().endswith("?"):
                continue
            plain = normalise(sentence)
            for phrase in HANDOFF_PHRASES:
                match = phrase.search(plain)
                if match is None:
                    continue
                clause = _CLAUSE_START.split(plain[: match.start()])[-1]
                if _OFFER.search(clause) or any(word in NEGATIONS for word in re.findall(r"[a-z]+", clause)):
                    continue
                return f'the agent said "{_quote(sentence)}"'
    return None


def _resolution(agent: Sequence[str], wanted: Reading, keys: frozenset[str]) -> str | None:
    """The agent's last text line on the task: trailing courtesy lines are skipped (see :func:`user_goal`)."""
    for index in range(len(agent) - 1, -1, -1):
        text = agent[index]
        reading = read(text)
        on_task = bool(reading.concepts & keys) or any(found(f, reading.figures) for f in wanted.figures)
        if index == 0 or on_task or reading.figures or _refusal(text, wanted, keys):
            return text
    return None


def _refusal(text: str, wanted: Reading, keys: frozenset[str]) -> str | None:
    """How ``text`` states a refusal or a failure, or None."""
    plain = normalise(text)
    phrase = REFUSAL.search(plain)
    if phrase:
        return f'states a refusal or failure ("{phrase.group(0)}")'
    sorry = _SORRY_NOT.search(plain)
    if sorry:
        return f'states a refusal ("{sorry.group(1)}" ... "{sorry.group(3)}")'
    negated = (read(text).negated & keys) - wanted.negated
    if negated:
        return f"negates the task ({_words(negated)})"
    return None


def _open_question(lines: Sequence[_Line]) -> str | None:
    """The agent's last sentence when it is a question asking for more than courtesy and no tool call
    succeeded after it (the agent is still gathering what it needs), else None."""
    last = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].kind == "agent"), None)
    if last is None or any(_succeeded(line) for line in lines[last + 1 :]):
        return None
    sentences = claims(lines[last].text)
    if not sentences or not sentences[-1].rstrip().endswith("?"):
        return None
    reading = read(sentences[-1])
    if reading.figures or reading.concepts - PLEASANTRIES - CLOSING_WORDS:
        return sentences[-1]
    return None


def _tool_evidence(lines: Sequence[_Line], wanted: Reading, keys: frozenset[str]) -> str | None:
    """The first tool call answered without an error whose name or argument figures meet the task."""
    for line in lines:
        if not _succeeded(line):
            continue
        words = read(line.text).concepts & keys
        figures = [f for f in read(json.dumps(line.args)).figures if found(f, wanted.figures)]
        if words or figures:
            overlap = ", ".join([*sorted(words), *dict.fromkeys(f.text for f in figures)])
            return f"tool {line.text.strip()} answered without an error on the task ({overlap})"
    return None


def _succeeded(line: _Line) -> bool:
    """A tool call that was answered without an error key or a ``"success": false``."""
    if line.kind != "call" or not line.answered:
        return False
    response = line.response
    if not isinstance(response, dict):
        return True
    keys = {str(key).casefold() for key in response}
    return not keys & ERROR_KEYS and response.get("success") is not False and response.get("ok") is not False


def _outcome(resolution: str, wanted: Reading, keys: frozenset[str]) -> str | None:
    """How ``resolution`` states an outcome on the task, or None."""
    said = read(resolution)
    shared = said.concepts & keys
    figures = [f for f in wanted.figures if found(f, said.figures)]
    if not figures and (not keys or len(shared) * 2 < len(keys)):
        return None
    for sentence in claims(resolution):
        reading = read(sentence)
        if not checkable(sentence, reading):
            continue
        if reading.concepts & keys or any(found(f, reading.figures) for f in wanted.figures):
            overlap = ", ".join([*dict.fromkeys(f.text for f in figures), *sorted(shared)])
            return f"states an outcome on the task ({overlap})"
    return None


def _task_words(wanted: Reading, keys: frozenset[str]) -> str:
    named = [*dict.fromkeys(f.text for f in wanted.figures), *sorted(keys)]
    return "task: " + (", ".join(named) if named else "no key word")


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUOTE_LENGTH else flat[: _QUOTE_LENGTH - 1].rstrip() + "\u2026"


def _user_goal(score: int, why: str) -> Verdict:
    end = "" if why.endswith(('."', '!"', '?"', '\u2026"')) else "."
    return Verdict(score, USER_GOAL_LABELS[score], f"{PREFIX} {why}{end}")


# -- the judge --------------------------------------------------------------------------------------


CACHED_VECTORS = 4096
"""Texts whose embeddings a judge keeps (384 floats each: about 6 MB)."""
MAX_EMBEDDED = 4_000
"""Characters of a text given to the embedding model: MiniLM reads 256 word pieces (about 1,000
characters) anyway, so a longer text costs tokenising only."""


class OfflineJudge:
    """The :class:`~convener.llm.judges.Judge` that reads words and figures (see the module docstring)."""

    name = "offline"

    def __init__(self, embeddings: Literal["auto", "off"] = "auto") -> None:
        # The switch: "off" reads words only, as when the embeddings extra is not installed.
        from convener.sentence_embeddings import available

        self.embeddings = embeddings == "auto" and available()
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def reading(self) -> str:
        """How similarity is read, for reports."""
        if self.embeddings:
            return f"sentence embeddings ({EMBEDDING_MODEL}, local) and words"
        return "words (sentence embeddings off or not installed)"

    def similarity(self, expected: str, actual: str) -> Verdict:
        if not self.embeddings or not actual.strip() or not expected.strip():
            return similarity(expected, actual)
        return similarity(expected, actual, lambda: self.cosines([(expected, actual)])[0])

    def cosines(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The cosine of each pair's embeddings; every text not embedded yet is embedded in one batch, and
        the last :data:`CACHED_VECTORS` texts' vectors are kept (an evaluation asks about the same expected
        responses run after run)."""
        from convener.sentence_embeddings import MiniLMEmbedder

        with self._lock:
            wanted = list(dict.fromkeys(text[:MAX_EMBEDDED] for pair in pairs for text in pair))
            new = [text for text in wanted if text not in self._vectors]
            if new:
                for text, vector in zip(new, MiniLMEmbedder().embed(new), strict=True):
                    self._vectors[text] = vector
            for text in wanted:
                self._vectors.move_to_end(text)
            while len(self._vectors) > CACHED_VECTORS:
                self._vectors.popitem(last=False)
            vectors = {text: self._vectors[text] for text in wanted}
        return [float(vectors[expected[:MAX_EMBEDDED]] @ vectors[actual[:MAX_EMBEDDED]])
                for expected, actual in pairs]

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """:meth:`similarity` of many pairs, their texts embedded in one batch."""
        if self.embeddings:
            self.cosines([(e, a) for e, a in pairs if e.strip() and a.strip()])
        return [self.similarity(expected, actual) for expected, actual in pairs]

    def hallucination(self, response: str, context: Sequence[str]) -> Verdict:
        return hallucination(response, context)

    def criterion(self, prompt: str, transcript: str) -> Verdict:
        return criterion(prompt, transcript)

    def user_goal(self, task: str, transcript: str) -> Verdict:
        return user_goal(task, transcript)

    def with_samples(self, samples: int) -> OfflineJudge:
        """Itself: the offline judge is deterministic, one reading is as good as any number."""
        return self

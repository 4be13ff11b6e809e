"""Words of a question, as the offline planner and the example matcher both read them.

Knowledge search's tokenizer (``convener.knowledge.text``) drops what a search does not need; a question
over data needs more: numbers (``6.5``, ``1,000``, "five"), ISO dates, comparison signs, where each word
stands, and the function words that carry structure ("more than", "by", "each", "after"). So this module
keeps every token, marks which are stopwords, and reuses knowledge's ``stem`` and ``STOPWORDS`` so that both
halves of Convener agree on what a word is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from convener.knowledge.text import STOPWORDS
from convener.knowledge.text import stem as _knowledge_stem

MEANINGFUL = frozenset({
    "more", "most", "after", "before", "above", "below", "under", "over", "each", "between", "than",
    "against", "few", "not", "no", "only", "all", "during", "until", "from", "by", "per", "same", "off",
    "up", "down", "once", "further", "other",
})
"""Stopwords for a search that say something about a question over data: comparisons, grouping, time."""

CONTENT_STOPWORDS = frozenset(STOPWORDS - MEANINGFUL)
"""Words that say nothing in a question over data, not even its structure."""

_TOKEN = re.compile(
    r"(?P<date>\d{4}-\d{1,2}-\d{1,2}|(?<![\d/])\d{1,2}/\d{1,2}/\d{4}(?![\d/]))"
    # a code of one digit and capitals, as airlines' are ("9E", Endeavor's), is one word ("9PM" is a time;
    # "15N", a number and a letter, stays "15" and "N", as a column delta_15n is read)
    r"|(?P<code>(?<![\w.])\d(?!AM\b|PM\b)[A-Z]{1,2}(?![\w]))"
    # a minus sign that follows no word or number is the number's own ("above -24"; "5-10" is a range)
    r"|(?P<number>(?:(?<![\w\-\u2212])[-\u2212](?=\d))?"
    r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d+(?:\.\d+)?))"
    r"|(?P<sign>>=|<=|<>|!=|[<>=%$])"
    r"|(?P<word>[^\W_]+(?:['’][^\W_]+)*)",
    re.UNICODE,
)

_SMALL_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "dozen": 12, "thousand": 1000,
}

MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

SYNONYMS = {
    "percentage": "percent", "proportion": "percent", "share": "percent", "fraction": "percent",
    "pct": "percent", "%": "percent", "avg": "average", "mean": "average", "maximum": "max",
    "highest": "max", "largest": "max", "biggest": "max", "greatest": "max", "minimum": "min",
    "lowest": "min", "smallest": "min", "number": "count", "many": "count", "amount": "total",
    "sum": "total", "town": "city", "cost": "price",
}
"""A few interchangeable words of analytics questions, mapped to one spelling before comparing wordings."""


@dataclass(frozen=True)
class Token:
    """One token: ``text`` as written, ``norm`` lowercased without a possessive "'s", ``stem`` of it;
    ``number`` for digits and number words; ``kind`` is word, number, date or sign; ``stressed_by`` the word
    that stressed it and was dropped before reading ("single" in "the single longest delay")."""

    text: str
    norm: str
    stem: str
    kind: str
    start: int
    end: int
    number: float | None = None
    stressed_by: str | None = field(default=None, compare=False)

    @property
    def is_stopword(self) -> bool:
        return self.kind == "word" and self.norm in CONTENT_STOPWORDS

    @property
    def is_integer(self) -> bool:
        return self.number is not None and float(self.number).is_integer()

    @property
    def possessive(self) -> bool:
        """Whether the word is written with a possessive "'s" ("Delta's", "the plane's")."""
        return self.text.lower().endswith(("'s", "\u2019s"))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Knowledge's stem, then a final "e" dropped, so that "price"/"prices" and "site"/"sites" meet
    ("prices" loses "es" where "price" keeps its "e"), and a final "ie" made "y" as its plural's "ies" is."""
    stemmed = _knowledge_stem(word)
    if stemmed.endswith("ie") and len(stemmed) > 3:
        return stemmed[:-2] + "y"  # "Adelie"/"Adelies", "movie"/"movies": the plural's "ies" became "y"
    return stemmed[:-1] if stemmed.endswith("e") and len(stemmed) > 3 else stemmed


def number_word(word: str) -> int | None:
    """The value of a number written as a word ("five" → 5), or None."""
    return _SMALL_NUMBERS.get(word.lower())


_ORDINAL_ENDINGS = frozenset({"st", "nd", "rd", "th"})


def _iso_day(text: str) -> str:
    """A day as written ("2013-12-25", "12/25/2013", "25/12/2013") as year-month-day: with slashes, month first
    as in the US, unless the first number cannot be a month."""
    if "/" not in text:
        return text
    first, second, year = (int(part) for part in text.split("/"))
    month, day = (second, first) if first > 12 else (first, second)
    return f"{year:04d}-{month:02d}-{day:02d}"


def tokenize(text: str) -> list[Token]:
    """Every token of ``text``, in order, with character offsets into it."""
    tokens: list[Token] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "word"
        raw = match.group()
        if kind == "number":
            number = float(raw.replace(",", "").replace("\u2212", "-"))
            tokens.append(Token(raw, raw, raw, "number", match.start(), match.end(), number))
            continue
        if kind == "date":
            iso = _iso_day(raw)
            tokens.append(Token(raw, iso, iso, kind, match.start(), match.end()))
            continue
        if kind == "sign":
            tokens.append(Token(raw, raw, raw, kind, match.start(), match.end()))
            continue
        previous = tokens[-1] if tokens else None
        if previous is not None and previous.kind == "number" and previous.end == match.start() \
                and raw.lower() in _ORDINAL_ENDINGS and previous.is_integer:
            # "July 4th", "the 1st": the number itself, its ending part of it
            tokens[-1] = Token(previous.text + raw, previous.norm, previous.stem, "number", previous.start,
                               match.end(), previous.number)
            continue
        norm = raw.lower().replace("’", "'")
        norm = norm.removesuffix("'s")
        norm = norm.replace("'", "")
        value = number_word(norm)
        tokens.append(Token(raw, norm, stem(norm), "word", match.start(), match.end(),
                            None if value is None else float(value)))
    return tokens


def parted(tokens: Sequence[Token], one: int, other: int) -> bool:
    """Whether punctuation ("(", ",", ":"; anything more than a space) stands between tokens ``one`` and
    ``other`` (indexes, in either order), by where the tokens were found in the question."""
    low, high = min(one, other), max(one, other)
    return any(tokens[at + 1].start - tokens[at].end > 1 for at in range(max(low, 0), min(high, len(tokens) - 1)))


@lru_cache(maxsize=65536)
def phrase(text: str) -> tuple[str, ...]:
    """The stems of the content words of ``text``: how names, labels and synonyms are compared with a
    question once stopwords are out of the way ("Weight_in_lbs" → ("weight", "lbs"))."""
    return tuple(token.stem for token in tokenize(split_identifier(text)) if not token.is_stopword)


@lru_cache(maxsize=65536)
def value_tokens(text: str) -> tuple[str, ...]:
    """Every token of a data value, lowercased and stemmed, stopwords kept ("No. 457" → ("no", "457"))."""
    return tuple(token.stem for token in tokenize(text))


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def split_identifier(name: str) -> str:
    """``Miles_per_Gallon`` → "Miles per Gallon", ``sepalLength`` → "sepal Length": an identifier as words."""
    return _CAMEL.sub(" ", name.replace("_", " ").replace("-", " ").replace(".", " "))


def snake(text: str) -> str:
    """Lowercase snake_case of some words, for result and column names."""
    cleaned = re.sub(r"[^0-9a-zA-Z]+", "_", split_identifier(text)).strip("_").lower()
    return re.sub(r"_+", "_", cleaned) or "result"


def canonical(word: str) -> str:
    """One spelling for interchangeable words ("percentage", "share" → "percent"), as a stem."""
    return stem(SYNONYMS.get(word, word))

"""Yes/no questions about rows: "Did any flight go to Honolulu?", "Are there any Gentoo penguins on Dream?".
The answer is whether at least one row meets the question's conditions, not the rows themselves: listing
them would answer another question (and no rows would read as "nothing found" rather than "no")."""

from __future__ import annotations

from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.vocabulary import AUXILIARIES

_ANY = frozenset({"any", "anything", "anyone", "anybody", "ever"})
ONLY_WORDS = frozenset({"only", "always"})
"""Words that ask a condition of every row ("did HA only fly to HNL", "was it always JFK")."""


_ASKING_WORDS = frozenset({"how", "what", "which", "who", "whom", "whose", "when", "where", "why"})


def _clause_starts(reading: _Reading, text: str) -> list[int]:
    """Where a clause of the question begins: its first word, and the first word after a comma, a colon or a
    dash set apart by spaces ("On New Year's Day, did any flight …", "Hawaiian (HA) - did they …"), unless the
    question opens by asking what, how or which: then a comma sets a phrase apart inside that one question
    ("How heavy, in grams, was the heaviest …")."""
    starts = [0]
    if reading.norm(0) in _ASKING_WORDS:
        return starts
    for index in range(1, len(reading.tokens)):
        between = text[reading.tokens[index - 1].end:reading.tokens[index].start]
        if "," in between or ":" in between or any(dash in between.split() for dash in _DASHES):
            starts.append(index)
    return starts


_DASHES = ("-", "\u2013", "\u2014")


def read_exists(reading: _Reading, text: str) -> None:
    """An auxiliary verb opening a clause ("did", "are", "is") with "any", "anything" or "ever" after it,
    or "is there a …", "are there flights …": the question asks whether such rows exist. The words that ask it are read, and the
    row noun right after "any" ("any flight") names the rows, not a column called flight."""
    for start in _clause_starts(reading, text):
        said = _asks_whether(reading, start) or _any_asked(reading, start, text)
        if said:
            reading.exists = True
            reading.used.update(said)
            reading.used.update(_answer_form(reading))
            return
    # "Did United fly to Denver in March 2013?": a question opened by an auxiliary asks yes or no too; it is
    # answered so where what it asks about is rows (the shape decides)
    # ("On Dream, are all penguins Chinstraps?": the auxiliary opening the clause after the comma)
    # ("More flights from EWR than from JFK — true or false?": a statement whose answer is asked as true or false)
    form = _answer_form(reading)
    reading.yes_no = bool(form) or any(reading.norm(start) in AUXILIARIES and reading.free(start)
                                       for start in _clause_starts(reading, text))
    if reading.yes_no:
        reading.used.update(form)


_ANSWERS = (("yes", "no"), ("true", "false"))


def _answer_form(reading: _Reading) -> list[int]:
    """"… more than 5 hours late? yes or no", "(yes/no)", "true or false", "is it true that …": the answer's form,
    said with a question that asks whether; the words name no condition."""
    said: list[int] = []
    if [reading.norm(i) for i in range(3)] == ["is", "it", "true"] and reading.norm(3) == "that" \
            and all(reading.free(i) for i in range(4)):
        said = [1, 2, 3]  # ("is" opens the question: read with it)
    for index in range(len(reading.tokens) - 1):
        words = [index, index + 1, index + 2] if reading.norm(index + 1) == "or" else [index, index + 1]
        # ("hatched true or false" names a column's two values: the answer's form is set apart, "— true or false?")
        apart = reading.norm(index) == "yes" or index > 0 and any(mark in reading.gap(index) for mark in "?.,:;(—–-")
        if (reading.norm(index), reading.norm(words[-1])) in _ANSWERS and apart and all(reading.free(i) for i in words):
            return said + words
    return said


def _asks_whether(reading: _Reading, start: int) -> list[int]:
    """The words of a clause starting at ``start`` that ask whether rows exist; empty when it does not."""
    if reading.norm(start) not in AUXILIARIES or not reading.free(start):
        return []
    after = start + 1
    said = [start]
    if reading.norm(after) == "there":
        said.append(after)
        after += 1
        if reading.norm(after) in ("a", "an"):
            _take_row_noun(reading, after + 1)
            return [*said, after]
        if reading.tokens[after:after + 1] and reading.tokens[after].stem in _table_words(reading.base):
            return said  # "are there flights from JFK to Honolulu?"
    found = next((i for i in range(after, min(len(reading.tokens), after + 4))
                  if reading.norm(i) in _ANY and reading.free(i)), None)
    if found is None or any(reading.norm(i) in ONLY_WORDS and reading.free(i) for i in range(after, found)):
        return []  # ("did they only ever fly to HNL": whether every one did, not whether any did)
    _take_row_noun(reading, found + 1)
    return [*said, found]


def _any_asked(reading: _Reading, start: int, text: str) -> list[int]:
    """"Any penguin weighing over 6 kg?", "any flights to HNL in May?": a question opened by "any" and the rows'
    noun, the auxiliary left out, asks whether such rows exist too (a statement "any flight …" does not)."""
    if reading.norm(start) != "any" or not reading.free(start) or not text.rstrip().endswith("?") \
            or start + 1 >= len(reading.tokens) or reading.tokens[start + 1].stem not in _table_words(reading.base):
        return []
    _take_row_noun(reading, start + 1)
    return [start]


def _take_row_noun(reading: _Reading, index: int) -> None:
    """"any flight": a word naming the queried table's rows, read as them even where a column has its name."""
    if index >= len(reading.tokens) or reading.tokens[index].stem not in _table_words(reading.base):
        return
    mention = reading.mention_at(index)
    if mention is not None and (mention.is_value or mention.start != index or mention.end != index + 1):
        return
    if mention is not None:
        reading.mentions.remove(mention)
    reading.used.add(index)


def read_any_row(reading: _Reading) -> None:
    """"The shortest air time of any flight", "every penguin": "any"/"every" before the rows' noun speaks of
    the rows, even where a column has the noun's name (flight, the flight number)."""
    for index, token in enumerate(reading.tokens[:-1]):
        if token.norm in ("any", "every") and reading.free(index) \
                and reading.tokens[index + 1].stem in _table_words(reading.base):
            before = len(reading.used)
            _take_row_noun(reading, index + 1)
            if len(reading.used) > before:
                reading.used.add(index)

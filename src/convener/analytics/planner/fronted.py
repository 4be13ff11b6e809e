"""A glossary term made of a noun and a participle ("time made up", "minutes gained") asked about with its
noun fronted: "how much time did Delta flights make up in the air?", "how many minutes do flights gain?". The
noun opens the question, the verb comes after the rows it is said of, in another form ("make" for "made"):
the noun is the term, and the verb (with its particle) is the term's too, not a word of its own."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from convener.analytics.planner.vocabulary import _UNITS
from convener.analytics.wording import Token, phrase, stem

_BASE_FORMS = {"made": "make", "makes": "make", "making": "make", "won": "win", "lost": "lose", "spent": "spend",
               "took": "take", "taken": "take", "gave": "give", "given": "give", "got": "get", "gotten": "get",
               "flown": "fly", "flew": "fly", "ran": "run", "saw": "see", "seen": "see", "cut": "cut"}
"""Irregular forms of verbs by their base form (regular ones meet at their stem: "gained", "gain")."""
_AUXILIARIES = frozenset({"did", "do", "does"})
_PARTICLES = frozenset({"up", "down", "out", "off", "back", "over", "away", "in"})
_ENDS = frozenset({",", ";", ":", ".", "?", "!"})


def _lemma(word: str) -> str:
    return stem(_BASE_FORMS.get(word, word))


def fronted_spans(tokens: Sequence[Token], text: str, labels: Iterable[str],
                  description: str = "") -> list[tuple[int, tuple[int, ...]]]:
    """(where the noun is, where the verb and its particle are) of each label said with its noun fronted: the
    noun after "how much" or "how many", an auxiliary (did, do, does) after it, and the verb further on in the
    same clause, in any form, with the label's particle right after it when the label has one. A place said
    right after the verb that the term's ``description`` says too ("make up in the air", where the term is
    "minutes a flight gained in the air") is the term's as well."""
    described = set(phrase(description))
    found: list[tuple[int, tuple[int, ...]]] = []
    for label in labels:
        words = label.lower().split()
        if len(words) not in (2, 3) or (len(words) == 3 and words[2] not in _PARTICLES):
            continue
        noun, verb = phrase(words[0]), _lemma(words[1])
        particle = words[2] if len(words) == 3 else None
        if len(noun) != 1:
            continue
        for index in range(2, len(tokens)):
            if tokens[index].stem != noun[0] or tokens[index - 1].norm not in ("much", "many") \
                    or tokens[index - 2].norm != "how":
                continue
            auxiliary = False
            for at in range(index + 1, min(len(tokens), index + 8)):
                if any(mark in text[tokens[at - 1].end:tokens[at].start] for mark in _ENDS):
                    break
                if tokens[at].norm in _AUXILIARIES:
                    auxiliary = True
                    continue
                if auxiliary and _lemma(tokens[at].norm) == verb:
                    has_particle = particle is not None and at + 1 < len(tokens) and tokens[at + 1].norm == particle
                    if particle is None or has_particle:
                        verb_end = at + 2 if has_particle else at + 1
                        found.append((index, (*range(at, verb_end), *_described_place(tokens, verb_end, described))))
                    break
    return found


def verbs_before_amounts(tokens: Sequence[Token], label: str) -> list[tuple[int, int]]:
    """(start, end) of each place a label of a noun and a participle ("minutes made up", "time gained") is said by
    its verb, with the label's particle, right before an amount: "the flights that made up more than 40
    minutes", "gained over 30 minutes". The verb is the term's; the amount is compared with it."""
    words = label.lower().split()
    if len(words) not in (2, 3) or (len(words) == 3 and words[2] not in _PARTICLES):
        return []
    if words[1] not in _BASE_FORMS and not words[1].endswith("ed"):
        return []  # no participle ("late flights")
    verb, particle = _lemma(words[1]), words[2] if len(words) == 3 else None
    found = []
    for at, token in enumerate(tokens):
        if _lemma(token.norm) != verb:
            continue
        end = at + 1
        if particle is not None:
            if end >= len(tokens) or tokens[end].norm != particle:
                continue
            end += 1
        if _past_amount(tokens, end) > end:
            found.append((at, end))
    return found


def places_after_labels(tokens: Sequence[Token], labels: Iterable[str], description: str) -> set[int]:
    """"how many minutes did JFK flights gain in the air", the term being "minutes a flight gained in the air"
    and "gain" one of its labels: the place said right after a one-word label (or its verb), an amount between
    them or not ("made up more than 40 minutes in the air"), which the description says too, is the term's (no
    column of its own, as "air" would be of air_time)."""
    described = set(phrase(description))
    labels = list(labels)
    said = {stem(label.lower()) for label in labels if len(label.split()) == 1}
    ends = [index + 1 for index, token in enumerate(tokens) if token.stem in said]
    ends += [end for label in labels for _, end in verbs_before_amounts(tokens, label)]  # "made up 40 minutes in …"
    return {at for end in ends for at in _described_place(tokens, _past_amount(tokens, end), described)}


_AMOUNT_WORDS = frozenset({"more", "less", "fewer", "than", "over", "under", "above", "below", "at", "least", "most",
                           "about", "around", "by"})


def _past_amount(tokens: Sequence[Token], start: int) -> int:
    """Where the words after an amount said at ``start`` begin ("gained more than 40 minutes in the air": the
    place is after the amount), or ``start`` when none is said there."""
    at = start
    while at < len(tokens) and tokens[at].norm in _AMOUNT_WORDS:
        at += 1
    if at >= len(tokens) or tokens[at].kind != "number":
        return start
    at += 1
    return at + 1 if at < len(tokens) and tokens[at].norm in _UNITS else at


def _described_place(tokens: Sequence[Token], start: int, described: set[str]) -> tuple[int, ...]:
    """"in the air" at ``start`` when the description says its noun: the preposition, article and noun."""
    if start + 2 < len(tokens) and tokens[start].norm in ("in", "on", "at") and tokens[start + 1].norm == "the" \
            and tokens[start + 2].stem in described:
        return (start, start + 1, start + 2)
    if start + 1 < len(tokens) and tokens[start].norm in ("in", "on", "at") and tokens[start + 1].stem in described:
        return (start, start + 1)
    return ()

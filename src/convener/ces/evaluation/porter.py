"""The Porter stemmer exactly as NLTK's ``PorterStemmer()`` stems (its default mode, NLTK_EXTENSIONS).

rouge_score stems with it for ADK's ``response_match_score`` (ROUGE-1), so our ROUGE must stem the same way.
This is an implementation of its own of Porter's rules ("An algorithm for suffix stripping", 1980, with the
conditions *v*, *d, *o as the paper writes them) and of the departures that mode makes from them (Martin
Porter's later changes and NLTK's own, e.g. its table of irregular forms). NLTK is not imported:
``nltk/__init__`` imports scipy and scikit-learn when they are installed, which cost seconds of every
``convener eval run`` for a couple of hundred lines of suffix rules. tests/ces/evaluation/test_porter.py holds
it to NLTK's output word for word (NLTK stays a development dependency for that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

_VOWELS = frozenset("aeiou")
_IRREGULAR = {"skies": "sky", "sky": "sky", "dying": "die", "lying": "lie", "tying": "tie", "news": "news",
              "innings": "inning", "inning": "inning", "outings": "outing", "outing": "outing",
              "cannings": "canning", "canning": "canning", "howe": "howe", "proceed": "proceed",
              "exceed": "exceed", "succeed": "succeed"}
"""NLTK's table of irregular forms: each stems to its value, without the rules."""

Condition = Callable[[str], bool] | None
Rule = tuple[str, str, Condition]
"""A suffix (or ``*d``, a double consonant), what replaces it, and the condition on the stem left without it."""


def _consonants(word: str) -> list[bool]:
    """Whether each letter is a consonant: not a vowel, and a ``y`` only where the letter before it is not one."""
    flags: list[bool] = []
    for index, char in enumerate(word):
        if char in _VOWELS:
            flags.append(False)
        elif char == "y":
            flags.append(True if index == 0 else not flags[index - 1])
        else:
            flags.append(True)
    return flags


def _is_consonant(word: str, index: int) -> bool:
    return _consonants(word)[index]


def _measure(stem: str) -> int:
    """m in [C](VC){m}[V]: how many vowel runs are followed by a consonant run."""
    return "".join("c" if consonant else "v" for consonant in _consonants(stem)).count("vc")


def _positive_measure(stem: str) -> bool:
    return _measure(stem) > 0


def _measure_above_one(stem: str) -> bool:
    return _measure(stem) > 1


def _contains_vowel(stem: str) -> bool:
    return not all(_consonants(stem))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _ends_cvc(word: str) -> bool:
    """*o: the stem ends consonant-vowel-consonant, the last not w, x or y (NLTK: or is a vowel and a consonant)."""
    if len(word) >= 3:
        flags = _consonants(word)
        if flags[-3] and not flags[-2] and flags[-1] and word[-1] not in ("w", "x", "y"):
            return True
    if len(word) == 2:
        flags = _consonants(word)
        return not flags[0] and flags[1]
    return False


def _apply(word: str, rules: Sequence[Rule]) -> str:
    """The first rule whose suffix the word has decides: replaced when its condition holds, else left as it is."""
    for suffix, replacement, condition in rules:
        if suffix == "*d" and _ends_double_consonant(word):
            stem = word[:-2]
            return stem + replacement if condition is None or condition(stem) else word
        if word.endswith(suffix):
            stem = word[:-len(suffix)] if suffix else word
            return stem + replacement if condition is None or condition(stem) else word
    return word


_STEP1A: tuple[Rule, ...] = (("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None))


def _step1a(word: str) -> str:
    if word.endswith("ies") and len(word) == 4:  # NLTK: "dies" -> "die", as "flies" -> "fli"
        return word[:-3] + "ie"
    return _apply(word, _STEP1A)


def _step1b(word: str) -> str:
    if word.endswith("ied"):  # NLTK: "died" -> "die", "spied" -> "spi"
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        stem = word[:-3]
        return stem + "ee" if _measure(stem) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _contains_vowel(word[:-len(suffix)]):
            intermediate = word[:-len(suffix)]
            break
    else:
        return word
    return _apply(intermediate, (
        ("at", "ate", None), ("bl", "ble", None), ("iz", "ize", None),
        ("*d", intermediate[-1], lambda stem: intermediate[-1] not in ("l", "s", "z")),
        ("", "e", lambda stem: _measure(stem) == 1 and _ends_cvc(stem)),
    ))


def _step1c(word: str) -> str:
    # NLTK: y -> i after a consonant that is not the whole stem ("happy" -> "happi", "enjoy" and "sky" stay).
    return _apply(word, (("y", "i", lambda stem: len(stem) > 1 and _is_consonant(stem, len(stem) - 1)),))


_STEP2_SUFFIXES = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
                   ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
                   ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
                   ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
                   ("fulli", "ful"))


def _step2(word: str) -> str:
    if word.endswith("alli") and _positive_measure(word[:-4]):  # NLTK: alli -> al first, then step 2 again
        return _step2(word[:-4] + "al")
    rules: list[Rule] = [(suffix, replacement, _positive_measure) for suffix, replacement in _STEP2_SUFFIXES]
    # NLTK keeps the l of logi with the stem, so short stems ("geo", "theo") count as long ones do.
    rules.append(("logi", "log", lambda stem: _positive_measure(word[:-3])))
    return _apply(word, rules)


_STEP3: tuple[Rule, ...] = tuple((suffix, replacement, _positive_measure) for suffix, replacement in (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", "")))

_STEP4: tuple[Rule, ...] = (
    *((suffix, "", _measure_above_one) for suffix in ("al", "ance", "ence", "er", "ic", "able", "ible", "ant",
                                                      "ement", "ment", "ent")),
    ("ion", "", lambda stem: _measure(stem) > 1 and stem[-1] in ("s", "t")),
    *((suffix, "", _measure_above_one) for suffix in ("ou", "ism", "ate", "iti", "ous", "ive", "ize")),
)


def _step5a(word: str) -> str:
    # Both rules are tried (unlike a rule list): (m>1) E ->, then (m=1 and not *o) E ->.
    if word.endswith("e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _ends_cvc(stem)):
            return stem
    return word


def _step5b(word: str) -> str:
    return _apply(word, (("ll", "l", lambda stem: _measure(word[:-1]) > 1),))


def stem(word: str) -> str:
    """The stem of ``word`` (lower-cased), as ``nltk.stem.porter.PorterStemmer().stem(word)`` returns it."""
    lowered = word.lower()
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered]
    if len(word) <= 2:
        return lowered
    for step in (_step1a, _step1b, _step1c, _step2):
        lowered = step(lowered)
    lowered = _apply(lowered, _STEP3)
    lowered = _apply(lowered, _STEP4)
    return _step5b(_step5a(lowered))

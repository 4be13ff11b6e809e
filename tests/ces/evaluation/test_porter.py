"""Our Porter stemmer stems as NLTK's ``PorterStemmer()`` (the one rouge_score, and so ADK's ROUGE, uses)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from nltk.stem.porter import PorterStemmer  # type: ignore[import-untyped]

from convener.ces.evaluation import porter

ROOT = Path(__file__).resolve().parents[3]

# Every suffix a rule looks for, and the irregular forms, so that each rule meets stems it applies to and stems
# whose condition fails.
SUFFIXES = ["sses", "ies", "ss", "s", "eed", "ed", "ing", "ied", "at", "bl", "iz", "y", "ational", "tional", "enci",
            "anci", "izer", "bli", "abli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism",
            "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "fulli", "logi", "icate", "ative", "alize",
            "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
            "ent", "sion", "tion", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "ying", "ies"]
STEMS = ["", "a", "b", "y", "ay", "by", "yy", "sk", "ge", "theo", "tr", "hop", "fil", "fail", "sing", "bled", "conflat",
         "troubl", "siz", "hopp", "tann", "fall", "hiss", "fizz", "happ", "enjo", "sp", "relat", "condit", "valen",
         "hesit", "digit", "conform", "radic", "differ", "vil", "analog", "vietnam", "predic", "oper", "feud",
         "decis", "hope", "callous", "formal", "sensi", "triplic", "electr", "good", "reviv", "allow", "infer",
         "airlin", "gyroscop", "adjust", "defens", "irrit", "replac", "depend", "adopt", "homolog", "commun",
         "activ", "angular", "effect", "bowdler", "probat", "rat", "ceas", "controll", "roll", "syzyg", "toy",
         "archaeo", "philo", "d", "l", "ti", "li", "di", "spi", "fli", "news", "inn", "out", "cann", "proce"]


def words() -> list[str]:
    found = {word for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for word in re.findall(r"[a-z]+", path.read_text("utf-8").lower())}
    found.update(stem + suffix for stem in STEMS for suffix in SUFFIXES)
    found.update(stem + suffix + more for stem in STEMS[:40] for suffix in SUFFIXES for more in ("s", "ed", "ly"))
    found.update(["sky", "skies", "dying", "lying", "tying", "innings", "outings", "cannings", "howe", "proceed",
                  "exceed", "succeed", "Running", "CARESSES", "İstanbul", "naïve", "y" * 40])
    # Random words over letters weighted towards the vowels and y, where the consonant rules are subtle.
    generator = random.Random(20)
    letters = "aeiouyyybcdlmnrstvwxz"
    found.update("".join(generator.choice(letters) for _ in range(generator.randint(1, 14))) for _ in range(20000))
    return sorted(found)


def test_stems_as_nltk_does_word_for_word() -> None:
    nltk = PorterStemmer()
    listed = words()
    assert len(listed) > 25000
    differing = [(word, porter.stem(word), nltk.stem(word)) for word in listed if porter.stem(word) != nltk.stem(word)]
    assert not differing, differing[:20]


@pytest.mark.parametrize(("word", "expected"), [
    ("caresses", "caress"), ("ponies", "poni"), ("dies", "die"), ("agreed", "agre"), ("feed", "feed"),
    ("motoring", "motor"), ("hopping", "hop"), ("filing", "file"), ("happy", "happi"), ("enjoy", "enjoy"),
    ("relational", "relat"), ("generalization", "gener"), ("delivered", "deliv"), ("orders", "order"),
    ("skies", "sky"), ("dying", "die"), ("geology", "geolog"), ("controlling", "control"), ("is", "is"),
])
def test_known_stems(word: str, expected: str) -> None:
    assert porter.stem(word) == expected

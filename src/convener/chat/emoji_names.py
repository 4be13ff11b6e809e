"""Emoji as Slack and Mattermost name them (gemoji short names), turned into the Unicode they stand for."""

from __future__ import annotations

import re

import emoji

_SKIN_TONES = {
    "2": "\U0001f3fb", "3": "\U0001f3fc", "4": "\U0001f3fd", "5": "\U0001f3fe", "6": "\U0001f3ff",
    "light": "\U0001f3fb", "medium_light": "\U0001f3fc", "medium": "\U0001f3fd",
    "medium_dark": "\U0001f3fe", "dark": "\U0001f3ff",
}
_NAMED_TONE = re.compile(r"(?P<base>.+?)_(?P<tone>medium_light|medium_dark|light|medium|dark)_skin_tone")
_FLAG = re.compile(r"flag-(?P<country>[a-z]{2})")
_SLACK_ONLY_NAMES = {"simple_smile": "\U0001f642"}
"""Slack short names missing from the gemoji/CLDR aliases of the ``emoji`` package."""


def unicode_emoji(name: str) -> str:
    """The Unicode emoji for a short name as Slack and Mattermost write it (``+1``, ``+1::skin-tone-2``,
    ``+1_light_skin_tone``, ``flag-fr``); a custom emoji's name is returned as it is."""
    glyph = _glyph(name)
    if glyph is not None:
        return glyph
    base, tone = _split_skin_tone(name)
    glyph = _glyph(base) if tone else None
    return _with_skin_tone(glyph, tone) if glyph is not None and tone else name


def _glyph(name: str) -> str | None:
    if name in _SLACK_ONLY_NAMES:
        return _SLACK_ONLY_NAMES[name]
    # Slack hyphenates some names the CLDR tables underscore (``man-facepalming``).
    for candidate in dict.fromkeys((name, name.replace("-", "_"))):
        text = emoji.emojize(f":{candidate}:", language="alias")
        if emoji.is_emoji(text):
            return text
    flag = _FLAG.fullmatch(name)
    if flag:
        letters = "".join(chr(0x1F1E6 + ord(c) - ord("a")) for c in flag["country"])
        return letters if emoji.is_emoji(letters) else None
    return None


def _split_skin_tone(name: str) -> tuple[str, str | None]:
    base, separator, number = name.partition("::skin-tone-")
    if separator:
        return base, _SKIN_TONES.get(number)
    named = _NAMED_TONE.fullmatch(name)
    if named:
        return named["base"], _SKIN_TONES[named["tone"]]
    return name, None


def _with_skin_tone(glyph: str, tone: str) -> str:
    """The modifier goes right after the first code point, in place of its variation selector (so
    ``🤦‍♂️`` becomes ``🤦🏻‍♂️``); an emoji that takes no skin tone stays as it is."""
    toned = glyph[0] + tone + glyph[1:].removeprefix("\ufe0f")
    return toned if emoji.is_emoji(toned) else glyph

"""Guardrails' content filters: banned phrases found in what the user says or what an agent answers.

Matching is case-insensitive, on Unicode-normalised text (NFC; with ``disregardDiacritics``, NFKD with
the combining marks dropped, so "cafe" matches "café"), in one of CES's three match types: a substring, a
phrase between word delimiters, or a regular expression. Regular expressions are held to the playbook's
rules when the guardrail is written (length, and no shape that can backtrack catastrophically), since
they run on text anyone can send.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from convener.api.errors import InvalidArgument
from convener.ces.definitions import ContentFilter, MatchType
from convener.ces.runtime.playbook import check_regex

USER_INPUT = "USER_INPUT"
AGENT_RESPONSE = "AGENT_RESPONSE"
MAX_PHRASES = 500
"""Per list; every phrase is tried on every checked text, so the lists stay bounded."""
MAX_PHRASE_LENGTH = 500
MAX_FILTERED_CHARS = 100_000
"""Text beyond this is not searched: the bound on the work one input or reply can cause."""

LISTS = ("banned_contents", "banned_contents_in_user_input", "banned_contents_in_agent_response")
_STAGE_LISTS = {
    USER_INPUT: ("banned_contents", "banned_contents_in_user_input"),
    AGENT_RESPONSE: ("banned_contents", "banned_contents_in_agent_response"),
}
_WHERE = {USER_INPUT: "the user input", AGENT_RESPONSE: "the agent response"}


def _wire(attribute: str) -> str:
    return ContentFilter.model_fields[attribute].alias or attribute


def normalise(text: str, disregard_diacritics: bool) -> str:
    if not disregard_diacritics:
        return unicodedata.normalize("NFC", text)
    return "".join(char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char))


def _pattern_text(phrase: str, match_type: MatchType, disregard_diacritics: bool) -> str:
    phrase = normalise(phrase, disregard_diacritics)
    if match_type == MatchType.REGEXP_MATCH:
        return phrase
    if match_type == MatchType.WORD_BOUNDARY_STRING_MATCH:
        # Word delimiters around the phrase, whatever it starts or ends with: "(?<!\w)" rather than "\b".
        return rf"(?<!\w){re.escape(phrase)}(?!\w)"
    return re.escape(phrase)


@functools.lru_cache(maxsize=4096)
def _compiled(phrase: str, match_type: MatchType, disregard_diacritics: bool) -> re.Pattern[str]:
    """Compiled once per phrase. Only checked patterns are stored, so this cannot meet a hazardous one."""
    return re.compile(_pattern_text(phrase, match_type, disregard_diacritics), re.IGNORECASE)


def check(spec: ContentFilter, field: str) -> None:
    """INVALID_ARGUMENT naming the field, for a filter that cannot run or would match every text."""
    if spec.match_type in (None, MatchType.MATCH_TYPE_UNSPECIFIED):
        raise InvalidArgument(
            f"{field}.matchType is required: SIMPLE_STRING_MATCH, WORD_BOUNDARY_STRING_MATCH or REGEXP_MATCH"
        )
    match_type = spec.match_type
    assert match_type is not None
    for attribute in LISTS:
        phrases = getattr(spec, attribute) or []
        if len(phrases) > MAX_PHRASES:
            raise InvalidArgument(f"{field}.{_wire(attribute)} lists more than {MAX_PHRASES} phrases")
        for index, phrase in enumerate(phrases):
            where = f"{field}.{_wire(attribute)}[{index}]"
            if not phrase.strip():
                raise InvalidArgument(f"{where} is empty; an empty phrase would match every text")
            if len(phrase) > MAX_PHRASE_LENGTH:
                raise InvalidArgument(f"{where} is longer than {MAX_PHRASE_LENGTH} characters")
            if match_type == MatchType.REGEXP_MATCH:
                pattern = check_regex(_pattern_text(phrase, match_type, bool(spec.disregard_diacritics)), where)
                if pattern.fullmatch("") is not None:
                    raise InvalidArgument(f"{where} matches the empty string, so it would match every text")


def applies(spec: ContentFilter, stage: str) -> bool:
    return any(getattr(spec, attribute) for attribute in _STAGE_LISTS.get(stage, ()))


def find(spec: ContentFilter, stage: str, texts: Sequence[str]) -> str | None:
    """Why the filter triggers on ``texts`` (the first banned phrase found), or None.

    Raises ``re.error`` only for a pattern that was stored by an older, laxer check.
    """
    match_type = spec.match_type or MatchType.SIMPLE_STRING_MATCH
    strip = bool(spec.disregard_diacritics)
    phrases = [phrase for attribute in _STAGE_LISTS[stage] for phrase in getattr(spec, attribute) or ()]
    for text in texts:
        sample = normalise(text[:MAX_FILTERED_CHARS], strip)
        for phrase in phrases:
            if _compiled(phrase, match_type, strip).search(sample) is not None:
                return f'banned content "{phrase}" found in {_WHERE[stage]}'
    return None

"""Routes: "the 5 busiest routes", "the longest origin-destination routes by distance". In a table of
journeys (one text column for where each starts, one for where it ends, as their names and descriptions
say), a route is the pair of the two: the groups a question about routes ranks or counts are the pairs."""

from __future__ import annotations

from convener.analytics.planner.scope import _direction_of
from convener.analytics.planner.state import _Reading
from convener.analytics.shapes import STRING
from convener.analytics.wording import Token

_ROUTES = frozenset({"route", "routes"})
_PAIRING = frozenset({"origin", "destination", "and", "to", "pair", "pairs", "combination", "combinations"})
"""Words that say the two ends again, before or in parentheses after "routes" ("(origin and destination
pairs)", "origin-destination routes")."""


def read_routes(reading: _Reading, text: str) -> None:
    """Routes named as the rows' groups: the start and end columns become the group keys (start first), and
    the words that said them are read."""
    at = next((i for i, token in enumerate(reading.tokens) if token.norm in _ROUTES and reading.free(i)), None)
    if at is None or not _asked_of_each(reading, at):
        return  # "flights on routes longer than 2,000 miles": the flights, whatever their route
    ends = route_ends(reading)
    if ends is None:
        return
    said = {at, *_pairing(reading, range(at - 1, max(-1, at - 4), -1)), *_restated(reading, text, at)}
    for mention in [m for m in reading.mentions if m.start in said and not m.is_value]:
        reading.mentions.remove(mention)  # "origin", "destination": the ends said again, no keys of their own
    reading.used.update(said)
    reading.keys.extend(column for column in ends if column not in reading.keys)
    before = reading.tokens[at - 1] if at > 0 else None
    if reading.top is None and before is not None and before.norm.endswith("est") \
            and not any(token.number is not None for token in reading.tokens[max(0, at - 4):at]):
        reading.top = 1  # "the shortest route distance": the one route ranked first, not each route's least
    # ("(origin and destination pairs)" may have been read as columns to show of each row: they are the keys)
    reading.shown = [column for column in reading.shown if column not in ends]


def _asked_of_each(reading: _Reading, at: int) -> bool:
    """Whether the routes are what the question ranks, counts or lists: a number, a superlative, "which",
    "each" or "per" among the few words before "routes" ("the 5 busiest routes", "which routes")."""
    # ("the 3 most frequently flown origin-destination routes": six words back, for routes said as the groups;
    # "route" among columns to show, "… highest speed? Show carrier, route and speed", is no group)
    back = 6 if reading.norm(at) == "routes" else 4
    before = [reading.tokens[i] for i in range(max(0, at - back), at)]
    return any(token.number is not None or token.norm in _ASKING or token.norm.endswith("est") for token in before)


_ASKING = frozenset({"which", "what", "each", "every", "per", "most", "least", "top", "bottom"})


def route_ends(reading: _Reading) -> tuple[str, str] | None:
    """The one text column a row starts from and the one it ends at; None unless there is exactly one of each."""
    away = [c.name for c in reading.base.columns if c.type == STRING and _direction_of(c) == "away"]
    toward = [c.name for c in reading.base.columns if c.type == STRING and _direction_of(c) == "toward"]
    return (away[0], toward[0]) if len(away) == 1 and len(toward) == 1 else None


def _pairing(reading: _Reading, indexes: range) -> list[int]:
    """The words right before "routes" that name its two ends ("origin-destination"), nearest first."""
    said = []
    for index in indexes:
        if reading.norm(index) not in _PAIRING:  # (the ends' names may have been read as directions already)
            break
        said.append(index)
    return said


def _restated(reading: _Reading, text: str, at: int) -> list[int]:
    """The words of parentheses right after "routes" that only say its two ends again ("(origin and
    destination pairs)", "(origin to destination)")."""
    tokens: list[Token] = reading.tokens
    if at + 1 >= len(tokens) or "(" not in text[tokens[at].end:tokens[at + 1].start]:
        return []
    inside = []
    for index in range(at + 1, len(tokens)):
        inside.append(index)
        if ")" in text[tokens[index].end:tokens[index + 1].start if index + 1 < len(tokens) else len(text)]:
            break
    return inside if all(reading.norm(i) in _PAIRING for i in inside) else []

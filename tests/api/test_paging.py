"""AIP-158 paging: page sizes, and signed page tokens bound to their query and caller."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from typing import Any

import pytest

from convener.api.errors import InvalidArgument
from convener.api.paging import JsonScalar, PageTokens, resolve_page_size, split_page

SECRET = bytes(range(32))
QUERY = {"method": "list_conversations", "parent": "projects/p/locations/l/apps/a", "filter": "", "sources": []}
CALLER = "users/alice"
INVALID = "pageToken is not valid for this request"
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@pytest.fixture
def tokens() -> PageTokens:
    return PageTokens(SECRET)


@pytest.fixture
def token(tokens: PageTokens) -> str:
    return tokens.issue(query=QUERY, caller=CALLER, position=[1_712_345_678_000_000, "conversation-7"])


def rejected(tokens: PageTokens, token: str, *, query: dict[str, Any] = QUERY, caller: str = CALLER) -> None:
    with pytest.raises(InvalidArgument) as caught:
        tokens.position(token, query=query, caller=caller)
    assert INVALID in caught.value.message


# --- page sizes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "expected"),
    [(None, 20), (0, 20), (1, 1), (19, 19), (20, 20), (99, 99), (100, 100), (101, 100), (10**9, 100)],
)
def test_page_size_unset_or_zero_is_the_default_and_large_is_the_maximum(requested: int | None, expected: int) -> None:
    assert resolve_page_size(requested, default=20, maximum=100) == expected


@pytest.mark.parametrize("requested", [-1, -100])
def test_a_negative_page_size_is_invalid(requested: int) -> None:
    with pytest.raises(InvalidArgument) as caught:
        resolve_page_size(requested, default=20, maximum=100)
    assert caught.value.message == f"pageSize must not be negative (got {requested})"


def test_split_page_tells_whether_more_rows_follow() -> None:
    assert split_page([1, 2, 3], 2) == ([1, 2], True)
    assert split_page([1, 2], 2) == ([1, 2], False)
    assert split_page([], 2) == ([], False)


# --- tokens -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "position",
    [
        [],
        ["abc"],
        [1_712_345_678_000_000, "conversation-7"],
        [-62_135_596_800_000_000, "a"],
        [None, True, False, 1.5, 0],
        ["café ☕ \"quoted\" \\ . /", "ünïcödé"],
    ],
)
def test_a_token_gives_back_the_position_it_was_issued_for(tokens: PageTokens, position: list[JsonScalar]) -> None:
    token = tokens.issue(query=QUERY, caller=CALLER, position=position)
    assert tokens.position(token, query=QUERY, caller=CALLER) == position


def test_tokens_are_url_safe_text(token: str) -> None:
    assert re.fullmatch(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+", token)


def test_the_query_is_compared_by_content_not_key_order(tokens: PageTokens, token: str) -> None:
    reordered = dict(reversed(list(QUERY.items())))
    assert tokens.position(token, query=reordered, caller=CALLER) == [1_712_345_678_000_000, "conversation-7"]


def test_another_installation_with_the_same_secret_accepts_the_token(token: str) -> None:
    assert PageTokens(bytes(SECRET)).position(token, query=QUERY, caller=CALLER)[1] == "conversation-7"


@pytest.mark.parametrize(
    "change",
    [
        {"filter": "turnCount > 2"},
        {"parent": "projects/p/locations/l/apps/b"},
        {"sources": ["LIVE"]},
        {"method": "list_apps"},
        {"extra": None},
    ],
)
def test_a_token_is_rejected_on_another_query(tokens: PageTokens, token: str, change: dict[str, Any]) -> None:
    rejected(tokens, token, query={**QUERY, **change})


def test_a_token_is_rejected_for_another_caller(tokens: PageTokens, token: str) -> None:
    rejected(tokens, token, caller="users/bob")
    rejected(tokens, token, caller="users/alice ")
    rejected(tokens, token, caller="")


def test_a_token_is_rejected_by_an_installation_with_another_secret(token: str) -> None:
    rejected(PageTokens(b"another secret"), token)
    rejected(PageTokens(SECRET[:-1] + b"\x00"), token)


def test_changing_any_character_of_a_token_invalidates_it(tokens: PageTokens, token: str) -> None:
    for index, char in enumerate(token):
        if char == ".":
            continue
        # Flip the highest of the character's six bits: always part of the decoded bytes.
        replacement = ALPHABET[ALPHABET.index(char) ^ 0b100000]
        rejected(tokens, token[:index] + replacement + token[index + 1 :])


def test_every_truncation_of_a_token_is_rejected(tokens: PageTokens, token: str) -> None:
    for length in range(len(token)):
        rejected(tokens, token[:length])
    body, mac = token.split(".")
    rejected(tokens, body)
    rejected(tokens, f"{body}.")
    rejected(tokens, f".{mac}")


def test_a_body_from_one_token_and_the_mac_of_another_are_rejected(tokens: PageTokens, token: str) -> None:
    other = tokens.issue(query=QUERY, caller=CALLER, position=[0, "z"])
    rejected(tokens, f"{token.split('.')[0]}.{other.split('.')[1]}")
    rejected(tokens, f"{other.split('.')[0]}.{token.split('.')[1]}")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _signed(body: bytes, secret: bytes = SECRET) -> str:
    """A token with a genuine MAC over ``body``: what only a holder of the secret could make."""
    return f"{_b64(body)}.{_b64(hmac.new(secret, body, hashlib.sha256).digest()[:16])}"


def _fingerprint(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def test_the_signing_scheme_is_the_one_these_tests_assume(tokens: PageTokens) -> None:
    body = json.dumps({"v": 1, "q": _fingerprint(QUERY), "c": _fingerprint(CALLER), "k": ["x"]}).encode()
    assert tokens.position(_signed(body), query=QUERY, caller=CALLER) == ["x"]


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"\xff\xfe",
        b"[1, 2]",
        b'"text"',
        b"null",
        json.dumps({"v": 2, "q": _fingerprint(QUERY), "c": _fingerprint(CALLER), "k": ["x"]}).encode(),
        json.dumps({"q": _fingerprint(QUERY), "c": _fingerprint(CALLER), "k": ["x"]}).encode(),
        json.dumps({"v": 1, "q": _fingerprint(QUERY), "c": _fingerprint(CALLER), "k": "x"}).encode(),
        json.dumps({"v": 1, "q": _fingerprint(QUERY), "c": _fingerprint(CALLER)}).encode(),
        json.dumps({"v": 1, "c": _fingerprint(CALLER), "k": ["x"]}).encode(),
        json.dumps({"v": 1, "q": _fingerprint(QUERY), "k": ["x"]}).encode(),
    ],
)
def test_signed_bodies_of_the_wrong_shape_are_rejected(tokens: PageTokens, payload: bytes) -> None:
    rejected(tokens, _signed(payload))


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        ".",
        "..",
        "abc",
        "a.b",
        "a.b.c",
        "!!!!.!!!!",
        "é.é",
        "eyJ2IjoxfQ.",
        "\x00.\x00",
        "a" * 3000 + "." + "b" * 22,
        "null",
        "{}",
    ],
)
def test_garbage_tokens_are_rejected(tokens: PageTokens, garbage: str) -> None:
    rejected(tokens, garbage)


def test_an_overlong_token_is_rejected_even_if_signed(tokens: PageTokens) -> None:
    body = json.dumps(
        {"v": 1, "q": _fingerprint(QUERY), "c": _fingerprint(CALLER), "k": ["x" * 3000]}
    ).encode()
    rejected(tokens, _signed(body))

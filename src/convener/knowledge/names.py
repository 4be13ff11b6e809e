"""Document names: ``documents/{uri without scheme}``, as Google's Developer Knowledge API spells them.

A URI is made of the ingest's base URL and a file's path inside the source, so names are readable and
stable across re-ingests: the same file lands on the same document.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from convener.api.errors import InvalidArgument
from convener.outside.limits import DOCUMENT_NAME_CHARACTERS

PREFIX = "documents/"
MAX_NAME_LENGTH = DOCUMENT_NAME_CHARACTERS
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_UNSAFE = re.compile(r"[\x00-\x20\x7f]")


def uri_for(base_url: str, path: str) -> str:
    """The URI of the file at ``path`` (POSIX, relative) under ``base_url``; characters a URL cannot hold
    are percent-encoded, so a name never carries spaces or controls."""
    return base_url.rstrip("/") + "/" + quote(path, safe="/-._~!$&'()*+,;=:@%")


def name_for(uri: str) -> str:
    """``https://docs.example.com/a/b.html`` → ``documents/docs.example.com/a/b.html``."""
    return PREFIX + _SCHEME.sub("", uri, count=1).lstrip("/")


def check_base_url(base_url: str) -> str:
    """A base URL with a scheme and no query or fragment (they would end up in every name)."""
    text = base_url.strip()
    parts = urlsplit(text)
    if not _SCHEME.match(text) or _UNSAFE.search(text) or parts.query or parts.fragment:
        raise InvalidArgument(
            f'baseUrl "{text[:80]}" must be a URL such as https://docs.example.com/guide/, without query or fragment')
    if parts.scheme != "file" and not parts.netloc:
        raise InvalidArgument(f'baseUrl "{text[:80]}" has no host')
    return text


def default_data_source(base_url: str) -> str:
    """The host of the base URL, as Google names its data sources (``firebase.google.com``); for
    ``file://`` URLs, the last folder of the path."""
    parts = urlsplit(base_url)
    if parts.netloc:
        return parts.netloc.lower()
    return parts.path.rstrip("/").rsplit("/", 1)[-1] or "local"


def check_name(text: object, field: str = "name") -> str:
    """A well-formed document name, or INVALID_ARGUMENT naming ``field``."""
    if not isinstance(text, str) or not text:
        raise InvalidArgument(f"{field} is required, in the format documents/{{uri_without_scheme}}")
    if len(text) > MAX_NAME_LENGTH:
        raise InvalidArgument(f"{field} is longer than {MAX_NAME_LENGTH} characters")
    if not text.startswith(PREFIX) or len(text) == len(PREFIX) or _UNSAFE.search(text):
        raise InvalidArgument(
            f'{field} "{text[:80]}" does not match the format documents/{{uri_without_scheme}}')
    return text

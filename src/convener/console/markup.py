"""Markdown a caller recorded (a chat message, an indexed document), rendered to HTML that is safe by
construction: markdown-it-py with raw HTML off (an HTML tag in the text is escaped as text), images off
(a remote image would be fetched), and links only to http(s) and mailto URLs — a ``javascript:`` or
``data:`` link, or a relative one, is not a link: its Markdown stays on the page as text. Everything else
markdown-it emits is escaped text inside the tags of its own rules."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

SAFE_LINK = re.compile(r"^(?:https?:|mailto:)", re.IGNORECASE)
"""Link targets drawn as links (checked after markdown-it normalised the URL)."""


def _link_allowed(url: str) -> bool:
    return bool(SAFE_LINK.match(url.strip()))


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # Another site's page gets neither this page's address nor a handle on its window.
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    parser.enable(["strikethrough", "table"])
    parser.disable("image")
    parser.validateLink = _link_allowed  # type: ignore[method-assign]
    parser.add_render_rule("link_open", _link_open)
    return parser


_PARSER = _parser()


def markdown_html(text: str | None) -> Markup:
    """``text`` (Markdown) as HTML safe to put on a page as it is."""
    return Markup(_PARSER.render(text or ""))  # noqa: S704 - markdown-it escapes all text; no raw HTML, see above

"""Message text as Markdown: the one dialect every chat message is served in.

Messages are imported from Slack (mrkdwn), Google Chat (its markup) and Mattermost (Markdown), and sent
with ``send_message`` in Google Chat's markup. Whatever the source, a message's ``plaintextBody`` is
written in one dialect, described here.

The dialect
===========

CommonMark (https://spec.commonmark.org/) with GitHub's strikethrough (``~~text~~``); nothing else (no
tables, no task lists, no raw HTML, no footnotes). What converted text uses of it:

- ``**bold**``, ``*italic*``, ``~~strike~~``, ```` `code` ```` (a longer backtick fence when the code holds
  backticks) and fenced code blocks (a line of three or more backticks, no info string);
- ``- item`` bullets, nested by two spaces per level; ``> `` quotes (a bullet or code block may be quoted);
- ``[text](https://url)`` links (the destination in ``<…>`` when it holds spaces or parentheses) and
  ``<https://url>`` for a link shown as its address. Only ``http``, ``https`` and ``mailto`` links are
  written as links; any other scheme is written as its text;
- a line break is a line break: chat text is written line by line, so a newline inside a paragraph
  means a new line (render with soft breaks as hard breaks: markdown-it ``breaks``, as GitHub comments
  and Mattermost do). Blocks of different kinds (a paragraph, a list, a quote, a code block) are
  separated by a blank line, so that a line after a quote or a bullet never joins it;
- mentions are plain text: ``@Display Name``, ``#channel``, ``@here``.

Literal text never becomes markup. It is escaped with a backslash where Markdown would read it as syntax,
and only there, so text stays readable:

- everywhere: ```` ` ```` ``*`` ``~`` ``[`` ``]``; ``_`` unless between two letters or digits
  (``snake_case`` stays); ``\\`` before punctuation or at the end of a line; ``<`` unless followed by a
  space; ``&`` when it starts a character reference (``\\&amp;``); ``!`` before a link;
- at the start of a line: ``>``, ``|``, ``#`` that would start a heading, ``-`` ``+`` ``=`` that would
  start a bullet or underline a heading, the ``.`` or ``)`` of ``1.`` / ``1)`` that would start a list;
- whitespace at the start of a line is kept (it would otherwise be dropped, or make a code block) by
  writing its first character as a character reference: ``&#32;`` for a space, ``&#9;`` for a tab.
  Trailing spaces and tabs of a line are dropped (other whitespace there is written the same way).
  Runs of blank lines are one blank line.

Converting Slack mrkdwn and Google Chat markup
==============================================

The two are read alike; where they differ it is said.

- ``*bold*`` → ``**bold**``; ``_italic_`` → ``*italic*``; ``~strike~`` → ``~~strike~~``. A marker counts
  only at a word boundary, as in Slack: an opening one follows the start of the line, whitespace or
  punctuation and precedes non-space text; a closing one the reverse. So ``2*3*4`` and ``snake_case_name``
  are literal. Of a run of markers (``**x**``) the innermost pair counts and the rest is literal text
  (Slack shows ``*`` **x** ``*``). Styles nest (``*bold _and italic_*``) but do not cross, and are
  confined to a line. A style right after another (``*a*_b_``) is written with underscores
  (``**a**_b_``), as two runs of ``*`` would join into one. Where Markdown cannot write a style at all
  (``<@U1>*(x)*`` is ``@Name**(x)**``, and ``**`` between a letter and punctuation does not open), its
  text is kept without it.
- ```` `code` ```` → a code span and ```` ```block``` ```` → a fenced code block on its own lines
  (also when written mid-line); their content is kept verbatim (no markup, no mentions, no links inside).
  One newline just inside a block's fences is dropped.
- Lines starting with ``•``, ``◦``, ``▪``, ``- `` or ``* `` are bullets → ``- item``, nested by
  indentation. ``1.`` is not a list: it is kept as typed.
- ``>`` at the start of a line quotes the line; in Slack, ``>>>`` quotes the rest of the message.
- Links: ``<https://x|text>`` → ``[text](https://x)``; ``<https://x>`` → ``<https://x>``; same for
  ``mailto:``. A bare ``http(s)://`` URL in the text becomes ``<https://x>`` (trailing punctuation is
  not part of it).
- Slack mentions: ``<@U123>`` / ``<@U123|name>`` → ``@Display Name`` (the user's name, else ``name``,
  else ``@U123``); ``<#C123|general>`` / ``<#C123>`` → ``#general`` (the channel's name, else ``general``,
  else ``#C123``); ``<!here>``, ``<!channel>``, ``<!everyone>`` → ``@here`` etc.;
  ``<!subteam^S123|@team>`` → ``@team``; ``<!date^…|fallback>`` → ``fallback``.
- Google Chat mentions: ``<users/123>``, ``<users/alice@x.com>`` → ``@Display Name`` (else
  ``@users/123``); ``<users/all>`` → ``@all``. Any other ``<…>`` is literal text.
- Slack's emoji codes ``:tada:``, ``:+1::skin-tone-2:`` are written as the emoji they stand for (a custom
  emoji's code stays as typed).
- Slack's entities ``&amp;`` ``&lt;`` ``&gt;`` are read as ``&`` ``<`` ``>`` (also inside code);
  Google Chat text has none.

Markdown (Mattermost) is already the dialect: it is served as written, with line endings normalised,
unless it holds raw HTML or a link to another scheme than ``http``, ``https`` or ``mailto`` (say
``javascript:``): such a message is served as literal text, escaped, so no client renders that markup.
Its mentions are ``@username`` words; its plain text (for search) drops markup approximately.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from markdown_it import MarkdownIt

from convener.chat.emoji_names import unicode_emoji
from convener.chat.records import TextFormat

__all__ = ["Converted", "Names", "convert", "escape", "has_link", "mentions", "plain_text", "to_markdown"]


class Names(Protocol):
    """Display names for what a message refers to by ID."""

    def user(self, ref: str) -> str | None:
        """A mentioned user's name: Slack ``U012AB`` or Chat ``users/123`` / ``users/alice@x.com``."""
        ...

    def channel(self, ref: str) -> str | None:
        """A linked Slack channel's name (``C0123``)."""
        ...


# ---------------------------------------------------------------- public functions


@dataclass(frozen=True)
class Converted:
    """Everything an import or a sent message stores of its text, from one reading of it."""

    markdown: str
    """As ``to_markdown``."""
    plain_text: str
    """As ``plain_text``."""
    mentions: tuple[str, ...]
    """As ``mentions``."""
    has_link: bool
    """As ``has_link``."""


def convert(text: str, text_format: TextFormat, names: Names) -> Converted:
    """``to_markdown``, ``plain_text``, ``mentions`` and ``has_link`` of one message at once: its lines are
    split, lexed and parsed once for all four (an import's time is mostly this)."""
    text = _normalise_newlines(text)
    if _is_plain(text, text_format):
        # Most messages are a few words: nothing in them is markup, so they are their own Markdown and
        # plain text (the full reading below gives the same, at ~20x the cost).
        return Converted(text, text, (), False)
    if text_format == "slack" and (simple := _convert_simple_slack(text, names)) is not None:
        return simple
    return _convert_read(text, text_format, names)


def _convert_read(text: str, text_format: TextFormat, names: Names) -> Converted:
    """``convert`` of newline-normalised text by reading it whole: lines, tokens, inline nodes."""
    if text_format == "markdown":
        return Converted(to_markdown(text, text_format, names), _markdown_plain_text(text),
                         tuple(mentions(text, text_format)), has_link(text, text_format))
    lines = _lines(text, text_format)
    tokens = [_lex(line.text, text_format) if line.kind in ("text", "bullet") else () for line in lines]
    nodes = [_parse(line_tokens) if line_tokens else [] for line_tokens in tokens]
    found: list[str] = []
    linked = False
    for line_tokens in tokens:
        for token in line_tokens:
            if isinstance(token, _Link):
                linked = True
            elif isinstance(token, _Mention) and token.kind == "user" and token.ref != "users/all":
                found.append(token.ref)
    return Converted(_joined_markdown(lines, nodes, names), _joined_plain_text(lines, nodes, names),
                     tuple(dict.fromkeys(found)), linked)


_PLAIN_MARKUP_FREE: dict[TextFormat, re.Pattern[str]] = {
    # Characters that can start markup, a mention, a link (a bare URL needs its ":"), an emoji code, an
    # entity, or need a backslash in Markdown anywhere in a line; a text with none of them is literal
    # wherever it stands but at the start of a line (checked apart). Mattermost's Markdown adds "@".
    "slack": re.compile(r"[^`<>:*_~\[\]\\&\n]*"),
    "chat": re.compile(r"[^`<>:*_~\[\]\\&\n]*"),
    "markdown": re.compile(r"[^`<>:*_~\[\]\\&@\n]*"),
}
_PLAIN_FIRST = frozenset(">|-+=#•◦▪!0123456789")
"""A line starting with one of these may be block syntax (a quote, bullet, heading, numbered item)."""


def _is_plain(text: str, text_format: TextFormat) -> bool:
    """Whether every line of ``text`` is literal text as it stands: no markup, no mention, no link, nothing
    Markdown would need escaped, no whitespace at either end of a line and no blank line. Such a text
    converts to itself, mentions no one and links nowhere."""
    pattern = _PLAIN_MARKUP_FREE[text_format]
    for line in text.split("\n"):
        if not line or line[0] in _PLAIN_FIRST or line[0].isspace() or line[-1].isspace() \
                or pattern.fullmatch(line) is None:
            return False
    return True


_SIMPLE_SLACK_TOKEN = re.compile(
    r"<@([A-Za-z0-9]+)(?:\|([^<>|&\n]+))?>"
    r"|<#([A-Za-z0-9]+)(?:\|([^<>|&\n]+))?>"
    r"|<(https?://[A-Za-z0-9._~:/?#@!$'*+,;=%-]+)(?:\|([^<>|&\n]+))?>"
    r"|:([a-z0-9_+'-]{1,64}(?:::skin-tone-[2-6])?):"
    r"|([*_])([A-Za-z0-9](?:[A-Za-z0-9 ]*[A-Za-z0-9])?)\8(?![^ \n.,!?])"
    r"|`([^`&\n ](?:[^`&\n]*[^`&\n ])?)`(?!`)"
)
"""The markup ``_convert_simple_slack`` writes itself, each in its simplest form: a user or channel
mention, an http(s) link whose address and text need no escape, an emoji code, a ``*bold*`` or ``_italic_``
run of letters, digits and spaces after a space (or the line's start) and before a space, plain
punctuation or the line's end, and a code span without entities, backticks around it or spaces at its
ends. Groups: user, its label, channel, its label, url, its label, emoji, marker, styled text, code. (Every
alternative starts with one of a few characters, so the scan skips the text between them quickly.)"""
_SIMPLE_START = re.compile(r"[<:*_`]")
"""Where a token of ``_SIMPLE_SLACK_TOKEN`` may start: found first, then matched there (scanning with the
token pattern itself tries every alternative at every character, several times slower)."""
_SIMPLE_PLAIN = _PLAIN_MARKUP_FREE["slack"]
_SIMPLE_BULLETS = frozenset("•◦▪")
"""Bullet markers ``_convert_simple_slack`` writes itself, at the start of a line (so at indent 0)."""
_emoji = functools.lru_cache(maxsize=4096)(unicode_emoji)
"""``unicode_emoji`` remembered: a workspace writes the same few emoji codes over and over, and looking one
up costs more than converting the rest of its message."""


def _convert_simple_slack(text: str, names: Names) -> Converted | None:
    """``_convert_read`` of newline-normalised Slack text made of literal text and the simplest markup
    (``_SIMPLE_SLACK_TOKEN``), written directly; None when the text holds anything else, or anything
    whose writing would depend on its neighbours (an escape, a block at a line's start, whitespace at a
    line's ends), for the full reading to convert. The two agree (tests/chat/test_markdown.py compares
    them on generated text)."""
    markdown_lines: list[str] = []
    plain_lines: list[str] = []
    found: list[str] = []
    linked = False
    plain = _SIMPLE_PLAIN.fullmatch
    find, match = _SIMPLE_START.search, _SIMPLE_SLACK_TOKEN.match
    previous_bullet: bool | None = None
    for line in text.split("\n"):
        if not line or line[0].isspace() or line[-1].isspace():
            return None
        # A bullet ("• item") at the line's start: its item is read as a line of its own (as ``_lines``
        # does), written as a top-level list item.
        bullet = line[0] in _SIMPLE_BULLETS and len(line) > 1 and line[1] in " \t"
        if bullet:
            line = line[2:].lstrip(" \t")
        out: list[str] = []
        words: list[str] = []
        position = 0
        while (candidate := find(line, position)) is not None:
            start = candidate.start()
            if (token := match(line, start)) is None:
                return None  # markup of another shape (or a literal "<", ":" or marker)
            if start > position:
                if plain(line, position, start) is None:
                    return None
                out.append(line[position:start])
                words.append(line[position:start])
            position = token.end()
            user, user_label, channel, channel_label, url, label, name, marker, styled, code = token.groups()
            if user is not None:
                shown = "@" + (names.user(user) or (user_label or "").removeprefix("@") or user)
                found.append(user)
            elif channel is not None:
                shown = "#" + (names.channel(channel) or (channel_label or "").removeprefix("#") or channel)
            elif name is not None:
                if (start and line[start - 1].isalnum()) or (position < len(line) and line[position].isalnum()):
                    return None
                shown = _emoji(name)
                if shown == name:
                    return None  # a custom emoji stays as typed: its colons are literal text
            elif url is not None:
                if label is None or label == url:
                    out.append(f"<{url}>")
                    words.append(url)
                else:
                    if plain(label) is None or (out and out[-1].endswith("!")):
                        return None  # escapes needed in the label, or "!" before it would read as an image
                    out.append(f"[{label}]({url})")
                    words.append(f"{label} ({url})")
                linked = True
                continue
            elif code is not None:
                out.append(f"`{code}`")
                words.append(code)
                continue
            else:
                if start and line[start - 1] != " ":
                    return None  # a marker that may not open here
                out.append(f"**{styled}**" if marker == "*" else f"*{styled}*")
                words.append(styled)
                continue
            if not shown or plain(shown) is None:
                return None  # a name that would need escapes (or spans lines)
            out.append(shown)
            words.append(shown)
        if position < len(line):
            if plain(line, position) is None:
                return None
            out.append(line[position:])
            words.append(line[position:])
        written = "".join(out)
        if written[0] in _PLAIN_FIRST or written[0].isspace() or written[-1].isspace():
            return None  # block syntax, or whitespace Markdown would drop, at an end of the line
        if previous_bullet is not None and bullet != previous_bullet:
            markdown_lines.append("")  # a list and a paragraph are kept apart by a blank line, as ``_blocks`` does
        markdown_lines.append("- " + written if bullet else written)
        previous_bullet = bullet
        plain_lines.append("".join(words))
    return Converted("\n".join(markdown_lines), "\n".join(plain_lines), tuple(dict.fromkeys(found)), linked)


def to_markdown(text: str, text_format: TextFormat, names: Names) -> str:
    """The message in the served dialect (see the module's documentation)."""
    text = _normalise_newlines(text)
    if text_format == "markdown":
        return text if _is_safe_markdown(text) else escape(text)
    lines = _lines(text, text_format)
    return _joined_markdown(lines, _parsed_lines(lines, text_format), names)


def plain_text(text: str, text_format: TextFormat, names: Names) -> str:
    """The words of the message without markup, for full-text search: mentions as display names, a link
    as its text and address, code as written, one line per line."""
    text = _normalise_newlines(text)
    if text_format == "markdown":
        return _markdown_plain_text(text)
    lines = _lines(text, text_format)
    return _joined_plain_text(lines, _parsed_lines(lines, text_format), names)


def _parsed_lines(lines: list[_Line], text_format: TextFormat) -> list[list[_Inline]]:
    """The inline nodes of each text or bullet line (empty for the others), aligned with ``lines``."""
    return [_parse(_lex(line.text, text_format)) if line.kind in ("text", "bullet") else [] for line in lines]


def _joined_markdown(lines: list[_Line], nodes: list[list[_Inline]], names: Names) -> str:
    out: list[str] = []
    for quoted, block in _blocks(lines, nodes, names):
        # a code line is kept as it is, trailing whitespace included
        out.extend(("> " + line if line else ">") if quoted else line for line in block)
    return "\n".join(out)


def _joined_plain_text(lines: list[_Line], nodes: list[list[_Inline]], names: Names) -> str:
    out: list[str] = []
    for line, line_nodes in zip(lines, nodes, strict=True):
        if line.kind == "blank":
            if out and out[-1]:
                out.append("")
        elif line.kind == "code":
            out.extend(line.text.split("\n"))
        else:
            out.append(_plain(line_nodes, names))
    return "\n".join(out).strip("\n")


def mentions(text: str, text_format: TextFormat) -> list[str]:
    """The users the message mentions, in order, each once: Slack user IDs (``U012AB``), Chat user
    names (``users/123``) or Mattermost usernames (``alice``, lower case). Mentions of everyone
    (``@here``, ``<users/all>``, ``@channel``) and mentions inside code are not included."""
    text = _normalise_newlines(text)
    if text_format == "markdown":
        found = (m.group(1).rstrip(".").lower() for m in _MD_MENTION.finditer(_markdown_without_code(text)))
        refs = [name for name in found if name not in _MD_EVERYONE]
    else:
        refs = [token.ref for token in _tokens(text, text_format)
                if isinstance(token, _Mention) and token.kind == "user" and token.ref != "users/all"]
    return list(dict.fromkeys(refs))


def has_link(text: str, text_format: TextFormat) -> bool:
    """Whether the message links anywhere (http, https or mailto), outside code."""
    text = _normalise_newlines(text)
    if text_format == "markdown":
        return _MD_LINK.search(_markdown_without_code(text)) is not None
    return any(isinstance(token, _Link) for token in _tokens(text, text_format))


def escape(text: str) -> str:
    """Plain text written so that Markdown shows it as it is (see "Literal text" in the module's
    documentation). Markdown cannot say everything: trailing spaces and tabs of a line, lines of
    only spaces or tabs (they become blank) and more than one blank line in a row are not kept."""
    lines = _normalise_newlines(text).split("\n")
    return "\n".join(_escape(line, line_start=True, after=None) if line.strip(" \t") else "" for line in lines)


def _is_safe_markdown(text: str) -> bool:
    """No raw HTML and only http(s)/mailto links or images, as CommonMark reads the text."""
    for token in _COMMONMARK.parse(text):
        for inner in [token, *(token.children or [])]:
            if inner.type in ("html_block", "html_inline"):
                return False
            if inner.type in ("link_open", "image"):
                target = str(inner.attrGet("href") or inner.attrGet("src") or "")
                if not target.lower().startswith(_SAFE_SCHEMES):
                    return False
    return True


_COMMONMARK = MarkdownIt("commonmark").enable("strikethrough")
_SAFE_SCHEMES = ("http://", "https://", "mailto:")


# ---------------------------------------------------------------- lines and blocks


@dataclass(frozen=True)
class _Line:
    """One line of output: a paragraph line, a bullet item, a whole code block, or a blank line."""

    kind: Literal["text", "bullet", "code", "blank"]
    quoted: bool
    text: str
    """Raw (source markup) text of a text or bullet line; the verbatim content of a code block."""
    indent: int = 0
    """Of a bullet: the columns of whitespace before its marker."""


_BULLET = re.compile(r"([ \t]*)[•◦▪*-][ \t]+(\S.*)")
_QUOTE_MARKERS: dict[TextFormat, tuple[tuple[str, bool], ...]] = {
    # (marker, quotes the rest of the message). Slack's own text writes ">" as "&gt;".
    "slack": (("&gt;&gt;&gt;", True), (">>>", True), ("&gt;", False), (">", False)),
    "chat": ((">", False),),
}


def _lines(text: str, text_format: TextFormat) -> list[_Line]:
    """The message's block structure. Code blocks are found first (they may span lines and start
    mid-line, and nothing inside them is markup); the text around them is read line by line."""
    out: list[_Line] = []
    quote_rest = line_quoted = False
    segments = _split_code_blocks(text)
    for index, (is_code, segment) in enumerate(segments):
        if is_code:
            out.append(_Line("code", quote_rest or line_quoted, _unescape(segment, text_format)))
            continue
        parts = segment.split("\n")
        for k, part in enumerate(parts):
            # A part that follows a code block on the same source line has no quote marker or bullet.
            starts_line = k > 0 or index == 0
            ends_line = k < len(parts) - 1 or index == len(segments) - 1
            if starts_line:
                line_quoted = False
                for marker, rest in _QUOTE_MARKERS[text_format]:
                    if part.startswith(marker):
                        part = part[len(marker):].removeprefix(" ")
                        quote_rest, line_quoted = quote_rest or rest, not rest
                        break
            else:
                part = part.lstrip()
            quoted = quote_rest or line_quoted
            part = part.rstrip(" \t")
            bullet = _BULLET.fullmatch(part) if starts_line else None
            if not part:
                if starts_line and ends_line:  # not the rest of a line around a code block
                    out.append(_Line("blank", quoted, ""))
            elif bullet:
                out.append(_Line("bullet", quoted, bullet.group(2), len(bullet.group(1).expandtabs(4))))
            else:
                out.append(_Line("text", quoted, part))
    return out


def _split_code_blocks(text: str) -> list[tuple[bool, str]]:
    """Text and ```code blocks```, alternating (is_code, content). A ``` with no closing one, or an
    empty pair, is literal text."""
    out: list[tuple[bool, str]] = []
    start = search = 0
    while (opening := text.find("```", search)) != -1 and (closing := text.find("```", opening + 3)) != -1:
        content = text[opening + 3:closing]
        search = closing + 3
        if not content:
            continue
        out.append((False, text[start:opening]))
        out.append((True, content.removeprefix("\n").removesuffix("\n")))
        start = search
    out.append((False, text[start:]))
    return out


def _blocks(lines: list[_Line], nodes: list[list[_Inline]], names: Names) -> Iterator[tuple[bool, list[str]]]:
    """Rendered (quoted, lines) groups, with the blank lines (or quoted blank lines) that keep
    blocks of different kinds apart: Markdown would otherwise continue a quote or an item. ``nodes``:
    each line's parsed inline nodes."""
    previous: _Line | None = None
    gap: _Line | None = None  # the blank line since the previous line, if any
    levels: list[int] = []  # the indentation of each open bullet level
    for line, line_nodes in zip(lines, nodes, strict=True):
        if line.kind == "blank":
            gap = gap or line
            continue
        if line.kind == "code":
            rendered = _fence(line.text)
        elif content := _render(line_nodes, names, True, None, None):
            if line.kind == "bullet":
                if gap or previous is None or previous.kind != "bullet" or previous.quoted != line.quoted:
                    levels.clear()  # a new list
                content = "  " * _depth(levels, line.indent) + "- " + content
            rendered = [content]
        else:
            continue  # nothing to show (a date without its fallback text)
        if previous is not None and (gap or line.kind != previous.kind or line.quoted != previous.quoted
                                     or line.kind == "code"):
            both_quoted = line.quoted and previous.quoted and (gap is None or gap.quoted)
            yield both_quoted, [""]
        yield line.quoted, rendered
        previous, gap = line, None


def _depth(levels: list[int], indent: int) -> int:
    """A bullet's nesting depth from its indentation: deeper than the previous bullet's is one level
    deeper, as deep as an open level's is that level."""
    while levels and indent < levels[-1]:
        levels.pop()
    if not levels or indent > levels[-1]:
        levels.append(indent)
    return len(levels) - 1


def _fence(code: str) -> list[str]:
    longest = max((len(run) for run in re.findall("`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *code.split("\n"), fence] if code else [fence, fence]


# ---------------------------------------------------------------- inline: tokens


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Mention:
    ref: str
    kind: Literal["user", "channel"]
    fallback: str
    """Shown (after ``@`` or ``#``) when ``Names`` does not know the ref."""


@dataclass(frozen=True)
class _Code:
    text: str


@dataclass(frozen=True)
class _Link:
    url: str
    label: str | None


@dataclass(frozen=True)
class _Marker:
    """A ``*``, ``_`` or ``~`` that may open or close a style; literal text if it pairs with none."""

    char: str
    can_open: bool
    can_close: bool


@dataclass(frozen=True)
class _Styled:
    style: Literal["strong", "em", "strike"]
    children: tuple[_Inline, ...]


_Inline: TypeAlias = "_Text | _Mention | _Code | _Link | _Styled"
_Token: TypeAlias = "_Text | _Mention | _Code | _Link | _Marker"

_STYLES: dict[str, Literal["strong", "em", "strike"]] = {"*": "strong", "_": "em", "~": "strike"}
_DELIMITERS = {"strong": "**", "em": "*", "strike": "~~"}
_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_BARE_URL = re.compile(r"https?://(?:(?!&[lg]t;)[^\s<>])+", re.IGNORECASE)  # Slack writes < > as &lt; &gt;
_SLACK_ENTITY = re.compile(r"&(amp|lt|gt);")
_CHAT_MENTION = re.compile(r"<(users/[^\s<>|]+)>")
_CHAT_LINK = re.compile(r"<((?:https?|mailto):[^\s<>|]+)(?:\|([^<>]*))?>", re.IGNORECASE)


def _tokens(text: str, text_format: TextFormat) -> Iterator[_Token]:
    """Every inline token of the message outside code blocks."""
    for line in _lines(text, text_format):
        if line.kind in ("text", "bullet"):
            yield from _lex(line.text, text_format)


_MARKUP_START = re.compile(r"[`<:*_~]|(?<![A-Za-z0-9])[hH](?=[tT][tT][pP])")
"""Every place ``_markup_at`` may read as the start of markup (a bare URL starts with ``http``)."""


@functools.lru_cache(maxsize=1024)
def _lex(line: str, text_format: TextFormat) -> tuple[_Token, ...]:
    """A line of source markup as tokens: literal text, code spans, links, mentions and style markers.
    Kept for the last lines lexed: an import renders, indexes and scans each message's lines in turn."""
    tokens: list[_Token] = []
    literal: list[str] = []
    i = 0
    while i < len(line):
        found = _markup_at(line, i, text_format)
        if found is None:
            # Only these characters can start markup: take the plain run up to the next in one slice.
            following = _MARKUP_START.search(line, i + 1)
            end = following.start() if following else len(line)
            literal.append(line[i:end])
            i = end
            continue
        found_tokens, i = found
        if literal:
            tokens.append(_Text(_unescape("".join(literal), text_format)))
            literal.clear()
        for token in found_tokens:
            if isinstance(token, _Code) and tokens and isinstance(tokens[-1], _Code):
                # `a``b` is one run of code: two spans written side by side would read as one fence
                tokens[-1] = _Code(tokens[-1].text + token.text)
            elif not (isinstance(token, _Text) and not token.text):
                tokens.append(token)
    if literal:
        tokens.append(_Text(_unescape("".join(literal), text_format)))
    return tuple(tokens)


_SHORTCODE = re.compile(r":([a-z0-9_+'-]{1,64}(?:::skin-tone-[2-6])?):")
"""Slack writes emoji in text as ``:name:``; those with a Unicode form are shown as it."""


def _shortcode_at(line: str, i: int) -> re.Match[str] | None:
    """An emoji code standing as a word of its own (``a:b:c`` and ``12:30:45`` are not)."""
    if i > 0 and line[i - 1].isalnum():
        return None
    found = _SHORTCODE.match(line, i)
    if found is None or (found.end() < len(line) and line[found.end()].isalnum()):
        return None
    return found


def _markup_at(line: str, i: int, text_format: TextFormat) -> tuple[list[_Token], int] | None:
    """The markup starting at ``line[i]`` and where it ends, or None if ``line[i]`` is literal."""
    char = line[i]
    if char == "`":
        end = line.find("`", i + 1)
        return ([_Code(_unescape(line[i + 1:end], text_format))], end + 1) if end > i + 1 else None
    if char == "<":
        return _slack_angle(line, i) if text_format == "slack" else _chat_angle(line, i)
    if char == ":" and text_format == "slack" and (shortcode := _shortcode_at(line, i)):
        glyph = _emoji(shortcode.group(1))
        return ([_Text(glyph)], shortcode.end()) if glyph != shortcode.group(1) else None
    if char in _STYLES:
        return _markers(line, i)
    if char in "hH" and (i == 0 or not line[i - 1].isalnum()) and (url := _BARE_URL.match(line, i)):
        address = _trim_url(url.group())
        if "//" in address and not address.endswith("//"):
            return [_Link(_unescape(address, text_format), None)], i + len(address)
    return None


def _markers(line: str, i: int) -> tuple[list[_Token], int]:
    """A run of one marker character. Slack's rule: a marker opens after a boundary (start, space or
    punctuation) before non-space, and closes after non-space before a boundary. In a run of them the
    innermost one is the marker (the last of an opening run, the first of a closing one)."""
    char = line[i]
    end = i
    while end < len(line) and line[end] == char:
        end += 1
    before = line[i - 1] if i > 0 else None
    after = line[end] if end < len(line) else None
    can_open = after is not None and not after.isspace() and _is_boundary(before)
    can_close = before is not None and not before.isspace() and _is_boundary(after)
    extra = _Text(char * (end - i - 1))
    if end - i == 1:
        return [_Marker(char, can_open, can_close)], end
    if can_close:
        return [_Marker(char, False, True), extra], end
    if can_open:
        return [extra, _Marker(char, True, False)], end
    return [_Text(char * (end - i))], end


def _slack_angle(line: str, i: int) -> tuple[list[_Token], int] | None:
    """Slack writes every piece of markup in ``<…>`` (a literal ``<`` is ``&lt;``)."""
    end = line.find(">", i + 1)
    if end <= i + 1:
        return None
    target, bar, label_text = line[i + 1:end].partition("|")
    label = _unescape(label_text, "slack") if bar and label_text else None
    token: _Token
    if target.startswith("@"):
        token = _Mention(target[1:], "user", (label or "").removeprefix("@") or target[1:])
    elif target.startswith("#"):
        token = _Mention(target[1:], "channel", (label or "").removeprefix("#") or target[1:])
    elif target.startswith("!date^"):
        token = _Text(label or "")
    elif target.startswith("!subteam^"):
        token = _Text("@" + (label or target.removeprefix("!subteam^")).removeprefix("@"))
    elif target.startswith("!"):
        token = _Text("@" + (label or target[1:]).removeprefix("@"))
    else:
        url = _unescape(target, "slack")
        scheme = _SCHEME.match(url)
        linkable = scheme is not None and scheme.group(1).lower() in _LINK_SCHEMES
        token = _Link(url, label) if linkable else _Text(label or url)
    return [token], end + 1


def _chat_angle(line: str, i: int) -> tuple[list[_Token], int] | None:
    """Google Chat's ``<users/…>`` mentions and ``<url|text>`` links; any other ``<`` is literal."""
    if mention := _CHAT_MENTION.match(line, i):
        ref = mention.group(1)
        token: _Token = _Text("@all") if ref == "users/all" else _Mention(ref, "user", ref)
        return [token], mention.end()
    if link := _CHAT_LINK.match(line, i):
        return [_Link(link.group(1), link.group(2) or None)], link.end()
    return None


def _trim_url(url: str) -> str:
    """A bare URL does not take the punctuation that ends its sentence, nor an unmatched ``)``."""
    while url and (url[-1] in ".,:;!?'\"*_~" or (url[-1] == ")" and url.count("(") < url.count(")"))):
        url = url[:-1]
    return url


# ---------------------------------------------------------------- inline: styles


def _parse(tokens: Sequence[_Token]) -> list[_Inline]:
    """Pairs style markers: an opening marker takes the first closing marker of its character after
    non-empty content; what lies between is parsed alone, so styles nest but never cross. Unpaired
    markers are literal text."""
    closers: dict[str, list[int]] = {}
    for k, token in enumerate(tokens):
        if isinstance(token, _Marker) and token.can_close:
            closers.setdefault(token.char, []).append(k)

    def closer(opener: int, end: int, char: str) -> int | None:
        positions = closers.get(char, [])
        k = bisect_left(positions, opener + 2)
        return positions[k] if k < len(positions) and positions[k] < end else None

    def parse(start: int, end: int) -> list[_Inline]:
        nodes: list[_Inline] = []
        i = start
        while i < end:
            token = tokens[i]
            if not isinstance(token, _Marker):
                nodes.append(token)
            elif token.can_open and (j := closer(i, end, token.char)) is not None:
                nodes.append(_Styled(_STYLES[token.char], tuple(parse(i + 1, j))))
                i = j
            else:
                nodes.append(_Text(token.char))
            i += 1
        return nodes

    return parse(0, len(tokens))


# ---------------------------------------------------------------- inline: rendering

_Piece: TypeAlias = "str | _Code | _Link | _Styled"


def _pieces(nodes: Sequence[_Inline], names: Names) -> list[_Piece]:
    """Adjacent literal text and mentions joined into one string, so it is escaped knowing its
    neighbours (``snake_case`` split across two nodes would otherwise get escaped)."""
    out: list[_Piece] = []
    for node in nodes:
        piece: _Piece = node.text if isinstance(node, _Text) else (
            _mention_text(node, names) if isinstance(node, _Mention) else node)
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        else:
            out.append(piece)
    return out


def _render(nodes: Sequence[_Inline], names: Names, line_start: bool, before: str | None,
            after: str | None, after_star: bool = False) -> str:
    """Markdown for inline nodes. ``before`` is the character written before them and ``after`` the
    characters that may be written after them (None at the start or end of the line): escaping and
    styling at the edges depend on them. ``after_star``: ``before`` is a closing ``*`` delimiter."""
    pieces = _pieces(nodes, names)
    out = ""
    for k, piece in enumerate(pieces):
        at_start = line_start and k == 0
        preceding = out[-1] if out else before
        following = _lead(pieces[k + 1]) if k + 1 < len(pieces) else after
        if isinstance(piece, str):
            out += _escape(piece, line_start=at_start, after=following)
        elif isinstance(piece, _Code):
            out += _code_span(piece.text)
        elif isinstance(piece, _Link):
            out += _link(piece)
        else:
            star = _ends_with_delimiter(out) if out else after_star
            out += _render_styled(piece, names, at_start, preceding, following, star)
    return out


def _render_styled(styled: _Styled, names: Names, line_start: bool, before: str | None, after: str | None,
                   after_star: bool) -> str:
    delimiter = _DELIMITERS[styled.style]
    if after_star and delimiter[0] == "*":
        # "*a*" then "**b**" would be one delimiter run "***", read by its outer neighbours: write the
        # second with underscores (which close only before a boundary)
        delimiter = delimiter.replace("*", "_") if _is_boundary(after) else ""
    if delimiter:
        inner = _render(styled.children, names, False, delimiter[-1], delimiter[0])
        if _flanking(before, inner, after):
            return delimiter + inner + delimiter
    # Markdown cannot style the text here: keep the text, lose the style
    return _render(styled.children, names, line_start, before, after, after_star)


def _flanking(before: str | None, inner: str, after: str | None) -> bool:
    """Whether delimiters around ``inner`` open and close there (CommonMark's flanking rule). Slack's
    markers stand between a boundary and text, but a neighbour may be written differently: ``<@U1>*…*``
    is ``@Name**…**``, and a delimiter between a letter and punctuation does not open; ``*< >*`` has
    whitespace inside its delimiters."""
    if inner[0].isspace() or inner[-1].isspace():
        return False
    opens = not _is_punctuation(inner[0]) or _is_boundary(before)
    closes = not _is_punctuation(inner[-1]) or _is_boundary(after)
    return opens and closes


def _ends_with_delimiter(markdown: str) -> bool:
    """Whether ``markdown`` ends with a ``*`` delimiter: a ``*`` not escaped by an odd run of backslashes
    (text never holds an unescaped ``*``)."""
    if not markdown.endswith("*"):
        return False
    k = len(markdown) - 2
    while k >= 0 and markdown[k] == "\\":
        k -= 1
    return (len(markdown) - 2 - k) % 2 == 0


def _lead(piece: _Piece | _Inline) -> str:
    """The characters ``piece`` may be written starting with: what escaping and styling before it need
    to know. Text starts with its own first character (escaping only adds a backslash before it), other
    markup with punctuation, a style with its delimiter or, written without one, its text's."""
    if isinstance(piece, str):
        return piece[0]
    if isinstance(piece, _Text):
        return piece.text[0]
    if isinstance(piece, _Mention):
        return "@" if piece.kind == "user" else "#"
    if isinstance(piece, _Code):
        return "`"
    if isinstance(piece, _Link):
        return "<" if _is_autolink(piece) else "["
    return _DELIMITERS[piece.style][0] + _lead(piece.children[0])


def _mention_text(mention: _Mention, names: Names) -> str:
    if mention.kind == "user":
        return "@" + (names.user(mention.ref) or mention.fallback)
    return "#" + (names.channel(mention.ref) or mention.fallback)


def _code_span(code: str) -> str:
    """A code span that shows ``code`` exactly: its fence is a backtick run the code does not contain,
    and a space pads code that starts or ends with a backtick, or with spaces on both ends (Markdown
    strips one space from each end)."""
    runs = {len(run) for run in re.findall("`+", code)}
    length = 1
    while length in runs:
        length += 1
    pad = " " if code[:1] == "`" or code[-1:] == "`" or (code[:1] == code[-1:] == " " and code.strip(" ")) else ""
    return "`" * length + pad + code + pad + "`" * length


_AUTOLINK = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\x00-\x20<>]*")
_PLAIN_DESTINATION = re.compile(r"[^\x00-\x20<>()\\]+")


def _link(link: _Link) -> str:
    if _is_autolink(link):
        return f"<{link.url}>"
    label = _escape(link.label or link.url, line_start=False, after="]")
    return f"[{label}]({_destination(link.url)})"


def _is_autolink(link: _Link) -> bool:
    """Whether the link is written ``<url>``: it is shown as its address, and the address can be written
    there (an autolink's text is literal: no escapes, and parsers differ on character references)."""
    return (link.label is None or link.label == link.url) and _AUTOLINK.fullmatch(link.url) is not None \
        and not _CHARACTER_REFERENCE.search(link.url)


def _destination(url: str) -> str:
    """A link destination that reads back as ``url``: as is when it can be, else in ``<…>``."""
    escaped = _CHARACTER_REFERENCE.sub(r"\\\g<0>", re.sub(r"[\\<>]", r"\\\g<0>", url))
    if _PLAIN_DESTINATION.fullmatch(url):
        return escaped
    return "<" + escaped.replace("\n", "%0A").replace("\r", "%0D") + ">"


def _plain(nodes: Sequence[_Inline], names: Names) -> str:
    parts: list[str] = []
    for node in nodes:
        if isinstance(node, _Text | _Code):
            parts.append(node.text)
        elif isinstance(node, _Mention):
            parts.append(_mention_text(node, names))
        elif isinstance(node, _Link):
            parts.append(f"{node.label} ({node.url})" if node.label and node.label != node.url else node.url)
        else:
            parts.append(_plain(node.children, names))
    return "".join(parts)


# ---------------------------------------------------------------- escaping

_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_HEADING = re.compile(r"#{1,6}(?=[ \t]|$)")
_ORDERED_ITEM = re.compile(r"[0-9]{1,9}[.)](?=[ \t]|$)")
_ALWAYS_ESCAPED = frozenset("`*~[]")
_MAY_NEED_BACKSLASH = re.compile(r"[`*~\[\]_\\<!&]")
"""The characters ``_needs_backslash`` may say yes to."""


def _escape(text: str, line_start: bool, after: str | None) -> str:
    """``text`` (one line, no newline) written literally. ``line_start``: it begins a line, where block
    syntax could start. ``after``: the characters that may follow it, None at the end of the line."""
    out: list[str] = []
    block_start = _block_start(text) if line_start else None
    # Markdown strips whitespace at both ends of a line: keep it with a character reference. At the end,
    # spaces and tabs are let go (they would only show as trailing whitespace).
    references: set[int] = set()
    if line_start and text[:1].isspace():
        references.add(0)
    last_kept = len(text.rstrip(" \t")) - 1
    if after is None and last_kept >= 0 and text[last_kept].isspace():
        references.add(last_kept)
    # Only a few characters can need a backslash: look at those (and the edges), copy the runs between.
    special = {match.start() for match in _MAY_NEED_BACKSLASH.finditer(text)} | references
    if block_start is not None:
        special.add(block_start)
    if not special:
        return text
    copied = 0
    for k in sorted(special):
        out.append(text[copied:k])
        char = text[k]
        before = text[k - 1] if k > 0 else None
        next_char = "&" if k + 1 in references else text[k + 1] if k + 1 < len(text) else after
        if k in references:
            out.append(f"&#{ord(char)};")
        elif k == block_start or _needs_backslash(text, k, before, next_char):
            out.append("\\" + char)
        else:
            out.append(char)
        copied = k + 1
    out.append(text[copied:])
    return "".join(out)


def _block_start(line: str) -> int | None:
    """The index of the character to escape so that ``line`` does not start a heading, list, quote,
    table or heading underline; None if nothing at its start is block syntax."""
    if not line or line[0].isspace():
        return None  # leading whitespace is written as a character reference: no block starts after it
    first, rest = line[0], line[1:]
    if first in ">|":
        return 0
    if first in "-+=" and (not rest or rest[0] in " \t" or not rest.strip(" \t" + first)):
        return 0
    if first == "#" and _HEADING.match(line):
        return 0
    if ordered := _ORDERED_ITEM.match(line):
        return ordered.end() - 1
    return None


def _needs_backslash(text: str, k: int, before: str | None, after: str | None) -> bool:
    """Whether ``text[k]`` must be escaped between ``before`` and (any of) ``after``."""
    char = text[k]
    if char in _ALWAYS_ESCAPED:
        return True
    if char == "_":  # an underscore inside a word never opens or closes emphasis
        return not (before is not None and before.isalnum() and after is not None and after.isalnum())
    if char == "\\":  # a backslash escapes only punctuation, and breaks the line at the end of one
        return after is None or any(c in string.punctuation for c in after)
    if char == "<":  # a tag or autolink starts with "<" followed by a non-space
        return after is not None and not after.isspace()
    if char == "!":
        return after is not None and "[" in after  # an image
    if char == "&":
        return _CHARACTER_REFERENCE.match(text, k) is not None
    return False


def _is_boundary(chars: str | None) -> bool:
    """Start or end of line (None), whitespace or punctuation (every one of ``chars``): where a style
    marker may stand. Only punctuation by every CommonMark version's definition counts (not symbols)."""
    return chars is None or all(char.isspace() or char in string.punctuation or unicodedata.category(char)[0] == "P"
                                for char in chars)


def _is_punctuation(char: str) -> bool:
    """Punctuation by any CommonMark version's definition (0.31 adds symbols such as emoji)."""
    return char in string.punctuation or unicodedata.category(char)[0] in "PS"


def _unescape(text: str, text_format: TextFormat) -> str:
    if text_format != "slack":
        return text
    return _SLACK_ENTITY.sub(lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)], text)


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------- Markdown (Mattermost)
# Approximate, and linear in the text's length (no regular expression here backtracks far): enough to
# find mentions and links outside code, and the words for search.

_MD_FENCE = re.compile(r" {0,3}(`{3,}+|~{3,}+)(.*)")
_MD_CODE_SPAN = re.compile(r"(?<!`)(`++)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_MD_MENTION = re.compile(r"(?<![\w@.+-])@([A-Za-z0-9][A-Za-z0-9._-]*)")
_MD_EVERYONE = frozenset({"here", "channel", "all"})
_MD_LINK = re.compile(r"(?:https?://|mailto:)\S", re.IGNORECASE)
_MD_BLOCK_MARKUP = re.compile(r" {0,3}(?:> ?)*[ \t]*(?:#{1,6}[ \t]+|[-+*][ \t]+|[0-9]{1,9}[.)][ \t]+)?")
_MD_INLINE_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\(<?([^()<>\s]*)>?(?:\s[^()\n]*)?\)")
_MD_AUTOLINK = re.compile(r"<((?:https?|mailto):[^<>\s]+)>", re.IGNORECASE)
_MD_EMPHASIS = re.compile(r"(?<![\w\\])[*_~]++(?=\S)|(?<=\S)(?<!\\)[*_~]++(?!\w)")
_MD_BACKSLASH = re.compile(r"\\([!-/:-@\[-`{-~])")


def _markdown_blocks(text: str) -> Iterator[tuple[bool, str]]:
    """Markdown as (is_code, text): prose, and the content of fenced code blocks."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is None and (opening := _MD_FENCE.fullmatch(line)) \
                and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            yield False, "\n".join(lines)
            lines, fence = [], opening.group(1)
        elif fence is not None and len(line) - len(line.lstrip(" ")) < 4 \
                and (closing := line.strip()).startswith(fence) and closing == fence[0] * len(closing):
            yield True, "\n".join(lines)
            lines, fence = [], None
        else:
            lines.append(line)
    yield fence is not None, "\n".join(lines)


def _markdown_without_code(text: str) -> str:
    return "\n".join(_MD_CODE_SPAN.sub(" ", part) for is_code, part in _markdown_blocks(text) if not is_code)


def _markdown_plain_text(text: str) -> str:
    """The words: code as written; quote, heading and list markers, emphasis markers, link syntax and
    backslash escapes removed."""
    parts = [part if is_code else _markdown_plain_prose(part) for is_code, part in _markdown_blocks(text)]
    return "\n".join(part for part in parts if part.strip()).strip("\n")


def _markdown_plain_prose(text: str) -> str:
    text = "\n".join(line[_match_end(_MD_BLOCK_MARKUP, line):] for line in text.split("\n"))
    out: list[str] = []
    position = 0
    for code in _MD_CODE_SPAN.finditer(text):
        out.append(_markdown_plain_inline(text[position:code.start()]))
        out.append(code.group(2).strip(" ") or code.group(2))
        position = code.end()
    out.append(_markdown_plain_inline(text[position:]))
    return "".join(out)


def _match_end(pattern: re.Pattern[str], text: str) -> int:
    match = pattern.match(text)
    return match.end() if match else 0


def _markdown_plain_inline(text: str) -> str:
    text = _MD_AUTOLINK.sub(r"\1", _MD_INLINE_LINK.sub(r"\1 (\2)", text))
    return _MD_BACKSLASH.sub(r"\1", _MD_EMPHASIS.sub("", text))

"""A recorded conversation as its page shows it: each turn's messages as typed pieces, and its span tree
flattened into the rows of a waterfall. Pure functions of the wire models; the templates only lay them out."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from convener.api.protojson import Struct, Timestamp
from convener.ces.models import Blob, Chunk, Conversation, Image, Message, Span, ToolCall, ToolResponse

JSON_SHOWN_CHARS = 20_000
"""A payload, tool argument or response longer than this is cut on the page (the tool serves it whole)."""
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
"""Shown inline; any other type (SVG can carry script) is described, not drawn."""
AUDIO_TYPES = frozenset({"audio/wav", "audio/x-wav", "audio/mpeg", "audio/ogg", "audio/webm", "audio/flac",
                         "audio/mp4", "audio/aac"})
WATERFALL_WIDTH = 1000
"""The SVG user units a waterfall bar is drawn in (the bar's box scales to the column's width)."""
TURNS_PER_PAGE = 100
"""Turns a conversation's page shows at a time: a 500-turn conversation drawn whole was 1.6 MB of HTML and most
of the page's time; the turn index links to every turn, whichever page holds it."""
DEEPEST_INDENT = 6
"""Span depths past this are indented as this one (the stylesheet's ``depth-0`` … ``depth-6``)."""


class Kind(StrEnum):
    TEXT = "text"
    TRANSCRIPT = "transcript"
    IMAGE = "image"
    AUDIO = "audio"
    BLOB = "blob"
    PAYLOAD = "payload"
    TOOL_CALL = "tool-call"
    TOOL_RESPONSE = "tool-response"
    TRANSFER = "transfer"
    VARIABLES = "variables"
    DEFAULT_VARIABLES = "default-variables"


@dataclass(frozen=True)
class Piece:
    """One chunk of a message, as shown."""

    kind: Kind
    title: str = ""
    text: str = ""
    json: str = ""
    media_uri: str = ""
    """A data: URI, only for the image and audio types above."""
    mime: str = ""
    size: int = 0
    """Bytes of a blob."""
    error: bool = False


@dataclass(frozen=True)
class MessageView:
    role: str
    role_class: str
    """The role as a CSS class suffix."""
    time: str
    """Time of day, to the millisecond (the page's header has the date)."""
    timestamp: str
    pieces: list[Piece]


@dataclass(frozen=True)
class SpanRow:
    depth: int
    name: str
    label: str
    offset_ms: float
    duration_ms: float
    x: int
    """Start of the bar, in WATERFALL_WIDTH units of the turn's root span."""
    width: int
    tokens: str
    error: str
    details: str
    """The span's other attributes as JSON, for the row's disclosure."""

    # Formatted here rather than by the template's filters, which cost more than the rest of a row.
    @property
    def indent(self) -> int:
        return min(self.depth, DEEPEST_INDENT)

    @property
    def duration_text(self) -> str:
        return f"{self.duration_ms:.1f}"

    @property
    def offset_text(self) -> str:
        return f"{self.offset_ms:.1f}"


@dataclass(frozen=True)
class TurnView:
    index: int
    messages: list[MessageView]
    spans: list[SpanRow]
    duration_ms: float

    @property
    def duration_text(self) -> str:
        return f"{self.duration_ms:.1f}" if self.duration_ms else ""


@dataclass(frozen=True)
class TurnPage:
    """The turns one page of a conversation shows (numbered from 1), and where the others are."""

    first: int
    last: int
    count: int
    """Turns in the whole conversation."""
    size: int = TURNS_PER_PAGE

    @classmethod
    def holding(cls, turn: int, count: int, size: int = TURNS_PER_PAGE) -> TurnPage:
        """The page that holds turn ``turn`` (1 to ``count``) of a conversation of ``count`` turns."""
        first = (turn - 1) // size * size + 1
        return cls(first, min(first + size - 1, count), count, size)

    def holds(self, turn: int) -> bool:
        return self.first <= turn <= self.last

    def link(self, turn: int) -> str:
        """A link to turn ``turn`` from this page: its anchor here, else the page that holds it and its anchor."""
        return f"#turn-{turn}" if self.holds(turn) else f"?turn={turn}#turn-{turn}"

    @property
    def paged(self) -> bool:
        return self.count > self.size

    def pages(self) -> list[tuple[int, int]]:
        """(first, last) turn of every page of the conversation."""
        return [(first, min(first + self.size - 1, self.count)) for first in range(1, self.count + 1, self.size)]

    @property
    def previous(self) -> int:
        """First turn of the page before, or 0 on the first page."""
        return max(self.first - self.size, 1) if self.first > 1 else 0

    @property
    def next(self) -> int:
        """First turn of the page after, or 0 on the last page."""
        return self.last + 1 if self.last < self.count else 0


SHORT_JSON_CHARS = 100
"""JSON this short is shown on one line: json's C encoder writes it (indenting takes the pure-Python one, the
most a 500-turn page cost)."""


def pretty(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if len(text) > SHORT_JSON_CHARS:
        text = json.dumps(value, indent=2, ensure_ascii=False)
    return text if len(text) <= JSON_SHOWN_CHARS else text[:JSON_SHOWN_CHARS] + "\n… (cut here; get_conversation serves it whole)"


def when(stamp: Timestamp | None) -> str:
    """A timestamp to the second, in UTC, for lists and headers (the RFC 3339 form is in its title)."""
    text = str(stamp) if stamp is not None else ""
    return f"{text[:10]} {text[11:19]}" if len(text) >= 19 else text


def _size(data: str | None) -> int:
    return len(data or "") * 3 // 4


def _image(image: Image) -> Piece:
    mime = image.mime_type or ""
    uri = f"data:{mime};base64,{image.data}" if mime in IMAGE_TYPES and image.data else ""
    return Piece(Kind.IMAGE, title=image.alt_text or "", media_uri=uri, mime=mime, size=_size(image.data))


def _blob(blob: Blob) -> Piece:
    mime = (blob.mime_type or "").split(";")[0].strip().lower()
    if mime in AUDIO_TYPES and blob.data:
        return Piece(Kind.AUDIO, media_uri=f"data:{mime};base64,{blob.data}", mime=mime, size=_size(blob.data))
    if mime in IMAGE_TYPES and blob.data:
        return Piece(Kind.IMAGE, media_uri=f"data:{mime};base64,{blob.data}", mime=mime, size=_size(blob.data))
    return Piece(Kind.BLOB, mime=blob.mime_type or "application/octet-stream", size=_size(blob.data))


def _tool_name(exchange: ToolCall | ToolResponse) -> str:
    if exchange.display_name:
        return exchange.display_name
    if exchange.tool:
        return exchange.tool.rsplit("/", 1)[-1]
    if exchange.toolset_tool and exchange.toolset_tool.tool_id:
        return exchange.toolset_tool.tool_id
    return "tool"


def _piece(chunk: Chunk) -> Piece | None:
    if chunk.text is not None:
        return Piece(Kind.TEXT, text=chunk.text)
    if chunk.transcript is not None:
        return Piece(Kind.TRANSCRIPT, text=chunk.transcript)
    if chunk.image is not None:
        return _image(chunk.image)
    if chunk.blob is not None:
        return _blob(chunk.blob)
    if chunk.payload is not None:
        return Piece(Kind.PAYLOAD, json=pretty(chunk.payload))
    if chunk.tool_call is not None:
        call = chunk.tool_call
        return Piece(Kind.TOOL_CALL, title=_tool_name(call), text=call.id or "", json=pretty(call.args or {}))
    if chunk.tool_response is not None:
        answer = chunk.tool_response
        failed = isinstance(answer.response, dict) and answer.response.get("error") is not None
        return Piece(Kind.TOOL_RESPONSE, title=_tool_name(answer), text=answer.id or "",
                     json=pretty(answer.response or {}), error=failed)
    if chunk.agent_transfer is not None:
        target = chunk.agent_transfer
        return Piece(Kind.TRANSFER, title=target.display_name or (target.target_agent or "").rsplit("/", 1)[-1],
                     text=target.target_agent or "")
    if chunk.updated_variables is not None:
        return Piece(Kind.VARIABLES, json=pretty(chunk.updated_variables))
    if chunk.default_variables is not None:
        return Piece(Kind.DEFAULT_VARIABLES, json=pretty(chunk.default_variables))
    return None


def message_view(message: Message) -> MessageView:
    pieces = [piece for chunk in message.chunks or [] if (piece := _piece(chunk)) is not None]
    stamp = str(message.event_time) if message.event_time else ""
    role = message.role or ""
    return MessageView(role, role.lower().replace(" ", "-"), stamp[11:23].rstrip("Z"), stamp, pieces)


def _micros(span: Span) -> tuple[int, int]:
    start = span.start_time.to_micros() if span.start_time else 0
    if span.end_time is not None:
        end = span.end_time.to_micros()
    elif span.duration is not None:
        end = start + int(span.duration.seconds() * 1_000_000)
    else:
        end = start
    return start, max(end, start)


# Span attributes are a Struct on the wire (what a span is about varies by span); these are the keys the
# runtime writes (ces.runtime.tracing and its callers) that the waterfall gives columns of their own.
_LABEL_KEYS = ("agent", "tool", "guardrail", "entryPoint")
_COLUMN_KEYS = frozenset({*_LABEL_KEYS, "inputTokens", "outputTokens", "errorInfo"})


def _label(attributes: Struct) -> str:
    """What the span was about, by its ID (an agent's or tool's resource name is long; its ID is enough here)."""
    for key in _LABEL_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value.rsplit("/", 1)[-1]
    return ""


def _tokens(attributes: Struct) -> str:
    sent, received = attributes.get("inputTokens"), attributes.get("outputTokens")
    if sent is None and received is None:
        return ""
    return f"{sent if sent is not None else '?'} in / {received if received is not None else '?'} out"


def _error(attributes: Struct) -> str:
    info = attributes.get("errorInfo")
    if isinstance(info, dict):
        return f"{info.get('code', 'ERROR')}: {info.get('message', '')}"
    return "" if info is None else str(info)


def waterfall(root: Span | None) -> tuple[list[SpanRow], float]:
    """The rows of ``root``'s tree in depth-first order, each placed on the root's time line; and the root's
    duration in milliseconds."""
    if root is None:
        return [], 0.0
    origin, end = _micros(root)
    total = max(end - origin, 1)
    rows: list[SpanRow] = []
    stack: list[tuple[Span, int]] = [(root, 0)]
    while stack:
        span, depth = stack.pop()
        start, stop = _micros(span)
        attributes = span.attributes or {}
        x = min(max((start - origin) * WATERFALL_WIDTH // total, 0), WATERFALL_WIDTH - 1)
        width = max(min((stop - start) * WATERFALL_WIDTH // total, WATERFALL_WIDTH - x), 1)
        others = {key: value for key, value in attributes.items() if key not in _COLUMN_KEYS}
        rows.append(SpanRow(depth, span.name or "SPAN", _label(attributes), (start - origin) / 1000,
                            (stop - start) / 1000, int(x), int(width), _tokens(attributes), _error(attributes),
                            pretty(others) if others else ""))
        stack.extend((child, depth + 1) for child in reversed(span.child_spans or []))
    return rows, (end - origin) / 1000


def turn_count(conversation: Conversation) -> int:
    """The turns the page numbers: a conversation recorded with messages alone shows them as one turn."""
    if conversation.turns:
        return len(conversation.turns)
    return 1 if conversation.messages else 0


def turn_views(conversation: Conversation, first: int = 1, last: int | None = None) -> list[TurnView]:
    """The conversation's turns ``first`` to ``last`` (numbered from 1; to the end when None)."""
    recorded = conversation.turns or []
    if not recorded and conversation.messages:
        return [TurnView(1, [message_view(m) for m in conversation.messages], [], 0.0)] if first <= 1 else []
    turns: list[TurnView] = []
    for index in range(max(first, 1) - 1, len(recorded) if last is None else min(last, len(recorded))):
        turn = recorded[index]
        spans, duration = waterfall(turn.root_span)
        turns.append(TurnView(index + 1, [message_view(m) for m in turn.messages or []], spans, duration))
    return turns

"""Markdown documents cut into chunks along their heading structure, each under a size cap.

A chunk is a section (a heading and the text up to the next heading), or a run of whole paragraphs of a
section too long for one chunk. It carries the document title and the path of headings above it, which
search weighs more than body text. Chunks are exact slices of the document, so a sentence found in a
chunk has a byte offset in the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CHUNK_CHARACTERS = 1200
"""About 300 tokens: a little more than all-MiniLM-L6-v2 reads (256), and enough context for BM25."""
MIN_CHUNK_CHARACTERS = 200
"""A section shorter than this (a man page's NAME, a "Part of the git suite" footer) joins its neighbour:
alone it would crowd results with near-empty chunks."""
SEPARATOR = " › "

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Chunk:
    heading: str
    """``Title › Section › Subsection``."""
    start: int
    end: int
    """Character span in the document; ``content`` is ``document[start:end]``."""
    content: str


@dataclass
class _Section:
    path: list[str]
    start: int
    end: int
    body_start: int
    """Where the text after the heading line begins (``start`` for the text before the first heading)."""


def chunk_markdown(title: str, text: str, max_characters: int = MAX_CHUNK_CHARACTERS,
                   min_characters: int = MIN_CHUNK_CHARACTERS) -> list[Chunk]:
    sections = _sections(text)
    chunks: list[Chunk] = []
    pending: int | None = None  # start of a heading-only section, folded into the next one
    for section in sections:
        start = section.start if pending is None else pending
        if not text[section.body_start:section.end].strip() and section is not sections[-1]:
            pending = start
            continue
        pending = None
        heading = SEPARATOR.join(_heading_path(title, section.path))
        for piece_start, piece_end in _pieces(text, start, section.end, max_characters):
            content = text[piece_start:piece_end]
            if content.strip():
                chunks.append(Chunk(heading, piece_start, piece_end, content))
    return _merge_small(text, chunks, max_characters, min_characters)


def _merge_small(text: str, chunks: list[Chunk], limit: int, smallest: int) -> list[Chunk]:
    """Each chunk under ``smallest`` characters joined to the chunk before it (or, for the first, after it)
    when the two fit the cap; a chunk's heading is that of its first section, or of the larger part."""
    merged: list[Chunk] = []
    for chunk in chunks:
        previous = merged[-1] if merged else None
        if previous is not None and previous.end == chunk.start and chunk.end - previous.start <= limit and (
                len(chunk.content.strip()) < smallest
                or (len(merged) == 1 and len(previous.content.strip()) < smallest)):
            heading = chunk.heading if len(previous.content) < len(chunk.content) else previous.heading
            merged[-1] = Chunk(heading, previous.start, chunk.end, text[previous.start:chunk.end])
        else:
            merged.append(chunk)
    return merged


def byte_offsets(text: str, chunks: list[Chunk]) -> list[tuple[int, int]]:
    """UTF-8 byte spans of the chunks (in order of ``start``), computed in one pass over the text."""
    spans: list[tuple[int, int]] = []
    position, byte = 0, 0
    for chunk in chunks:
        byte += len(text[position:chunk.start].encode())
        start_byte = byte
        byte += len(text[chunk.start:chunk.end].encode())
        position = chunk.end
        spans.append((start_byte, byte))
    return spans


def _heading_path(title: str, path: list[str]) -> list[str]:
    """The title, then the section's headings; a heading that repeats the one above it (the page's H1 is
    usually its title) is said once."""
    headings = [title] if title else []
    for heading in path:
        if heading and (not headings or heading != headings[-1]):
            headings.append(heading)
    return headings


def _sections(text: str) -> list[_Section]:
    sections = [_Section([], 0, len(text), 0)]
    stack: list[tuple[int, str]] = []
    position = 0
    fence: str | None = None
    previous: tuple[int, str] | None = None  # start and text of the previous line, for setext headings
    for line in text.splitlines(keepends=True):
        start = position
        position += len(line)
        bare = line.rstrip("\r\n")
        opened = _FENCE.match(bare)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            previous = None
            continue
        if opened:
            fence = opened.group(1)
            previous = None
            continue
        level, heading, heading_start = 0, "", start
        atx = _ATX.match(bare)
        setext = _SETEXT.match(bare)
        if atx:
            level, heading = len(atx.group(1)), (atx.group(2) or "").strip()
        elif setext and previous is not None and previous[1].strip() and not _is_block_start(previous[1]):
            level, heading, heading_start = (1 if setext.group(1)[0] == "=" else 2), previous[1].strip(), previous[0]
        if level:
            sections[-1].end = heading_start
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _plain(heading)))
            sections.append(_Section([h for _, h in stack], heading_start, len(text), position))
            previous = None
            continue
        previous = (start, bare)
    if sections[0].start == sections[0].end and len(sections) > 1:
        sections.pop(0)
    return sections


def _is_block_start(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(("#", ">", "- ", "* ", "+ ", "|")) or bool(re.match(r"\d{1,3}[.)] ", stripped))


_INLINE = re.compile(r"[*_`]+|\[([^\]]*)\]\([^)]*\)")


def _plain(heading: str) -> str:
    """A heading without its emphasis, code ticks and link targets."""
    return _INLINE.sub(lambda m: m.group(1) or "", heading).strip()


def _pieces(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into runs of whole blocks (paragraphs, fenced code) of at most ``limit``
    characters; a single block longer than that is cut at line ends, then anywhere."""
    if end - start <= limit:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    run_start = start
    run_end = start
    for block_start, block_end in _blocks(text, start, end):
        if block_end - run_start <= limit:
            run_end = block_end
            continue
        if run_end > run_start:
            pieces.append((run_start, run_end))
        if block_end - block_start <= limit:
            run_start, run_end = block_start, block_end
        else:
            pieces.extend(_cut(text, block_start, block_end, limit))
            run_start = run_end = block_end
    if run_end > run_start:
        pieces.append((run_start, run_end))
    return pieces


def _blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Blocks separated by blank lines, a fenced code block counting as one block."""
    blocks: list[tuple[int, int]] = []
    block_start = start
    position = start
    fence: str | None = None
    for line in text[start:end].splitlines(keepends=True):
        line_end = position + len(line)
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0]:
                fence = None
        elif opened:
            fence = opened.group(1)
        elif not line.strip():
            if position > block_start:
                blocks.append((block_start, line_end))
            block_start = line_end
        position = line_end
    if end > block_start:
        blocks.append((block_start, end))
    return blocks


def _cut(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    pieces: list[tuple[int, int]] = []
    while end - start > limit:
        cut = text.rfind("\n", start, start + limit)
        cut = cut + 1 if cut > start else start + limit
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces

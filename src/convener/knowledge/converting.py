"""Documents to clean Markdown, the text a knowledge index chunks and searches, with a title and a
description to list it by.

Documentation arrives as Markdown, reStructuredText, plain text and above all HTML: Sphinx, MkDocs,
Javadoc or asciidoc output, or a whole website mirror. HTML is cut down to the page's own content
(navigation, headers, sidebars and scripts removed) before conversion; reStructuredText is rendered by
docutils with every feature that reads files or passes raw HTML through switched off. Decoding is
strict: a file is read as its author wrote it or refused with a reason, never silently garbled.
"""

from __future__ import annotations

import codecs
import html
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import Any

from bs4 import BeautifulSoup, Tag
from markdownify import ATX, BACKSLASH, MarkdownConverter

from convener.api.errors import InvalidArgument
from convener.knowledge.sources import SUPPORTED_SUFFIXES
from convener.outside.limits import FRONT_MATTER_BYTES
from convener.outside.yaml_documents import read_yaml


@dataclass(frozen=True)
class Converted:
    """A document as Markdown: ``title`` never empty, ``description`` empty when there is none, and
    ``markdown`` "\\n"-terminated, without trailing spaces or runs of blank lines."""

    title: str
    description: str
    markdown: str


class Unconvertible(Exception):
    """A document that cannot be converted; ``reason`` is short and fit to show to the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class _Draft:
    """What a format yields: the title and description it knows of (empty when none), and Markdown."""

    title: str
    description: str
    markdown: str


_KINDS = {
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".rst": "rst", ".rest": "rst",
    ".txt": "text", ".text": "text",
}
assert set(_KINDS) == SUPPORTED_SUFFIXES

_TITLE_LENGTH = 300
_DESCRIPTION_LENGTH = 300
_SCANNED_LINES = 20_000  # title and description are looked for near the top, not through megabytes


def convert(path: str, data: bytes) -> Converted:
    """``data``, the file at ``path`` (its suffix names the format), as clean Markdown.

    Raises Unconvertible for binary or mis-encoded files, and for documents with no text.
    """
    kind = _KINDS.get(PurePosixPath(path).suffix.lower())
    if kind is None:
        raise Unconvertible("unsupported file type")
    text = _decode(data, html=kind == "html")
    if kind == "markdown":
        draft = _from_markdown(text)
    elif kind == "html":
        draft = _from_html(text)
    elif kind == "rst":
        draft = _from_rst(text)
    else:
        draft = _Draft(_humanise(path), "", text)
    markdown = _tidy(draft.markdown)
    if not markdown:
        raise Unconvertible("empty document")
    title = _shorten(_one_line(draft.title), _TITLE_LENGTH) or _markdown_title(markdown) or _humanise(path)
    description = _shorten(_one_line(draft.description), _DESCRIPTION_LENGTH) or _first_sentence(markdown)
    return Converted(title=title, description=description, markdown=markdown)


# Decoding

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE, whose BOM is its prefix
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SNIFFED_BYTES = 8192
_CONTROL_BYTES = bytes([*range(0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_BINARY_SHARE = 0.1
_META_CHARSET = re.compile(rb"""<meta\b[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""\s*<\?xml\b[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
_ESCAPING_CODECS = frozenset({"unicode-escape", "raw-unicode-escape", "idna", "punycode", "undefined"})


def _decode(data: bytes, html: bool) -> str:
    """Text by its BOM, else (HTML only) its declared charset, else strict UTF-8, with "\\n" newlines, NFC."""
    codec = _bom_codec(data)
    if codec is None:
        sample = data[:_SNIFFED_BYTES]
        if b"\x00" in sample or len(sample) - len(sample.translate(None, _CONTROL_BYTES)) > _BINARY_SHARE * len(sample):
            raise Unconvertible("binary file")
        codec = (_declared_charset(data[: 2 * _SNIFFED_BYTES]) if html else None) or "utf-8"
    text = _decode_strictly(data, codec)
    sample_text = text[:_SNIFFED_BYTES]
    if len(_CONTROL_CHARACTERS.findall(sample_text)) > _BINARY_SHARE * len(sample_text):
        raise Unconvertible("binary file")
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _bom_codec(data: bytes) -> str | None:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec
    return None


def _decode_strictly(data: bytes, codec: str) -> str:
    try:
        return data.decode(codec)
    except UnicodeDecodeError as error:
        if codec == "cp1252":  # what browsers read "latin-1" as; its five unassigned bytes are Latin-1's
            return data.decode("latin-1")
        label = "UTF-8" if codec.startswith("utf-8") else codec.upper()
        byte = error.object[error.start]
        offset = error.start + (len(codecs.BOM_UTF8) if codec == "utf-8-sig" else 0)  # the BOM was cut off first
        raise Unconvertible(f"not valid {label} (byte 0x{byte:02X} at offset {offset})") from None


def _declared_charset(head: bytes) -> str | None:
    """The charset an XML declaration or ``<meta>`` names, if Python knows it, as browsers read it."""
    match = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    if match is None:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
    except LookupError:
        return None
    if name in _ESCAPING_CODECS or not _is_text_codec(name):
        return None
    if name.startswith(("utf-16", "utf-32")):
        return "utf-8"  # the declaration was readable as ASCII, so the file is not in UTF-16
    if name in ("ascii", "iso8859-1", "latin-1"):
        return "cp1252"  # as the HTML standard says browsers must
    return name


def _is_text_codec(name: str) -> bool:
    try:
        b"".decode(name)
    except LookupError:
        return False
    return True


# Markdown

_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)


def _from_markdown(text: str) -> _Draft:
    meta, body = _front_matter(text)
    return _Draft(_meta_text(meta, "title"), _meta_text(meta, "description"), body)


def _front_matter(text: str) -> tuple[dict[Any, Any], str]:
    """YAML between ``---`` lines at the very top. What does not load as a mapping is taken to be
    Markdown (a thematic break, a setext heading), and left in place."""
    first_line_end = text.find("\n")
    if not text.startswith("---") or first_line_end < 0 or text[3:first_line_end].strip():
        return {}, text
    end = _FRONT_MATTER_END.search(text, first_line_end + 1, FRONT_MATTER_BYTES)
    if end is None:
        return {}, text
    try:
        meta = read_yaml(text[first_line_end + 1 : end.start()], "front matter", size_limit="knowledge.front_matter")
    except InvalidArgument:  # junk front matter, or more than front matter may be, is ignored
        return {}, text
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return {}, text
    return meta, text[end.end() :]


def _meta_text(meta: dict[Any, Any], key: str) -> str:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    return str(value)


# HTML

_DROPPED_TAGS = frozenset({
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "form", "button", "input",
    "select", "textarea", "object", "embed", "nav", "aside", "head",
})
_PAGE_PARTS = frozenset({"header", "footer"})  # dropped unless they hold the page title (an article header)
_DROPPED_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary"})
_BOILERPLATE_NAMES = frozenset({
    "headerlink", "hash-link", "anchorjs-link", "linenos", "lineno", "linenodiv", "table-of-contents",
    "toctree-wrapper", "edit-this-page", "theme-edit-this-page", "skip-link", "skip-to-content",
    "sphinxsidebar", "sphinxsidebarwrapper", "rst-footer-buttons", "md-source", "cookie-consent",
})
_BOILERPLATE_WORDS = frozenset({
    "sidebar", "sidenav", "subnav", "related", "breadcrumb", "breadcrumbs", "navbar", "nav", "navigation",
    "menu", "menubar", "toc", "footer", "header", "masthead", "topbar", "headerlink", "feedback", "cookie",
    "cookies", "consent", "skip", "skiplink", "edit",
})
_GENERIC_WORDS = frozenset({
    "site", "page", "main", "top", "bottom", "left", "right", "side", "global", "primary", "secondary",
    "wrapper", "wrap", "container", "inner", "outer", "area", "region", "bar", "box", "panel", "block",
    "links", "link", "list", "buttons", "button", "banner", "this", "on", "the", "to", "of", "md", "wy", "rst",
    "theme", "doc", "docs", "flex", "fixed", "sticky", "mobile", "desktop", "holder",
})
_NEVER_BY_NAME = frozenset({
    "html", "body", "main", "article", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody",
    "tfoot", "tr", "th", "td", "caption", "pre", "code", "kbd", "samp",
})
_NAME_WORDS = re.compile(r"[-_.:\s]+")
_PERMALINK_TEXT = frozenset({"¶", "#", "§", "🔗", "\u200b", ""})
_LANGUAGE_PREFIXES = ("language-", "lang-", "highlight-")
_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,30}")
_NO_LANGUAGE = frozenset({"default", "none", "code", "literal-block", "highlight", "sourcecode", "notranslate"})
_XML_DECLARATION = re.compile(r"\s*<\?xml\b[^>]{0,500}\?>")
_SPACES = re.compile(r"\s+")


@dataclass
class _Page:
    """What one pass over a parsed page finds: the first of each candidate content container, and
    the first top-level heading."""

    containers: dict[str, Tag]
    heading: Tag | None = None


_CONTAINER_ORDER = ("main", "role=main", "article", "div.body", "div.document", "#content", "#main-content")


def _from_html(text: str, clean: bool = True) -> _Draft:
    soup = _parse(text)
    head = soup.head
    page_title = _text_of(head.find("title") if head is not None else None)
    description = _meta_description(head)
    page = _prune(soup, clean)
    content = _content(soup, page)
    heading = content.find("h1")
    title = _choose_title(page_title, _text_of(heading if isinstance(heading, Tag) else page.heading))
    lead = _lead(content, page.heading) if heading is None else None
    markdown = _to_markdown(content) if lead is None else _to_markdown(lead).rstrip("\n") + "\n\n" + _to_markdown(content)
    return _Draft(title, description, markdown)


def _lead(content: Tag, heading: Tag | None) -> Tag | None:
    """The block holding the page's ``<h1>`` when it sits just before the content container rather than in
    it: AsciiDoc's ``div#header`` (the man page's NAME line, "git-stash - Stash the changes…"), a hero
    banner. It is the page's own text, so it is kept."""
    if heading is None or content.parent is None:
        return None
    block: Tag = heading
    while block.parent is not None and block.parent is not content.parent:
        block = block.parent
    if block.parent is not content.parent or block is content:
        return None
    following = block.find_next_siblings()
    return block if content in following else None


def _parse(text: str) -> BeautifulSoup:
    """lxml, the fast parser. An XML declaration is dropped first (lxml refuses one in a str, and bs4
    warns of XML), and markup without a tag gets one (bs4 warns that it looks like a file name)."""
    declaration = _XML_DECLARATION.match(text)
    if declaration is not None:
        text = text[declaration.end() :]
    if "<" not in text:
        text = "<body>" + text
    return BeautifulSoup(text, "lxml", element_classes={Tag: _Tag})


class _Tag(Tag):
    """markdownify asks every tag whether it sits inside a ``<pre>`` (``find_parent("pre")``), and bs4's
    general search machinery made that a third of the conversion time: a plain walk up answers it."""

    def find_parent(self, name: Any = None, attrs: Any = None, **kwargs: Any) -> Any:
        if not isinstance(name, str) or attrs or kwargs:
            return super().find_parent(name, attrs, **kwargs)
        parent = self.parent
        while parent is not None and parent.name != name:
            parent = parent.parent
        return parent


def _meta_description(head: Tag | None) -> str:
    if head is None:
        return ""
    for meta in head.find_all("meta"):
        if isinstance(meta, Tag) and _attr(meta, "name").strip().lower() == "description":
            return _attr(meta, "content")
    return ""


def _prune(soup: BeautifulSoup, clean: bool) -> _Page:
    """One walk in document order: boilerplate is removed without descending into it, inline literals
    become code, and the content containers and first heading are noted."""
    page = _Page(containers={})
    stack: list[Tag] = [soup]
    while stack:
        tag = stack.pop()
        if tag is not soup:
            if (clean and _is_boilerplate(tag)) or _is_permalink(tag):
                tag.decompose()
                continue
            tag = _normalise(tag)
            _note(page, tag)
        stack.extend(child for child in reversed(tag.contents) if isinstance(child, Tag))
    return page


def _is_boilerplate(tag: Tag) -> bool:
    name = tag.name
    if name in _DROPPED_TAGS:
        return True
    if not tag.attrs and name not in _PAGE_PARTS:
        return False
    if "hidden" in tag.attrs or _attr(tag, "aria-hidden").lower() == "true":
        return True
    if _attr(tag, "role").lower() in _DROPPED_ROLES:
        return True
    if name in _NEVER_BY_NAME:
        return False
    classes = _classes(tag)
    named = name in _PAGE_PARTS or any(_is_boilerplate_name(token) for token in classes)
    if not named and name != "section" and "section" not in classes:  # Sphinx puts heading ids on sections
        named = _is_boilerplate_name(_attr(tag, "id"))
    return named and tag.find(["h1", "main"]) is None  # a page header holding the title is content


def _is_boilerplate_name(name: str) -> bool:
    """Whole class tokens or ids: ``sidebar``, ``site-footer`` or ``md-sidebar`` are boilerplate, while
    ``header-level-2`` or ``tkinter.Menu`` are not: every word must be boilerplate or generic."""
    name = name.lower()
    if not name:
        return False
    if name in _BOILERPLATE_NAMES:
        return True
    words = [word for word in _NAME_WORDS.split(name) if word]
    return (
        any(word in _BOILERPLATE_WORDS for word in words)
        and all(word in _BOILERPLATE_WORDS or word in _GENERIC_WORDS for word in words)
    )


def _is_permalink(tag: Tag) -> bool:
    """Sphinx's ``¶`` and the like: a link to its own heading, whatever its class."""
    return tag.name == "a" and _attr(tag, "href").startswith("#") and tag.get_text().strip() in _PERMALINK_TEXT


def _normalise(tag: Tag) -> Tag:
    """docutils writes inline literals as ``<span class="literal">`` and old pages use ``<tt>``: code,
    for Markdown. Pygments' line-numbered tables become their plain ``<pre>``."""
    if tag.name == "tt" or (tag.name == "span" and "literal" in _classes(tag)):
        tag.name = "code"
    elif tag.name == "table" and "highlighttable" in _classes(tag):
        code = tag.find("td", class_="code")
        pre = code.find("pre") if isinstance(code, Tag) else None
        if isinstance(pre, Tag):
            tag.replace_with(pre.extract())
            tag.decompose()
            return pre
    return tag


def _note(page: _Page, tag: Tag) -> None:
    name = tag.name
    if name == "h1" and page.heading is None:
        page.heading = tag
    keys = [name, "#" + _attr(tag, "id")]
    if _attr(tag, "role").lower() == "main":
        keys.append("role=main")
    if name == "div":
        keys.extend("div." + token for token in _classes(tag))
    if name == "article" and "article" in page.containers:
        keys.append("article+")  # more than one: a listing, not one page's article
    for key in keys:
        if key in _CONTAINER_ORDER or key == "article+":
            page.containers.setdefault(key, tag)


def _content(soup: BeautifulSoup, page: _Page) -> Tag:
    """The page's own content: the first container found in ``_CONTAINER_ORDER`` that holds text."""
    for key in _CONTAINER_ORDER:
        if key == "article" and "article+" in page.containers:
            continue
        container = page.containers.get(key)
        if container is not None and _has_text(container):
            return container
    return soup.body or soup


def _has_text(tag: Tag) -> bool:
    return any(not string.isspace() for string in tag.strings)


def _choose_title(page_title: str, heading: str) -> str:
    """``<title>``, unless it is the first heading plus the site's name ("Install — Foo 2.0 docs"):
    then the heading."""
    if heading and (not page_title or page_title.startswith(heading)):
        return heading
    return page_title or heading


def _to_markdown(content: Tag) -> str:
    try:
        markdown = _Converter(
            heading_style=ATX, bullets="-", newline_style=BACKSLASH, escape_asterisks=False,
            escape_underscores=False,
        ).convert_soup(content)
    except RecursionError:  # pathologically deep nesting: the words, without the structure
        markdown = content.get_text("\n")
    return str(markdown).replace("\xa0", " ").replace("\u200b", "")


class _Converter(MarkdownConverter):
    """markdownify, with links to anchors and scripts as plain text, images as their alt text, and code
    blocks fenced with their language (from ``language-x``, ``highlight-x`` or docutils classes)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._numbers: dict[int, dict[int, int]] = {}

    def convert_a(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        href = _attr(el, "href").strip()
        shown = text.strip()
        if "_noformat" in parent_tags or not shown or not _keeps_link(href):
            return text
        if any(character in href for character in " ()<>"):
            href = "<" + href.replace("<", "%3C").replace(">", "%3E") + ">"
        before = " " if text[:1].isspace() else ""
        after = " " if text[-1:].isspace() else ""
        return f"{before}[{shown}]({href}){after}"

    def convert_li(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        """As markdownify's, but numbering an ordered list's items without counting each one's previous
        siblings (quadratic: seconds for a list of a few thousand items)."""
        text = text.strip()
        if not text:
            return "\n"
        parent = el.parent
        bullet = f"{self._number(parent, el)}. " if parent is not None and parent.name == "ol" else "- "
        indent = " " * len(bullet)
        lines = text.split("\n")
        return bullet + lines[0] + "".join("\n" + (indent + line if line else "") for line in lines[1:]) + "\n"

    def _number(self, listing: Tag, item: Tag) -> int:
        numbers = self._numbers.get(id(listing))
        if numbers is None:
            start = _attr(listing, "start").strip()
            first = int(start) if start.isdigit() else 1
            items = listing.find_all("li", recursive=False)
            numbers = self._numbers[id(listing)] = {id(each): first + index for index, each in enumerate(items)}
        return numbers.get(id(item), 1)

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return _attr(el, "alt").strip()

    def convert_pre(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        code = text.strip("\n")
        if not code.strip():
            return ""
        fence = "```"
        while fence in code:
            fence += "`"
        return f"\n\n{fence}{_code_language(el)}\n{code}\n{fence}\n\n"


def _keeps_link(href: str) -> bool:
    return bool(href) and not href.startswith("#") and not href.lower().startswith(("javascript:", "vbscript:", "data:"))


def _code_language(pre: Tag) -> str:
    """The language named on the ``<pre>``, its ``<code>``, or the wrappers highlighters put around it."""
    code = pre.find("code", recursive=False)
    places: list[Tag | None] = [pre, code if isinstance(code, Tag) else None, pre.parent]
    if pre.parent is not None:
        places.append(pre.parent.parent)
    for place in places:
        if place is None:
            continue
        classes = _classes(place)
        for token in classes:
            for prefix in _LANGUAGE_PREFIXES:
                if token.startswith(prefix) and _usable_language(token[len(prefix):]):
                    return token[len(prefix):]
        if ("code" in classes and "literal-block" in classes) or "sourceCode" in classes:  # docutils, pandoc
            for token in classes:
                if _usable_language(token) and token != "sourceCode":
                    return token
    return ""


def _usable_language(name: str) -> bool:
    return name.lower() not in _NO_LANGUAGE and _LANGUAGE.fullmatch(name) is not None


def _classes(tag: Tag) -> list[str]:
    value = tag.attrs.get("class")
    if value is None:
        return []
    return value.split() if isinstance(value, str) else [str(token) for token in value]


def _attr(tag: Tag, name: str) -> str:
    value = tag.attrs.get(name)
    if value is None:
        return ""
    return value if isinstance(value, str) else " ".join(str(part) for part in value)


def _text_of(tag: Any) -> str:
    return _one_line(tag.get_text(" ")) if isinstance(tag, Tag) else ""


# reStructuredText

_RST_SETTINGS = {
    "file_insertion_enabled": False,  # no include, no :file: or :url: options: a document cannot read the disk
    "raw_enabled": False,  # no raw HTML passed through
    "report_level": 5,  # no system messages in the output
    "halt_level": 5,  # and none stops the conversion
    "warning_stream": False,
    "_disable_config": True,  # no docutils.conf from the server's disk
    "input_encoding": "unicode",
    "embed_stylesheet": False,  # not read on every call, and not wanted
    "stylesheet_path": "",
    "syntax_highlight": "none",  # plain <pre>: faster, and the language stays in its class
}
_TAGS = re.compile(r"<[^<>]{0,500}>")
_SPHINX_CODE_ROLES = (
    "class", "func", "meth", "attr", "mod", "obj", "data", "const", "exc", "envvar", "option", "file",
    "command", "program", "kbd", "samp", "py:class", "py:func", "py:meth", "py:attr", "py:mod", "py:obj",
    "py:data", "py:const", "py:exc", "c:func", "c:type", "c:macro", "c:member", "cpp:class", "cpp:func",
    "js:func", "js:class",
)
_SPHINX_TEXT_ROLES = ("ref", "doc", "term", "numref", "any", "download", "guilabel", "menuselection", "abbr", "dfn")


def _from_rst(text: str) -> _Draft:
    """docutils with the safe settings above. Should docutils itself fail on hostile input, the source
    is kept as plain text: it is readable, and better than losing the document."""
    from docutils.core import publish_parts  # type: ignore[import-untyped, unused-ignore]
    from docutils.writers.html5_polyglot import Writer  # type: ignore[import-untyped, unused-ignore]

    _register_sphinx_roles()
    try:
        # A writer object rather than writer_name="html5", which newer docutils deprecate.
        parts = publish_parts(source=text, writer=Writer(), settings_overrides=dict(_RST_SETTINGS))
    except Exception:  # noqa: BLE001 - docutils is a large parser fed hostile text: no bug of its may lose the document
        return _Draft("", "", text)
    title = _one_line(html.unescape(_TAGS.sub("", str(parts.get("title", "")))))
    body = _from_html(str(parts.get("body", "")), clean=False).markdown
    return _Draft(title, "", f"# {title}\n\n{body}" if title else body)


@cache
def _register_sphinx_roles() -> None:
    """Most reStructuredText is written for Sphinx, whose roles docutils does not know: rendered as
    their text (``:ref:`Install <install>``` as "Install", ``:func:`~a.b``` as code "b") rather than
    as unparsed source."""
    from docutils import nodes  # type: ignore[import-untyped, unused-ignore]
    from docutils.parsers.rst import roles  # type: ignore[import-untyped, unused-ignore]

    def role(as_code: bool) -> Any:
        def render(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                   options: Any = None, content: Any = None) -> tuple[list[Any], list[Any]]:
            shown = _role_text(text)
            return [nodes.literal(rawtext, shown) if as_code else nodes.Text(shown)], []
        return render

    for name in _SPHINX_CODE_ROLES:
        roles.register_local_role(name, role(as_code=True))
    for name in _SPHINX_TEXT_ROLES:
        roles.register_local_role(name, role(as_code=False))


def _role_text(text: str) -> str:
    text = html.unescape(text).strip()
    if text.endswith(">") and " <" in text:
        return text[: text.rindex(" <")].strip()
    text = text.lstrip("!")
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text


# Markdown text: tidying, titles and descriptions


def _tidy(markdown: str) -> str:
    """Trailing spaces stripped, leading and trailing blank lines dropped, runs of blank lines made one."""
    lines: list[str] = []
    blank = True
    for line in markdown.split("\n"):
        line = line.rstrip()
        if not line:
            if blank:
                continue
            blank = True
        else:
            blank = False
        lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def _lines(text: str) -> Iterator[str]:
    """The first lines of ``text``, without splitting all of it."""
    start = 0
    for _ in range(_SCANNED_LINES):
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _blocks(markdown: str) -> Iterator[tuple[str, str]]:
    """Lines outside fenced code blocks, as (line stripped, line): what titles and descriptions are
    looked for in. Fenced lines are skipped, and the fences themselves are given as ``"```"``."""
    fence = ""
    for line in _lines(markdown):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            yield "```", line
            continue
        yield stripped, line


def _markdown_title(markdown: str) -> str:
    """The first level-one heading, ATX (``# Title``) or setext (``Title`` over ``=====``)."""
    previous = ""
    for stripped, line in _blocks(markdown):
        if line.startswith(("    ", "\t")):
            previous = ""
        elif stripped.startswith("# ") or (previous and stripped and set(stripped) == {"="}):
            heading = _without_closing_hashes(stripped[2:]) if stripped.startswith("# ") else previous
            title = _shorten(_plain(heading), _TITLE_LENGTH)
            if title:
                return title
            previous = ""
        else:
            previous = stripped if stripped and _is_prose(stripped) else ""
    return ""


def _without_closing_hashes(heading: str) -> str:
    heading = heading.strip()
    bare = heading.rstrip("#")
    return bare.rstrip() if bare != heading and (not bare or bare[-1] in " \t") else heading


_LIST_ITEM = re.compile(r"(?:[-*+]|[0-9]{1,9}[.)])(?:\s|$)")
_REFERENCE = re.compile(r"\[[^\]]{0,300}\]:")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def _is_prose(stripped: str) -> bool:
    """Whether a line can belong to a paragraph: not a heading, table, quote, HTML, list item, image,
    link definition, admonition, MDX import or thematic break."""
    first = stripped[0]
    if first == "[":
        return _REFERENCE.match(stripped) is None
    if first in "#|><!=:{$" or stripped.startswith(("import ", "export ", "---", "***", "___")):
        return False
    return _LIST_ITEM.match(stripped) is None


def _first_paragraph(markdown: str) -> str:
    paragraph: list[str] = []
    for stripped, line in _blocks(markdown):
        if paragraph and stripped and set(stripped) <= {"=", "-"}:  # an underline: that was a heading
            paragraph = []
            continue
        indented_code = not paragraph and line.startswith(("    ", "\t"))
        if stripped and stripped != "```" and not indented_code and _is_prose(stripped):
            paragraph.append(stripped)
            if sum(map(len, paragraph)) > 4 * _DESCRIPTION_LENGTH:
                break
        elif paragraph:
            break
    return " ".join(paragraph)


def _first_sentence(markdown: str) -> str:
    """The first paragraph's first sentence, as plain text, at most 300 characters."""
    text = _plain(_first_paragraph(markdown))
    for end in _SENTENCE_END.finditer(text, 1):
        following = text[end.end() :].lstrip()[:1]
        if not following.islower():  # "e.g. this" goes on; "Done. Then" is two sentences
            return _shorten(text[: end.end()], _DESCRIPTION_LENGTH)
    return _shorten(text, _DESCRIPTION_LENGTH)


_INLINE_LINK = re.compile(r"!?\[([^\]\n]{0,300})\]\([^)\n]{0,500}\)")
_BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]{1,300}?)(?<=\S)\*(?![\w*])|(?<!\w)_(?=\S)([^_\n]{1,300}?)(?<=\S)_(?!\w)")


def _plain(markdown: str) -> str:
    """Inline Markdown as the words it shows: links as their text, no tags, emphasis or code marks."""
    text = markdown[: 4 * _DESCRIPTION_LENGTH]
    text = _INLINE_LINK.sub(r"\1", text)
    text = _TAGS.sub("", text)
    text = text.replace("**", "").replace("__", "").replace("`", "")
    text = _EMPHASIS.sub(lambda match: match.group(1) or match.group(2), text)
    return _one_line(_BACKSLASH_ESCAPE.sub(r"\1", text))


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text[: 4 * _TITLE_LENGTH]).strip()


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit - 1].rstrip() + "…"


def _humanise(path: str) -> str:
    """``getting-started.md`` → "Getting started"."""
    stem = PurePosixPath(path).stem
    words = " ".join(stem.replace("_", " ").replace("-", " ").split())
    return words[:1].upper() + words[1:] if words else "Untitled"

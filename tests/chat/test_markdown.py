"""Message text to the served Markdown dialect, checked by parsing the output with a CommonMark parser:
formatting must come out as the intended nodes, and literal text must come out as exactly that text."""

from __future__ import annotations

import random
from typing import ClassVar
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from convener.chat.markdown import (
    Converted,
    _convert_read,
    _convert_simple_slack,
    _normalise_newlines,
    convert,
    escape,
    has_link,
    mentions,
    plain_text,
    to_markdown,
)
from convener.chat.records import TextFormat

MD = MarkdownIt("commonmark").enable("strikethrough")

PROSE_TOKENS = {"paragraph_open", "paragraph_close", "inline", "text", "softbreak", "hardbreak"}
"""All that escaped text may parse into: no emphasis, code, links, HTML, headings, lists, quotes, rules."""
DIALECT_TOKENS = PROSE_TOKENS | {
    "strong_open", "strong_close", "em_open", "em_close", "s_open", "s_close", "code_inline", "link_open",
    "link_close", "fence", "bullet_list_open", "bullet_list_close", "list_item_open", "list_item_close",
    "blockquote_open", "blockquote_close",
}


class Directory:
    users: ClassVar = {"U012AB": "Ana Lima", "users/123": "Ben Okafor", "users/alice@x.com": "Alice Doe"}
    channels: ClassVar = {"C0123": "general"}

    def user(self, ref: str) -> str | None:
        return self.users.get(ref)

    def channel(self, ref: str) -> str | None:
        return self.channels.get(ref)


NAMES = Directory()


def html(text: str, text_format: TextFormat = "slack") -> str:
    return str(MD.render(to_markdown(text, text_format, NAMES)))


def token_types(markdown: str) -> set[str]:
    types: set[str] = set()
    for token in MD.parse(markdown):
        types.add(token.type)
        types.update(child.type for child in token.children or [])
    return types


def inline_text(children: list[Token]) -> str:
    """The text an inline token shows; a link as "text (href)" unless its text is its address."""
    out: list[str] = []
    links: list[tuple[int, str]] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "link_open":
            links.append((len(out), str(child.attrs["href"])))
        elif child.type == "link_close":
            start, href = links.pop()
            if unquote("".join(out[start:])) != unquote(href):  # the parser percent-encodes the href
                out.append(f" ({href})")
    return "".join(out)


def text_content(markdown: str) -> str:
    """The text of every paragraph and code block, one per line."""
    leaves = [inline_text(token.children or []) if token.type == "inline" else token.content.removesuffix("\n")
              for token in MD.parse(markdown) if token.type in ("inline", "fence", "code_block")]
    return "\n".join(leaves)


def without_blank_lines(text: str) -> str:
    """A text's lines as Markdown can be trusted to keep them: without the blank ones, and without
    trailing spaces or tabs (dropped at the end of a paragraph, kept or not before a line break)."""
    return "\n".join(kept for line in text.split("\n") if (kept := line.rstrip(" \t")))


# ---------------------------------------------------------------- escape


NASTY = [
    "*", "**", "***", "_", "__", "snake_case_name", "_leading", "trailing_", "2*3*4", "~", "~~strike~~",
    "~~~", "```", "`code`", "``", "a ` b", "\\", "\\\\", "\\*", "ends with \\", "C:\\Users\\me", "#", "# heading",
    "###### six", "####### seven", "#hashtag", "issue #42", "1.", "1. item", "1) item", "1234567890. big",
    "1.5 million", "- item", "-", "--", "---", "- - -", "+ item", "+", "=", "===", "a\n===", "a\n---",
    "* item", "_ _ _", "> quote", ">", ">> nested", "<b>bold</b>", "<script>alert(1)</script>",
    "<!-- comment -->", "<https://example.com>", "<a@b.com>", "a < b > c", "<", "x<y", "[x](y)", "[x]",
    "[x]: /url", "![img](src)", "!", "Hello!", "[", "]", "(", ")", "|a|b|", "|---|---|", "a | b", "&amp;",
    "&copy;", "&#35;", "&#x23;", "AT&T", "Tom & Jerry", "&", "&;", "    indented code", "\tTab",
    "  two spaces", "line  \nbreak", "a\nb", "a\n\nb", "a\n\n\n\nb", "\n\nleading", "trailing\n\n", " ",
    "\u00a0nbsp\u00a0", "a\u00a0\nb", "\u3000ideographic", "emoji 😀🎉👍🏽", "日本語のテキスト", "مرحبا", "é_è", "ü*ö*",
    "{braces}", "$math$", "%20", "@here", ":smile:", "a\\\nb", "http://bare.example/a_b*c", "www.example.com",
    "x\r\ny\rz", "*not* _em_ ~s~ `c` **b** __u__", "***bold italic***", "\\`not code\\`", "[link](<a b>)",
]


def random_text(rng: random.Random) -> str:
    atoms = [*"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", *"aZ9 é中😀\n\t", "&amp;", "&#32;", "1.", "1)", "- ", "* ",
             "# ", "> ", "```", "~~~", "    ", "<b>", "</b>", "<!--", "[x](y)", "![i](u)", "<http://x.y>",
             "http://a.b/", "**", "__", "===", "---", "\u00a0", "\n\n", "&lt;", "|-|"]
    return "".join(rng.choice(atoms) for _ in range(rng.randint(1, 30)))


RANDOM_TEXTS = [random_text(random.Random(seed)) for seed in range(200)]


@pytest.mark.parametrize("text", NASTY + RANDOM_TEXTS)
def test_escaped_text_reads_back_as_itself(text: str) -> None:
    escaped = escape(text)
    assert token_types(escaped) <= PROSE_TOKENS, escaped
    expected = without_blank_lines(text.replace("\r\n", "\n").replace("\r", "\n"))
    assert without_blank_lines(text_content(escaped)) == expected, escaped


@pytest.mark.parametrize("text", [
    "snake_case_name", "issue #42", "1.5 million", "C:\\Users\\me", "Tom & Jerry", "a < b", "Hello, world!",
    "(parenthesised) {braces} $5 50% user@example.com #general @here a-b a+b a=b 'quotes' \"double\"",
    "emoji 😀 and 日本語",
])
def test_escaping_leaves_ordinary_text_alone(text: str) -> None:
    assert escape(text) == text


def test_escaping_touches_only_what_would_be_markup() -> None:
    assert escape("1. not a list") == "1\\. not a list"
    assert escape("# not a heading") == "\\# not a heading"
    assert escape("2*3*4 = [a](b)") == "2\\*3\\*4 = \\[a\\](b)"
    assert escape("<b>x</b> ~ `y`") == "\\<b>x\\</b> \\~ \\`y\\`"
    assert escape("    four spaces") == "&#32;   four spaces"
    assert escape("&amp; &") == "\\&amp; &"


# ---------------------------------------------------------------- Slack


def test_slack_styles_become_strong_em_and_strikethrough() -> None:
    assert to_markdown("*bold* _italic_ ~gone~", "slack", NAMES) == "**bold** *italic* ~~gone~~"
    assert html("*bold* _italic_ ~gone~") == "<p><strong>bold</strong> <em>italic</em> <s>gone</s></p>\n"


def test_styles_nest() -> None:
    assert html("*bold _and italic_*") == "<p><strong>bold <em>and italic</em></strong></p>\n"
    assert html("_it *b*_ ~*x*~") == "<p><em>it <strong>b</strong></em> <s><strong>x</strong></s></p>\n"
    assert html("*a*_b_ _a_*b*") == "<p><strong>a</strong><em>b</em> <em>a</em><strong>b</strong></p>\n"


def test_a_style_markdown_cannot_write_in_its_place_keeps_its_text() -> None:
    # a delimiter run between a letter and punctuation does not open: "@Ana Lima**(x)**" is not bold
    assert html("<@U012AB>*(x)* ok") == "<p>@Ana Lima(x) ok</p>\n"
    assert html("_a_*b*_c_") == "<p><em>a</em>b<em>c</em></p>\n"


@pytest.mark.parametrize("source", [
    "2*3*4", "snake_case_name", "a_b_c and x*y*z", "*not bold *", "~ nope~", "**", "a * b * c", "_ _", "*",
])
def test_markers_count_only_at_word_boundaries(source: str) -> None:
    markdown = to_markdown(source, "slack", NAMES)
    assert token_types(markdown) <= PROSE_TOKENS
    assert text_content(markdown) == source


def test_a_doubled_marker_keeps_its_outer_half_as_text() -> None:
    assert html("**not bold**") == "<p>*<strong>not bold</strong>*</p>\n"


def test_code_spans_keep_their_content_verbatim() -> None:
    markdown = to_markdown("run `rm -rf *_tmp_* <https://evil|click> &lt;b&gt;` now", "slack", NAMES)
    tokens = MD.parse(markdown)[1].children or []
    assert [t.type for t in tokens] == ["text", "code_inline", "text"]
    assert tokens[1].content == "rm -rf *_tmp_* <https://evil|click> <b>"
    assert not has_link("`<https://evil|click>`", "slack")
    assert mentions("`<@U012AB>`", "slack") == []


def test_code_blocks_are_fenced_on_their_own_lines() -> None:
    markdown = to_markdown("see ```def f():\n    return `x` *y*``` ok", "slack", NAMES)
    assert markdown == "see\n\n```\ndef f():\n    return `x` *y*\n```\n\nok"
    fence = [t for t in MD.parse(markdown) if t.type == "fence"]
    assert fence[0].content == "def f():\n    return `x` *y*\n"


def test_code_blocks_may_hold_backticks() -> None:
    markdown = to_markdown("```a``b\n``\n`c```", "slack", NAMES)
    assert [t.content for t in MD.parse(markdown) if t.type == "fence"] == ["a``b\n``\n`c\n"]


def test_bullets_become_a_nested_list() -> None:
    text = "intro\n• one\n    ◦ two\n        ▪ three\n• four\n- five\n* six\nafter"
    assert to_markdown(text, "slack", NAMES) == (
        "intro\n\n- one\n  - two\n    - three\n- four\n- five\n- six\n\nafter")
    assert html(text) == (
        "<p>intro</p>\n<ul>\n<li>one\n<ul>\n<li>two\n<ul>\n<li>three</li>\n</ul>\n</li>\n</ul>\n</li>\n"
        "<li>four</li>\n<li>five</li>\n<li>six</li>\n</ul>\n<p>after</p>\n")


def test_quotes_end_where_slack_ends_them() -> None:
    assert to_markdown("&gt; quoted\nnot quoted", "slack", NAMES) == "> quoted\n\nnot quoted"
    assert html("&gt; quoted\nnot quoted") == "<blockquote>\n<p>quoted</p>\n</blockquote>\n<p>not quoted</p>\n"
    assert html("before\n&gt;&gt;&gt; all\n\nof • this\n• item") == (
        "<p>before</p>\n<blockquote>\n<p>all</p>\n<p>of • this</p>\n<ul>\n<li>item</li>\n</ul>\n</blockquote>\n")
    assert html("&gt; ```code```") == "<blockquote>\n<pre><code>code\n</code></pre>\n</blockquote>\n"


def test_links() -> None:
    assert to_markdown("<https://x.test/a_b|the *docs*> <https://x.test> <mailto:a@b.test|a@b.test>", "slack",
                       NAMES) == "[the \\*docs\\*](https://x.test/a_b) <https://x.test> [a@b.test](mailto:a@b.test)"
    assert html("<https://x.test/a_b|the *docs*>") == '<p><a href="https://x.test/a_b">the *docs*</a></p>\n'
    assert html("<https://x.test/a(b)c d|t]x>") == '<p><a href="https://x.test/a(b)c%20d">t]x</a></p>\n'
    assert html("<https://x.test/?a=1&amp;copy;=2|q>") == '<p><a href="https://x.test/?a=1&amp;copy;=2">q</a></p>\n'
    assert html("<javascript:alert(1)|click>") == "<p>click</p>\n"


def test_mentions_become_display_names() -> None:
    text = "<@U012AB> <@U999|zed> <@U998> <#C0123> <#C0456|random> <#C0789> <!here> <!channel|channel> " \
           "<!everyone> <!subteam^S123|@team> <!date^1392734382^{date_pretty}|Feb 18, 2014>"
    assert to_markdown(text, "slack", NAMES) == (
        "@Ana Lima @zed @U998 #general #random #C0789 @here @channel @everyone @team Feb 18, 2014")


def test_slack_entities_are_read_as_characters_and_escaped_as_needed() -> None:
    markdown = to_markdown("a &lt;b&gt; &amp;amp; &amp; c &lt;@U012AB&gt; &lt;#C0123|x&gt;", "slack", NAMES)
    assert markdown == "a \\<b> \\&amp; & c \\<@U012AB> \\<#C0123|x>"
    assert text_content(markdown) == "a <b> &amp; & c <@U012AB> <#C0123|x>"
    assert mentions("&lt;@U012AB&gt;", "slack") == []


@pytest.mark.parametrize("text", [
    "1. not a list", "# not a heading", "[a](b) typed", "&lt;script&gt;alert(1)&lt;/script&gt;",
    "    not code", "---", "a\n===", "a &gt; b", "| a | b |\n|---|---|", "![x](y)", "\\*", "&amp;copy;",
    "&lt;!-- x --&gt;", "~~~\ncode\n~~~", "x &lt;= 3 &amp;&amp; y", "Great!<https://x.test|link>",
])
def test_literal_slack_text_stays_literal(text: str) -> None:
    markdown = to_markdown(text, "slack", NAMES)
    allowed = PROSE_TOKENS | {"link_open", "link_close"} if "<https" in text else PROSE_TOKENS
    assert token_types(markdown) <= allowed, markdown
    assert text_content(markdown) == plain_text(text, "slack", NAMES).replace("\n\n", "\n")


def test_indentation_is_kept_without_making_a_code_block() -> None:
    markdown = to_markdown("list:\n    indented\n\ttabbed", "slack", NAMES)
    assert token_types(markdown) <= PROSE_TOKENS
    assert text_content(markdown) == "list:\n    indented\n\ttabbed"


# ---------------------------------------------------------------- Google Chat


def test_chat_markup() -> None:
    text = "*ship it* _today_ ~maybe~ `x*y` <users/123> <users/alice@x.com> <users/9> <users/all> " \
           "see <https://x.test|docs>"
    assert to_markdown(text, "chat", NAMES) == (
        "**ship it** *today* ~~maybe~~ `x*y` @Ben Okafor @Alice Doe @users/9 @all see [docs](https://x.test)")
    assert html("* one\n- two\n&gt; not a quote\n> quote", "chat") == (
        "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n<p>&amp;gt; not a quote</p>\n"
        "<blockquote>\n<p>quote</p>\n</blockquote>\n")


def test_chat_angle_brackets_that_are_not_markup_are_text() -> None:
    markdown = to_markdown("<b>x</b> <users/> <ftp://x|y> a<b", "chat", NAMES)
    assert token_types(markdown) <= PROSE_TOKENS
    assert text_content(markdown) == "<b>x</b> <users/> <ftp://x|y> a<b"


def test_bare_urls_become_autolinks_without_their_trailing_punctuation() -> None:
    assert to_markdown("see https://x.test/a_(b)_c. or (https://x.test/d)!", "chat", NAMES) == (
        "see <https://x.test/a_(b)_c>. or (<https://x.test/d>)!")
    assert has_link("see https://x.test now", "chat")


# ---------------------------------------------------------------- Markdown


def test_markdown_is_served_as_written() -> None:
    text = "**hi** @alice\r\n\r\n- [x](https://x.test)\r`*`"
    assert to_markdown(text, "markdown", NAMES) == "**hi** @alice\n\n- [x](https://x.test)\n`*`"


def test_markdown_plain_text() -> None:
    text = "# Title\n> **bold** and _it_ ~~s~~ with [a link](https://x.test) <https://y.test>\n" \
           "- item `*code*`\n```\n**kept**\n```\nsnake_case \\*"
    assert plain_text(text, "markdown", NAMES) == (
        "Title\nbold and it s with a link (https://x.test) https://y.test\nitem *code*\n**kept**\nsnake_case *")


# ---------------------------------------------------------------- mentions, links, plain text


def test_mentions_are_user_refs_in_order_once() -> None:
    assert mentions("<@U2> hi <@U1|ann> <@U2> <#C1> <!here> <!subteam^S1|@t>", "slack") == ["U2", "U1"]
    assert mentions("<users/2> <users/a@x.com> <users/all> <users/2>", "chat") == ["users/2", "users/a@x.com"]
    assert mentions("@Alice hi @bob.smith, @here and a@b.com `@code` @carol.\n```\n@dave\n```", "markdown") == [
        "alice", "bob.smith", "carol"]
    assert mentions("```<@U1>``` `<users/1>`", "slack") == []


@pytest.mark.parametrize(("text", "text_format", "linked"), [
    ("<https://x.test>", "slack", True),
    ("<https://x.test|x>", "slack", True),
    ("<mailto:a@b.test|a@b.test>", "slack", True),
    ("<@U1> <#C1> <!here>", "slack", False),
    ("`<https://x.test>`", "slack", False),
    ("```https://x.test```", "slack", False),
    ("<slack://open|app>", "slack", False),
    ("<https://x.test|docs>", "chat", True),
    ("see http://x.test.", "chat", True),
    ("https:// nothing", "chat", False),
    ("no link", "chat", False),
    ("[a](https://x.test)", "markdown", True),
    ("<https://x.test>", "markdown", True),
    ("write mailto:a@b.test", "markdown", True),
    ("[a](/relative)", "markdown", False),
    ("`https://x.test`", "markdown", False),
])
def test_has_link(text: str, text_format: TextFormat, linked: bool) -> None:
    assert has_link(text, text_format) is linked


def test_plain_text_has_the_words_only() -> None:
    text = "*Hi* <@U012AB>, see <https://x.test|the _docs_> and <https://y.test>\n\n\n&gt; • `code` &amp; more\n" \
           "```block```"
    assert plain_text(text, "slack", NAMES) == (
        "Hi @Ana Lima, see the _docs_ (https://x.test) and https://y.test\n\ncode & more\nblock")


# ---------------------------------------------------------------- whatever the input


def random_markup(rng: random.Random, text_format: TextFormat) -> str:
    atoms = [*"*_~`-•>#1.!\\[](){}|&; aZé😀\n", "\n\n", "    ", "* ", "- ", "• ", "```", "1. ", "http://a.b/",
             "**", "__", "~~", "<b>", "&"]
    if text_format == "slack":
        atoms += ["&gt;", "&lt;", "&amp;", "&gt;&gt;&gt;", "<@U012AB>", "<@U9|zed>", "<#C0123>", "<!here>",
                  "<https://x.test/a_b|li*nk>", "<https://x.test>", "<mailto:a@b.test>", "<!date^1^x|Feb 1>"]
    else:
        atoms += ["<users/123>", "<users/9>", "<users/all>", "<https://x.test/a_b|li*nk>", "<"]
    return "".join(rng.choice(atoms) for _ in range(rng.randint(1, 40)))


RANDOM_MARKUP = [(text_format, random_markup(random.Random(f"{text_format}{seed}"), text_format))
                 for text_format in ("slack", "chat") for seed in range(100)]


@pytest.mark.parametrize(("text_format", "text"), RANDOM_MARKUP)
def test_any_markup_converts_to_the_dialect_showing_the_plain_text(text_format: TextFormat, text: str) -> None:
    """Whatever the input, the output uses only the dialect's constructs, and what it shows is exactly
    the message's plain text: no literal text turned into markup, no markup dropped or leaked as text."""
    markdown = to_markdown(text, text_format, NAMES)
    assert token_types(markdown) <= DIALECT_TOKENS, markdown
    shown = without_blank_lines(unquote(text_content(markdown)))
    assert shown == without_blank_lines(unquote(plain_text(text, text_format, NAMES))), markdown


@pytest.mark.parametrize("text", [
    "[click](javascript:alert(1))",
    "<script>alert(1)</script>",
    "hi <img src=x onerror=alert(1)>",
    "![pixel](data:image/png;base64,AAAA)",
    "[x](JAVASCRIPT:alert(1)) and **bold**",
])
def test_markdown_with_raw_html_or_unsafe_links_is_served_as_literal_text(text: str) -> None:
    served = to_markdown(text, "markdown", NAMES)

    tokens = MarkdownIt("commonmark").enable("strikethrough").parse(served)
    kinds = {inner.type for token in tokens for inner in [token, *(token.children or [])]}
    assert not kinds & {"html_inline", "html_block", "link_open", "image"}


def test_safe_markdown_is_served_as_written() -> None:
    text = "**release** of [v2](https://acme.test/v2) is out\n\n- item\n> quoted `code`"
    assert to_markdown(text, "markdown", NAMES) == text


def test_slack_emoji_codes_become_emoji_outside_code() -> None:
    assert to_markdown("shipped :tada: :+1::skin-tone-2: :partyparrot: `:tada:`", "slack", NAMES) == (
        "shipped 🎉 👍🏻 :partyparrot: `:tada:`")
    assert to_markdown("12:30:45 and a:b:c", "slack", NAMES) == "12:30:45 and a:b:c"


# ---------------------------------------------------------------- one reading for all four


def random_words(rng: random.Random) -> str:
    """Mostly plain chat text (what ``convert`` takes its short way for), with every character that may
    make a line more than plain text now and then: at a line's start, in its middle, at its end."""
    atoms = ["word", "Wort", "é", "😀", " ", " ", ",", ".", "?", "!", "'", '"', "(", ")", "/", "%", "$", "=",
             "-", "+", "#", "|", "1", "2.", "3)", "\n", "\t", "\u00a0", "\u2028", "•", "◦", ">", "&", "&amp;",
             "&gt;", ":", ":tada:", "*", "_", "~", "`", "[", "]", "\\", "<", "@", "@ana", "http", "https://x.test",
             "<users/123>", "<@U012AB>", "<https://x.test|x>", "\n\n"]
    plain = atoms[:25]
    return "".join(rng.choice(plain if rng.random() < 0.85 else atoms) for _ in range(rng.randint(1, 30)))


RANDOM_WORDS = [(text_format, random_words(random.Random(f"words{text_format}{seed}")))
                for text_format in ("slack", "chat", "markdown") for seed in range(700)]


def test_random_words_take_the_short_way_often_enough_to_test_it() -> None:
    assert sum(to_markdown(text, fmt, NAMES) == text for fmt, text in RANDOM_WORDS) > len(RANDOM_WORDS) // 10


@pytest.mark.parametrize(("text_format", "text"), RANDOM_WORDS + RANDOM_MARKUP)
def test_convert_is_the_four_readings_at_once(text_format: TextFormat, text: str) -> None:
    """``convert`` (which takes a short way for plain text) gives what each reading gives on its own."""
    assert convert(text, text_format, NAMES) == Converted(
        to_markdown(text, text_format, NAMES), plain_text(text, text_format, NAMES),
        tuple(mentions(text, text_format)), has_link(text, text_format))


# ---------------------------------------------------------------- the short way for simple Slack markup


class HostileDirectory:
    """Names that would need escapes, span lines, start blocks or end in whitespace, beside plain ones."""

    users: ClassVar = {"U012AB": "Ana Lima", "U1": "*bold* name", "U2": "new\nline", "U3": "trailing ",
                       "U4": "", "U5": "a_b", "U6": "Zoë 😀", "U7": "x:y", "U8": "1. one", "U9": "Bang!"}
    channels: ClassVar = {"C0123": "general", "C1": "# heading", "C2": "[x]", "C3": "a b", "C4": ""}

    def user(self, ref: str) -> str | None:
        return self.users.get(ref)

    def channel(self, ref: str) -> str | None:
        return self.channels.get(ref)


SIMPLE_ATOMS = [
    "word", "Wort", "é", "😀", " ", " ", " ", ",", ".", "?", "!", "'", "(", ")", "/", "%", "=", "-", "+", "#",
    "1", "2.", "\n", "\t", "\u00a0", "•", ">", "&", "&amp;", "&gt;", "|", "@", "h", "http", "ttp",
    # the simple markup, and its near misses
    "<@U012AB>", "<@U1>", "<@U2>", "<@U3>", "<@U4>", "<@U5>", "<@U6>", "<@U7>", "<@U8>", "<@U9>", "<@UX>",
    "<@u0lower>", "<@UX|label>", "<@UX|@label>", "<@UX|@>", "<@UX|>", "<@U012AB|x>", "<@U 1>", "<@>",
    "<#C0123>", "<#C1>", "<#C2>", "<#C3>", "<#C4>", "<#CX|name>", "<#CX|#>", "<#CX>",
    "<https://x.test/a/b>", "<https://x.test/a|text>", "<http://x.test|http://x.test>", "<https://x.test|>",
    "<https://x.test/a?b=c&amp;d=e|q>", "<https://x.test/(p)|p>", "<https://x.test|a*b>", "<mailto:a@b.test>",
    "<https://x.test|x|y>", "<ftp://x.test|f>", "https://bare.test/x", "http://x.test.",
    ":tada:", ":+1:", ":+1::skin-tone-2:", ":thinking_face:", ":partyparrot:", ":coffee:", "12:30",
    ":", "::", ":smile", "*", "_", "~", "`", "*bold*", "_it_", "*two words*", "*x *", "**b**", "* ",
    "_snake_case_", "*a*b", "`code`", "`a*b<c>:d:`", "` pad `", "`&amp;`", "``", "```", "`x``y`", "~s~",
    # bullets, and what only looks like one
    "\n• ", "\n•  ", "\n•\t", "\n◦ ", "\n▪ ", "\n•", "\n- ", "\n* ", "\n • ", "• ", "\n• 1. ", "\n• \u00a0",
]


@st.composite
def simple_slack(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.sampled_from(SIMPLE_ATOMS), min_size=1, max_size=24))
    return "".join(pieces)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(simple_slack())
def test_the_short_way_for_simple_slack_markup_is_the_full_reading(text: str) -> None:
    text = _normalise_newlines(text)
    for names in (NAMES, HostileDirectory()):
        simple = _convert_simple_slack(text, names)
        if simple is not None:
            assert simple == _convert_read(text, "slack", names), text


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab @#<>|:*_`~&;!.\n\t+-/0U1C\u00a0😀"), max_size=40))
def test_the_short_way_on_any_characters_is_the_full_reading(text: str) -> None:
    text = _normalise_newlines(text)
    simple = _convert_simple_slack(text, HostileDirectory())
    if simple is not None:
        assert simple == _convert_read(text, "slack", HostileDirectory()), text


REAL_SLACK = [
    "Thanks <@U012AB>, merged :tada:",
    "<@U012AB> can you review <https://github.com/acme/api/pull/12|#12>?",
    "Deploy is done, see <https://grafana.acme.example/d/latency> and <#C0123|general> :rocket:",
    "Standup moved to *friday* _morning_, notes in `notes.md`.",
    "ok :+1::skin-tone-2:\nwill do after lunch :coffee:",
    "In <#C0123> please read <https://docs.acme.example/plan|the plan> before the sync!",
    "Ping <@UNKNOWN|ben> about the *release notes*",
    "Plan for <#C0123|general> today\n• ship `api.py` *today*\n• ping <@U012AB>\nThanks!",
]


@pytest.mark.parametrize("text", REAL_SLACK)
def test_common_slack_messages_take_the_short_way(text: str) -> None:
    simple = _convert_simple_slack(text, NAMES)
    assert simple is not None
    assert simple == _convert_read(text, "slack", NAMES)


def test_the_short_way_leaves_what_it_cannot_write_to_the_full_reading() -> None:
    for text in ["<@U1> hi", "<#C1> hi", "see!<https://x.test|x>", "a:tada:", ":partyparrot:", "*a*b", "`x``y`",
                 "> quoted <@U012AB>", "  • item :tada:", "- item :tada:", "a &amp; b :tada:", "x <@U3>", "<https://x.test|a_b>"]:
        assert _convert_simple_slack(text, HostileDirectory()) is None, text

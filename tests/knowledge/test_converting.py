"""Converting documents to clean Markdown: Markdown, HTML (boilerplate removed), reStructuredText and text."""

from __future__ import annotations

import codecs

import pytest

from convener.knowledge.converting import Converted, Unconvertible, convert


def converted(path: str, data: bytes | str) -> Converted:
    """``convert``, checking the promises every result keeps."""
    result = convert(path, data.encode() if isinstance(data, str) else data)
    assert result.title
    assert result.title == result.title.strip()
    assert len(result.description) <= 300
    assert result.markdown.endswith("\n") and not result.markdown.endswith("\n\n")
    assert "\n\n\n" not in result.markdown
    assert all(line == line.rstrip() for line in result.markdown.split("\n"))
    assert "\r" not in result.markdown
    return result


def refused(path: str, data: bytes) -> str:
    with pytest.raises(Unconvertible) as caught:
        convert(path, data)
    return caught.value.reason


# Markdown and plain text


def test_markdown_front_matter_gives_title_and_description_and_is_removed() -> None:
    result = converted("guide/install.md", (
        "---\ntitle: Installing Quill\ndescription: How to install the server.\ntags: [setup]\n---\n"
        "# Install\n\nRun   the installer.  \n\n\n\nThen start it.\n"
    ))

    assert result.title == "Installing Quill"
    assert result.description == "How to install the server."
    assert result.markdown == "# Install\n\nRun   the installer.\n\nThen start it.\n"


def test_markdown_without_front_matter_takes_its_first_heading_and_sentence() -> None:
    result = converted("guide/install.md", (
        "<!-- generated -->\n# Installing *Quill*\n\n![logo](logo.png)\n\n"
        "Quill runs on [Linux](https://kernel.org) and `macOS`, e.g. on a laptop. It needs 2 GB.\n"
    ))

    assert result.title == "Installing Quill"
    assert result.description == "Quill runs on Linux and macOS, e.g. on a laptop."


def test_markdown_setext_heading_and_code_fences_are_understood() -> None:
    result = converted("a.md", "```sh\n# not a heading\n```\n\nReal title\n==========\n\nBody.\n")

    assert result.title == "Real title"
    assert result.description == "Body."


def test_markdown_without_heading_is_titled_by_its_file_name() -> None:
    assert converted("docs/getting-started.md", "Just text.\n").title == "Getting started"
    assert converted("docs/api_reference.markdown", "Just text.\n").title == "Api reference"


def test_junk_front_matter_is_ignored() -> None:
    result = converted("notes.md", "---\n: [unclosed\n---\nBody text.\n")

    assert result.title == "Notes"
    assert "Body text." in result.markdown


def test_leading_thematic_break_is_not_front_matter() -> None:
    result = converted("notes.md", "---\nJust a paragraph\n---\nMore.\n")

    assert "Just a paragraph" in result.markdown


def test_plain_text_is_kept_as_is_and_titled_by_its_file_name() -> None:
    result = converted("notes/release-notes.txt", "# not a title\r\nLine one.\r\n\r\n\r\nLine two.   \r\n")

    assert result.title == "Release notes"
    assert result.markdown == "# not a title\nLine one.\n\nLine two.\n"


def test_text_is_normalised_to_nfc() -> None:
    assert converted("a.txt", "cafe\u0301\n").markdown == "caf\u00e9\n"


def test_unsupported_suffix_is_unconvertible() -> None:
    assert refused("logo.png", b"text") == "unsupported file type"


# Decoding


def test_mis_encoded_markdown_is_refused_with_the_offset() -> None:
    reason = refused("a.md", "# Café au lait\n".encode("latin-1"))

    assert reason == "not valid UTF-8 (byte 0xE9 at offset 5)"


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_byte_order_marks_are_honoured(codec: str) -> None:
    boms = {"utf-16-be": codecs.BOM_UTF16_BE}
    data = boms.get(codec, b"") + "# Grüße\n\nHallo Welt.\n".encode(codec)

    result = converted("greeting.md", data)

    assert result.title == "Grüße"
    assert result.markdown == "# Grüße\n\nHallo Welt.\n"


@pytest.mark.parametrize("data", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
    b"text with a NUL\x00 inside",
    bytes(range(1, 9)) * 100,
])
def test_binary_files_are_refused(data: bytes) -> None:
    assert refused("image.md", data) == "binary file"


@pytest.mark.parametrize("data", [b"", b"  \n\n\t\n"])
def test_empty_documents_are_refused(data: bytes) -> None:
    assert refused("empty.md", data) == "empty document"
    assert refused("empty.html", data) == "empty document"


def test_html_meta_charset_is_honoured() -> None:
    page = ('<html><head><meta charset="ISO-8859-1"><title>Café</title></head>'
            "<body><p>Crème brûlée, “quoted”.</p></body></html>").encode("cp1252")

    result = converted("menu.html", page)

    assert result.title == "Café"
    assert result.markdown == "Crème brûlée, “quoted”.\n"


def test_html_http_equiv_charset_is_honoured() -> None:
    page = ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r"></head>'
            "<body><p>Привет</p></body></html>").encode("koi8-r")

    assert converted("ru.htm", page).markdown == "Привет\n"


def test_html_without_a_known_charset_is_strict_utf8() -> None:
    page = '<html><head><meta charset="no-such-codec"></head><body><p>Café</p></body></html>'.encode("latin-1")

    assert refused("page.html", page).startswith("not valid UTF-8 (byte 0xE9 at offset ")


def test_xhtml_with_xml_declaration() -> None:
    page = ('<?xml version="1.0" encoding="iso-8859-15"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
            "<head><title>Prices</title></head><body><p>Ten €.</p></body></html>").encode("iso-8859-15")

    result = converted("prices.xhtml", page)

    assert (result.title, result.markdown) == ("Prices", "Ten €.\n")


# HTML

BOILERPLATE_PAGE = """<!DOCTYPE html>
<html><head><title>Configuring Quill</title>
<meta name="description" content="Settings of the Quill server.">
<script>var tracking = "analytics-beacon";</script><style>.x { color: red }</style></head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header"><div class="logo">QuillCorp banner</div></header>
<nav><a href="/">Home</a> <a href="/pricing">Pricing menu</a></nav>
<div id="sidebar-left"><ul><li><a href="/other">Sidebar link</a></li></ul></div>
<aside>Related reading aside</aside>
<div role="search"><input type="text" placeholder="Search box"></div>
<main>
<h1>Configuring Quill</h1>
<p>Quill reads <code>/etc/quill.toml</code> at start. See <a href="/docs/start.html">getting started</a>, \
<a href="#log-level">the log level</a> or <a href="javascript:alert(1)">this script</a>.</p>
<h2 class="header-level-2">Log level</h2>
<p><img src="diagram.png" alt="Diagram of the settings"> The <em>log_level</em> setting, e.g. debug.</p>
<pre><code class="language-toml">log_level = "debug"
</code></pre>
<table><thead><tr><th>Setting</th><th>Default</th></tr></thead>
<tbody><tr><td>quota_gb</td><td>50</td></tr></tbody></table>
<div hidden>Hidden panel</div><span aria-hidden="true">Icon glyph</span>
<noscript>Enable JavaScript</noscript><form><button>Subscribe button</button></form>
</main>
<footer>Copyright Quill Corp.</footer>
<div class="cookie-consent">We use cookies</div>
</body></html>
"""


def test_html_keeps_only_the_main_content() -> None:
    result = converted("configuration.html", BOILERPLATE_PAGE)

    assert result.title == "Configuring Quill"
    assert result.description == "Settings of the Quill server."
    for boilerplate in ("analytics-beacon", "color: red", "Skip to content", "QuillCorp banner", "Pricing menu",
                        "Sidebar link", "Related reading", "Search box", "Hidden panel", "Icon glyph",
                        "Enable JavaScript", "Subscribe", "Copyright", "cookies", "diagram.png"):
        assert boilerplate not in result.markdown, boilerplate
    assert result.markdown.startswith("# Configuring Quill\n\nQuill reads `/etc/quill.toml` at start.")
    assert "[getting started](/docs/start.html)" in result.markdown
    assert ", the log level or this script." in result.markdown
    assert "## Log level\n" in result.markdown
    assert "Diagram of the settings The *log_level* setting, e.g. debug." in result.markdown
    assert '```toml\nlog_level = "debug"\n```' in result.markdown
    assert "| Setting | Default |\n| --- | --- |\n| quota_gb | 50 |" in result.markdown


SPHINX_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8" /><title>Backups &#8212; Quill 2.0 documentation</title></head>
<body>
<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3>
<ul><li><a href="genindex.html">General Index</a></li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
<section id="backups">
<h1>Backups<a class="headerlink" href="#backups" title="Link to this heading">¶</a></h1>
<p>Quill keeps its data in one folder. Copy it.</p>
<section id="footer-settings">
<h2>Footer settings<a class="headerlink" href="#footer-settings" title="Link to this heading">¶</a></h2>
<p>Use <code class="docutils literal notranslate"><span class="pre">quill</span> <span class="pre">backup</span></code>.</p>
<div class="highlight-python notranslate"><div class="highlight"><pre><span></span><span class="kn">import</span> <span class="nn">quill</span>
<span class="n">quill</span><span class="o">.</span><span class="n">backup</span><span class="p">()</span>
</pre></div></div>
<table class="highlighttable"><tr><td class="linenos"><div class="linenodiv"><pre>1
2</pre></div></td><td class="code"><div class="highlight"><pre><span></span>echo one
echo two
</pre></div></td></tr></table>
</section></section>
</div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="main navigation"><div class="sphinxsidebarwrapper">
<h3><a href="index.html">Table of Contents</a></h3><div id="searchbox" role="search">Quick search</div>
</div></div></div>
<div class="footer">&#169;2024, Quill Corp. Created using Sphinx.</div>
</body></html>
"""


def test_sphinx_page_loses_sidebar_permalinks_and_footer() -> None:
    result = converted("backups.html", SPHINX_PAGE)

    assert result.title == "Backups"
    assert result.description == "Quill keeps its data in one folder."
    assert "¶" not in result.markdown
    for boilerplate in ("General Index", "Navigation", "Table of Contents", "Quick search", "Created using Sphinx"):
        assert boilerplate not in result.markdown, boilerplate
    assert result.markdown.startswith("# Backups\n\nQuill keeps its data in one folder. Copy it.\n\n## Footer settings\n")
    assert "Use `quill backup`." in result.markdown
    assert "```python\nimport quill\nquill.backup()\n```" in result.markdown
    assert "```\necho one\necho two\n```" in result.markdown


def test_html_title_falls_back_to_the_heading_then_the_file_name() -> None:
    assert converted("a.html", "<body><h1>Heading</h1><p>x</p></body>").title == "Heading"
    assert converted("some-page.html", "<body><p>x</p></body>").title == "Some page"
    assert converted("a.html", "<title>Own title</title><body><h1>Other</h1></body>").title == "Own title"


def test_html_with_only_boilerplate_is_an_empty_document() -> None:
    page = b"<html><body><nav>Home About</nav><footer>Copyright</footer><script>x()</script></body></html>"

    assert refused("nav.html", page) == "empty document"


def test_html_without_tags_or_resembling_a_file_name_converts_without_warnings() -> None:
    assert converted("a.html", "notes.txt").markdown == "notes.txt\n"
    assert converted("a.html", "https://example.com/").markdown == "https://example.com/\n"


def test_deeply_nested_html_still_converts() -> None:
    page = "<div>" * 5000 + "deep text" + "</div>" * 5000

    assert converted("deep.html", page).markdown == "deep text\n"


def test_long_ordered_list_is_numbered() -> None:
    page = '<ol start="3">' + "<li>item</li>" * 3000 + "</ol>"

    lines = converted("list.html", page).markdown.splitlines()

    assert lines[0] == "3. item" and lines[-1] == "3002. item"


def test_large_html_page_converts() -> None:
    section = ('<section id="s{0}"><h2>Section {0}<a class="headerlink" href="#s{0}">¶</a></h2>'
               f'<p>Paragraph {{0}} with <a href="p{{0}}.html">a link</a> and <code>code_{{0}}</code>. {"Words " * 40}</p>'
               '<div class="highlight-python"><pre>x = {0}\nprint(x)\n</pre></div>'
               "<ul><li>one</li><li>two</li></ul><table><tr><th>a</th></tr><tr><td>{0}</td></tr></table></section>")
    page = "<html><body><main><h1>Big</h1>" + "".join(section.format(index) for index in range(2000)) + "</main></body></html>"
    assert len(page) > 1_000_000

    result = converted("big.html", page)

    assert result.markdown.count("```python") == 2000
    assert "## Section 1999" in result.markdown


# reStructuredText

RST = """\
===============
Backing up data
===============

Quill keeps *all* data in one folder, so a backup is a copy. See :ref:`Restoring <restore>` and :func:`~quill.api.backup`.

Scheduling
==========

Run it nightly:

.. code-block:: python

   import quill
   quill.backup()

.. note:: Backups are not encrypted.

.. raw:: html

   <script>alert("raw html")</script>

.. include:: /etc/passwd

.. raw:: html
   :file: /etc/passwd

.. csv-table:: Users
   :file: /etc/passwd

Restoring
=========

Copy the folder back.
"""


def test_rst_converts_with_title_sections_and_code() -> None:
    result = converted("backups.rst", RST)

    assert result.title == "Backing up data"
    assert result.description == "Quill keeps all data in one folder, so a backup is a copy."
    assert result.markdown.startswith("# Backing up data\n\nQuill keeps *all* data in one folder")
    assert "See Restoring and `backup`." in result.markdown
    assert "## Scheduling\n" in result.markdown and "## Restoring\n" in result.markdown
    assert "```python\nimport quill\nquill.backup()\n```" in result.markdown
    assert "Backups are not encrypted." in result.markdown


def test_rst_raw_and_file_directives_are_not_honoured() -> None:
    markdown = converted("backups.rst", RST).markdown

    for leaked in ("root:", "/bin/", "<script>", "raw html", "alert", "passwd", "System Message", "ERROR"):
        assert leaked not in markdown, leaked


def test_malformed_rst_still_converts_without_system_messages() -> None:
    source = (
        "Title\n===\n\nText with `unclosed literal and *emphasis.\n\n.. unknown-directive:: arg\n\n   body\n\n"
        "* item\n continued wrongly\n\n+--------+\n| broken table\n\n:undefined-role:`x` trailing words.\n"
    )

    result = converted("broken.rst", source)

    assert "unclosed literal" in result.markdown and "trailing words" in result.markdown
    for leaked in ("System Message", "ERROR/", "WARNING/", "Unknown directive", "docutils"):
        assert leaked not in result.markdown, leaked


def test_rst_without_title_is_titled_by_its_file_name() -> None:
    assert converted("how-to.rest", "Just a paragraph.\n").title == "How to"


def test_a_heading_block_just_before_the_content_container_is_kept() -> None:
    page = (b'<html><head><title>git-stash(1)</title></head><body><div id="header"><h1>git-stash(1) Manual Page</h1>'
            b'<h2>NAME</h2><p>git-stash - Stash the changes in a dirty working directory away</p></div>'
            b'<div id="content"><h2>DESCRIPTION</h2><p>Use git stash when you want a clean working directory.</p>'
            b'</div><div id="footer">Last updated 2023-01-01</div></body></html>')

    converted = convert("git-stash.html", page)

    assert converted.markdown.index("Stash the changes") < converted.markdown.index("DESCRIPTION")
    assert "Last updated" not in converted.markdown

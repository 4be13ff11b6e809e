"""A small documentation set whose every answer is known, and services allowed to ingest it.

``docs/`` holds one file of each format: Markdown with front matter (install), HTML with navigation and
footer (configuration), reStructuredText (backups) and plain text (faq), plus an image the ingest must skip.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from convener.config import Settings
from convener.server import mcp_servers
from convener.services import Services

INSTALL_MD = """---
title: Installing Quill
description: How to install the Quill server.
---
# Installing Quill

Quill runs on Linux and macOS.

## Linux

Install the package with `apt install quill-server`. The service starts on port 7410 by default.

## macOS

Use Homebrew: `brew install quill`. Homebrew keeps Quill up to date with `brew upgrade`.
"""

CONFIGURATION_HTML = """<!DOCTYPE html>
<html><head><title>Configuring Quill</title><meta name="description" content="Settings of the Quill server.">
<script>var tracking = "analytics-beacon";</script><style>.x { color: red }</style></head>
<body>
<nav><a href="/">Home</a> <a href="/pricing">Pricing menu</a></nav>
<main>
<h1>Configuring Quill</h1>
<p>Quill reads its settings from <code>/etc/quill/quill.toml</code> when it starts.</p>
<h2>Log level</h2>
<p>The <code>log_level</code> setting controls how much Quill writes to its log. Set it to debug to see every request.</p>
<h2>Storage quota</h2>
<p>The <code>quota_gb</code> setting limits how many gigabytes each workspace may store. The default quota is 50 gigabytes.</p>
</main>
<footer>Copyright Quill Corp. Cookie preferences.</footer>
</body></html>
"""

BACKUPS_RST = """Backing up Quill
================

Quill keeps all data in one folder, so a backup is a copy of that folder.

Scheduling backups
------------------

Run ``quill backup --to /mnt/backups`` from cron every night. The backup command pauses writes for a few
seconds while it copies the write-ahead log.

Restoring
---------

Stop the server, then run ``quill restore /mnt/backups/latest`` to restore the newest backup.
"""

FAQ_TXT = """Frequently asked questions

Why does Quill refuse connections after an upgrade? The upgrade rotates the TLS certificate, so clients must trust the new certificate authority.

Can two Quill servers share one data folder? No, each server locks its data folder exclusively.
"""

CORPUS = {
    "install.md": INSTALL_MD,
    "admin/configuration.html": CONFIGURATION_HTML,
    "admin/backups.rst": BACKUPS_RST,
    "faq.txt": FAQ_TXT,
}
BASE_URL = "https://docs.quill.example/"


def name_of(path: str) -> str:
    return "documents/docs.quill.example/" + path


def write_corpus(folder: Path) -> Path:
    for path, text in CORPUS.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    return folder


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "roots" / "docs")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, allow_anonymous=False,
                    knowledge_roots=(tmp_path / "roots",), knowledge_embeddings="off")


@pytest.fixture
async def client(services: Services) -> AsyncIterator[Client]:
    async with Client(mcp_servers(services)["/knowledge/mcp"]) as connected:
        yield connected

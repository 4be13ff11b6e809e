"""The demo workspace (with the console tests' own conversations) and keys of three kinds of caller."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from convener.auth.keys import ApiKeys
from convener.services import Services
from tests.conftest import BACKENDS, demo_services
from tests.console.browser import chromium
from tests.console.recorded import hostile_conversation, record


@dataclass(frozen=True)
class Keys:
    admin: str
    """users/alice, every scope."""
    chat_only: str
    """users/ben, the chat service alone."""


@pytest.fixture(params=BACKENDS)
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    with demo_services(request.param, tmp_path / "demo") as services:
        record(services, hostile_conversation())
        yield services


@pytest.fixture
def keys(workspace: Services) -> Keys:
    issued = ApiKeys(workspace.database)
    return Keys(admin=issued.create("users/alice")[1], chat_only=issued.create("users/ben", ("chat",))[1])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for a module's browser tests."""
    with chromium() as driver:
        yield driver

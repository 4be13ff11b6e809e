"""Fixtures of the llm tests: the scripted OpenAI-compatible server (see ``tests.llm.fake_openai``)."""

from __future__ import annotations

from tests.llm.fake_openai import fake_openai, fake_openai_server

__all__ = ["fake_openai", "fake_openai_server"]

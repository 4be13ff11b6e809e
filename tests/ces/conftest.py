"""Fixtures of the ces tests: the scripted OpenAI-compatible server, for llm agents."""

from __future__ import annotations

from tests.llm.fake_openai import fake_openai, fake_openai_server

__all__ = ["fake_openai", "fake_openai_server"]

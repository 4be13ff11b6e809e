"""Model providers behind one small synchronous interface (:class:`ModelProvider`).

``provider_from_settings`` builds the configured one: any OpenAI-compatible chat.completions endpoint
(OpenAI, Ollama, vLLM, llama.cpp) or Gemini (optional extra ``convener[gemini]``). Providers raise only
:mod:`convener.api.errors` errors.
"""

from __future__ import annotations

from convener.llm.base import (
    UNPARSED_ARGUMENTS,
    ChatMessage,
    Completion,
    ModelProvider,
    Role,
    ToolDeclaration,
    ToolInvocation,
    Usage,
    close_provider,
)
from convener.llm.gemini import GeminiProvider
from convener.llm.openai_compatible import OpenAICompatibleProvider
from convener.llm.providers import PROVIDERS, provider_from_settings

__all__ = [
    "PROVIDERS",
    "UNPARSED_ARGUMENTS",
    "ChatMessage",
    "Completion",
    "GeminiProvider",
    "ModelProvider",
    "OpenAICompatibleProvider",
    "Role",
    "ToolDeclaration",
    "ToolInvocation",
    "Usage",
    "close_provider",
    "provider_from_settings",
]

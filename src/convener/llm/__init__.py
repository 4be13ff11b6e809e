"""Model providers behind one small synchronous interface (:class:`ModelProvider`).

``provider_from_settings`` builds the configured one: any OpenAI-compatible chat.completions endpoint
(OpenAI, Ollama, vLLM, llama.cpp) or Gemini (optional extra ``convener[gemini]``). Providers raise only
:mod:`convener.api.errors` errors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from convener.llm.gemini import GeminiProvider
    from convener.llm.openai_compatible import OpenAICompatibleProvider
    from convener.llm.providers import PROVIDERS, provider_from_settings

# The providers import their clients (openai's alone takes about half a second): a module that needs only the
# interface above, as judges and services do, does not pay for them until a provider is made.
_PROVIDER_MODULES = {
    "GeminiProvider": "convener.llm.gemini",
    "OpenAICompatibleProvider": "convener.llm.openai_compatible",
    "PROVIDERS": "convener.llm.providers",
    "provider_from_settings": "convener.llm.providers",
}


def __getattr__(name: str) -> object:
    module = _PROVIDER_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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

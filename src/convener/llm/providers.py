"""Which provider the settings ask for, built from them.

A registry of factories (name → function of the settings) rather than a chain of ifs, so that adding a
provider is one function and one entry, and the names accepted are listed in one place.
"""

from __future__ import annotations

from collections.abc import Callable

from convener.api.errors import FailedPrecondition
from convener.config import Settings
from convener.llm.base import ModelProvider
from convener.llm.gemini import DEFAULT_MODEL as GEMINI_DEFAULT_MODEL
from convener.llm.gemini import GeminiProvider
from convener.llm.openai_compatible import OpenAICompatibleProvider

ProviderFactory = Callable[[Settings], ModelProvider]


def _api_key(settings: Settings) -> str | None:
    return settings.llm_api_key.get_secret_value() if settings.llm_api_key is not None else None


def _openai(settings: Settings) -> ModelProvider:
    return OpenAICompatibleProvider(
        model=settings.llm_model,
        base_url=settings.llm_base_url,
        api_key=_api_key(settings),
        timeout_seconds=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
    )


def _gemini(settings: Settings) -> ModelProvider:
    # llm_model's default names an OpenAI model; unless it was set, a Gemini model is the sensible default.
    model = settings.llm_model if "llm_model" in settings.model_fields_set else GEMINI_DEFAULT_MODEL
    return GeminiProvider(
        model=model,
        api_key=_api_key(settings),
        base_url=settings.llm_base_url,
        timeout_seconds=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
    )


PROVIDERS: dict[str, ProviderFactory] = {"openai": _openai, "gemini": _gemini}
"""Provider name (``Settings.llm_provider``) → factory. ``"none"`` is deliberately absent: no provider."""


def provider_from_settings(settings: Settings) -> ModelProvider | None:
    """The configured provider, or None when ``llm_provider`` is ``"none"`` (offline: no llm agents).

    The caller owns the provider: release it with :func:`convener.llm.close_provider` when done.
    """
    if settings.llm_provider == "none":
        return None
    factory = PROVIDERS.get(settings.llm_provider)
    if factory is None:
        known = ", ".join(["none", *PROVIDERS])
        raise FailedPrecondition(f"unknown llm provider {settings.llm_provider!r}; known: {known}")
    return factory(settings)

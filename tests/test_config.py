"""Settings from the environment and from a TOML file."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from convener.config import Settings


def test_lists_come_comma_separated_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVENER_SERVICES", "ces")
    monkeypatch.setenv("CONVENER_PYTHON_CALLABLES", "mycompany.agents:triage, mycompany.tools:lookup")
    monkeypatch.setenv("CONVENER_MCP_STDIO_COMMANDS", "/usr/bin/npx")
    settings = Settings()
    assert settings.services == ("ces",)
    assert settings.python_callables == ("mycompany.agents:triage", "mycompany.tools:lookup")
    assert settings.mcp_stdio_commands == ("/usr/bin/npx",)


def test_model_provider_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "convener.toml"
    config.write_text('llm_provider = "openai"\nllm_base_url = "http://127.0.0.1:11434/v1"\n'
                      'python_callables = ["mine:tool"]\nurl_hosts = ["127.0.0.1"]\n')
    monkeypatch.setenv("CONVENER_CONFIG", str(config))
    monkeypatch.setenv("CONVENER_LLM_API_KEY", "sk-secret")
    settings = Settings()
    assert settings.llm_provider == "openai" and settings.llm_base_url == "http://127.0.0.1:11434/v1"
    assert settings.python_callables == ("mine:tool",) and settings.url_hosts == ("127.0.0.1",)
    assert settings.llm_api_key is not None and "sk-secret" not in repr(settings)
    monkeypatch.setenv("CONVENER_LLM_PROVIDER", "skynet")
    with pytest.raises(ValidationError):
        Settings()

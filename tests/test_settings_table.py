"""README's configuration table is the one ``convener.settings_table`` makes from ``Settings``, and the TOML
example beside it holds only keys the settings have."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from convener import settings_table
from convener.config import Settings
from convener.settings_table import BEGIN, END, rows, table, with_table

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_table_is_up_to_date() -> None:
    text = README.read_text(encoding="utf-8")

    assert with_table(text) == text, "run: python -m convener.settings_table README.md"


def test_every_setting_is_a_row_with_its_env_var_and_a_description() -> None:
    found = {row.key: row for row in rows()}

    assert list(found) == list(Settings.model_fields)
    for name, row in found.items():
        assert row.env == f"CONVENER_{name.upper()}"
        assert row.description and row.default
    assert found["host"].flags == "`--host` (`serve`)"
    assert found["data_dir"].flags == "`--data-dir`", "every command takes it"
    assert found["allow_anonymous"].flags == "`--allow-anonymous`, `--require-key` (`serve`)"
    assert found["llm_model"].flags == ""
    assert found["port"].default == "`8080`" and found["port"].description.endswith("From 0 to 65535.")
    assert found["services"].default == "`ces,chat,knowledge,analytics`"
    assert found["transport"].description.endswith("One of `http`, `stdio`.")
    assert found["url_hosts"].default == "none" and "Comma-separated" in found["url_hosts"].description
    assert found["database_url"].default == "unset"
    assert found["data_dir"].default.startswith("The platform's user data directory")


def test_a_new_setting_shows_in_the_table_and_one_without_a_description_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Wider(Settings):
        frobnicate: int = 3

    monkeypatch.setattr(settings_table, "Settings", Wider)

    with pytest.raises(ValueError, match="Settings.frobnicate has no description"):
        table()


def test_with_table_replaces_only_what_is_between_the_markers() -> None:
    text = f"before\n{BEGIN}\nold table\n{END}\nafter\n"

    replaced = with_table(text)

    assert replaced.startswith(f"before\n{BEGIN}\n| key |") and replaced.endswith(f"\n{END}\nafter\n")
    assert "old table" not in replaced
    with pytest.raises(ValueError, match="markers"):
        with_table("no markers")


def test_the_check_mode_fails_on_a_stale_file_and_the_write_mode_fixes_it(tmp_path: Path) -> None:
    stale = tmp_path / "README.md"
    stale.write_text(f"{BEGIN}\n| stale |\n{END}\n", encoding="utf-8")

    assert settings_table.main(["--check", str(stale)]) == 1
    assert settings_table.main([str(stale)]) == 0
    assert settings_table.main(["--check", str(stale)]) == 0


def test_the_readme_toml_example_names_settings_that_exist() -> None:
    examples = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert examples
    for example in examples:
        values = tomllib.loads(example)
        assert set(values) <= set(Settings.model_fields)
        Settings(**values)

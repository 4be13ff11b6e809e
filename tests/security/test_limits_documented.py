"""No limit goes undocumented: every entry of ``convener.outside.limits.LIMITS`` is a row of docs/limits.md with
its value, unit and setting, and every row there is a declared limit.

The page is read generically: any Markdown table whose header starts ``name | limit | unit``, under any
``## Area`` heading, so areas can be added without touching this test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import convener.services  # noqa: F401 - imports every module, so every limit is declared
from convener.outside.limits import LIMITS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "limits.md"
NO_SETTING = {"", "—", "-", "none"}


@dataclass(frozen=True)
class Row:
    name: str
    value: float
    unit: str
    setting: str | None
    line: int


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _number(text: str) -> float:
    cleaned = re.sub(r"[,_\s\u202f]", "", text)
    if not re.fullmatch(r"-?\d+(\.\d+)?", cleaned):
        raise AssertionError(f"{text!r} is not a number")
    return float(cleaned)


def documented_rows(text: str) -> list[Row]:
    rows: list[Row] = []
    in_table = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.lstrip().startswith("|"):
            in_table = False
            continue
        cells = _cells(line)
        if [cell.lower() for cell in cells[:3]] == ["name", "limit", "unit"]:
            in_table = True
            continue
        if not in_table or set("".join(cells)) <= set("-: "):
            continue
        assert len(cells) >= 5, f"docs/limits.md line {number}: a row needs name | limit | unit | what | setting"
        setting = cells[4].strip("`")
        rows.append(Row(cells[0].strip("`"), _number(cells[1]), cells[2],
                        None if setting.lower() in NO_SETTING else setting, number))
    return rows


def test_every_limit_is_documented_with_its_value() -> None:
    rows = documented_rows(PAGE.read_text(encoding="utf-8"))
    by_name = {row.name: row for row in rows}
    assert len(by_name) == len(rows), "a limit is documented twice"
    missing = sorted(set(LIMITS) - set(by_name))
    assert not missing, f"limits missing from docs/limits.md: {', '.join(missing)}"
    for name, declared in LIMITS.items():
        row = by_name[name]
        assert row.value == declared.value, f"line {row.line}: {name} is {declared.value}, documented as {row.value}"
        assert row.unit == declared.unit, f"line {row.line}: {name} is in {declared.unit}, documented in {row.unit}"
        assert row.setting == declared.setting, f"line {row.line}: {name}'s setting is {declared.setting}"


def test_every_documented_limit_is_declared() -> None:
    stale = sorted(row.name for row in documented_rows(PAGE.read_text(encoding="utf-8")) if row.name not in LIMITS)
    assert not stale, f"docs/limits.md lists limits nothing declares: {', '.join(stale)}"


def test_the_reader_sees_rows_and_values_as_written() -> None:
    page = ("# Limits\n\n## Area\n\n| name | limit | unit | what it bounds | setting |\n|---|---:|---|---|---|\n"
            "| `a.b` | 8,388,608 | bytes | things | `CONVENER_A_B` |\n| `c` | 0.5 | seconds | time | — |\n\n"
            "| other | table |\n|---|---|\n| x | y |\n")
    assert documented_rows(page) == [Row("a.b", 8_388_608, "bytes", "CONVENER_A_B", 7), Row("c", 0.5, "seconds", None, 8)]

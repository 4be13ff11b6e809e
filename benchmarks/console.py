"""Benchmark of the console's conversation page: a conversation of 500 turns, server side.

Run from the repository root::

    .venv/bin/python benchmarks/console.py [--turns 500] [--repeat 15]

Records one conversation of ``--turns`` turns (each a question, a tool call and its response, an answer and a
span tree of four spans) in a fresh SQLite store, then times, each the median of ``--repeat`` runs:

* floor   - ``get_conversation``'s handler, as the MCP tool runs it (read and validate the conversation);
* page    - ``GET /console/<conversation>`` through Starlette's test client: the same tool call through the
            console's access check, the transcript and waterfall built, the template rendered, the HTML sent.

``page/floor`` is what the console adds over reading the conversation at all. The issue's bar is a page in
under a second server side; the ratio is what to compare across machines. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from starlette.testclient import TestClient  # noqa: E402

from convener.auth.caller import LOCAL_USER  # noqa: E402
from convener.auth.keys import ApiKeys  # noqa: E402
from convener.ces.requests import GetConversationRequest  # noqa: E402
from convener.config import Settings  # noqa: E402
from convener.console.present import TURNS_PER_PAGE  # noqa: E402
from convener.server import build_app  # noqa: E402
from convener.services import Services  # noqa: E402
from tests.console.recorded import APP, long_conversation, record  # noqa: E402


def median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm: templates compiled, caches filled
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=15)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        services = Services.open(Settings(data_dir=Path(folder), allow_anonymous=False))
        try:
            record(services, long_conversation("long", arguments.turns), long_conversation("short", 20))
            key = ApiKeys(services.database).create("users/bench")[1]
            client = TestClient(build_app(services), base_url="http://127.0.0.1:8080", client=("127.0.0.1", 5000),
                                headers={"authorization": f"Bearer {key}"})
            print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {arguments.repeat} runs each, median")
            print(f"{'turns':>6} {'floor ms':>9} {'page ms':>9} {'page/floor':>11} {'HTML KB':>8}")
            for conversation, turns in (("short", 20), ("long", arguments.turns)):
                name = f"{APP}/conversations/{conversation}"
                handler = services.conversations.get
                floor = median_ms(lambda: handler(GetConversationRequest(name=name), LOCAL_USER), arguments.repeat)
                page = client.get(f"/console/{name}")
                assert page.status_code == 200, page.text[:500]
                assert page.text.count('class="turn"') == min(turns, TURNS_PER_PAGE)
                rendered = median_ms(lambda: client.get(f"/console/{name}"), arguments.repeat)
                print(f"{turns:>6} {floor:>9.1f} {rendered:>9.1f} {rendered / floor:>11.2f} {len(page.content) / 1024:>8.0f}")
        finally:
            services.close()


if __name__ == "__main__":
    main()

"""Benchmark of changelogs: what recording costs a change, and whether list_changelogs pages stay flat.

Run from the repository root::

    .venv/bin/python benchmarks/changelogs.py [--updates 200] [--entries 10000] [--repeat 20]
        [--backend sqlite|postgresql|both] [--postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test]

* ``update_agent`` through the service, ``--updates`` times with the app's changelog recorded and as many with
  recording turned off (a recorder that writes nothing), interleaved in rounds so that both see the same machine
  load: ``recorded / not recorded`` is what a change pays for its entry.
* ``list_changelogs`` pages of 50 on an app with ``--entries`` entries (bulk inserted; that time is not counted):
  the first page and one 90% down the list, each the median of ``--repeat`` runs. With the keyset
  (sequence number, indexed) ``deep / first`` stays near 1 whatever ``--entries`` is.

Nothing is asserted about timings.
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

from backends import add_arguments, each_backend, median_ms
from sqlalchemy import Connection, insert, select, update

from convener.auth.caller import LOCAL_USER
from convener.ces.changelogs import Change, ChangeRecorder, ChangelogService, ListChangelogsRequest
from convener.ces.definitions import Agent
from convener.ces.models import App
from convener.ces.names import AppName, ChangelogName
from convener.ces.requests import CreateAppRequest
from convener.api.protojson import Timestamp
from convener.ces.tables import apps, changelogs
from convener.config import Settings
from convener.services import Services

APP = AppName("bench", "global", "changes")
BIG = AppName("bench", "global", "history")
PAGE = 50
ROUNDS = 10


class NotRecorded(ChangeRecorder):
    """Recording turned off: the baseline a change is measured against."""

    def record(self, connection: Connection, app_pk: int, caller: Any, change: Change) -> ChangelogName:
        return ChangelogName(APP.project, APP.location, APP.app, "none")


def time_updates(services: Services, count: int) -> tuple[float, float]:
    """Seconds spent on ``count`` agent updates recorded, and on as many not recorded."""
    agents = services.runtime.agents
    recorded, baseline = services.apps.changes, NotRecorded()
    spent = {True: 0.0, False: 0.0}
    per_round = max(1, count // ROUNDS)
    for round_number in range(ROUNDS):
        for recording in (True, False) if round_number % 2 == 0 else (False, True):
            services.apps.changes = recorded if recording else baseline
            started = time.perf_counter()
            for index in range(per_round):
                agents.update(Agent(name=f"{APP}/agents/a", instruction=f"Say {round_number}.{index}."),
                              "instruction", LOCAL_USER)
            spent[recording] += time.perf_counter() - started
    services.apps.changes = recorded
    return spent[True], spent[False]


def fill(services: Services, entries: int) -> float:
    """Bulk insert ``entries`` changelogs into BIG; seconds taken."""
    started = time.perf_counter()
    with services.database.transaction() as connection:
        app_pk = services.apps.app_pk(connection, BIG)
        # After the app's own entries (its creation), numbered and timed on from them, as recording would.
        last = int(connection.scalar(select(apps.c.changelog_sequence).where(apps.c.id == app_pk)) or 0)
        now = Timestamp.now().to_micros()
        connection.execute(update(apps).where(apps.c.id == app_pk).values(changelog_sequence=last + entries,
                                                                           changelog_time_us=now + last + entries))
        rows = [{"app_pk": app_pk, "changelog_id": uuid.uuid4().hex[:16], "sequence_number": number,
                 "create_time_us": now + number, "author": "users/bench", "action": "Update",
                 "resource": f"{BIG}/agents/a{number % 50}", "resource_type": "Agent",
                 "body": {"displayName": f"A{number % 50}", "description": "Updated instruction",
                          "originalResource": {"instruction": "before"}, "newResource": {"instruction": "after"}}}
                for number in range(last + 1, last + entries + 1)]
        for start in range(0, len(rows), 1000):
            connection.execute(insert(changelogs), rows[start:start + 1000])
    return time.perf_counter() - started


def page_times(service: ChangelogService, entries: int, repeat: int) -> tuple[float, float]:
    """Median milliseconds of the first page and of the page 90% down (reached once by its token)."""
    first = ListChangelogsRequest(parent=str(BIG), page_size=PAGE)
    pages = 0
    target = max(1, int(entries * 0.9) // PAGE)
    token = service.list(first, LOCAL_USER).next_page_token
    while pages < target - 1 and token:
        token = service.list(ListChangelogsRequest(parent=str(BIG), page_size=PAGE, page_token=token),
                             LOCAL_USER).next_page_token
        pages += 1
    deep = ListChangelogsRequest(parent=str(BIG), page_size=PAGE, page_token=token)
    return (median_ms(lambda: service.list(first, LOCAL_USER), repeat),
            median_ms(lambda: service.list(deep, LOCAL_USER), repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    add_arguments(parser)
    args = parser.parse_args()
    for backend, url in each_backend(args):
        services = Services.open(Settings(database_url=url, worker=False))
        try:
            for app in (APP, BIG):
                services.apps.create(CreateAppRequest(parent=str(app.parent), app_id=app.app, app=App()), LOCAL_USER)
            services.runtime.agents.create(str(APP), "a", Agent(display_name="A", instruction="Hi."), LOCAL_USER)
            recorded, baseline = time_updates(services, args.updates)
            done = ROUNDS * max(1, args.updates // ROUNDS)
            print(f"{backend}: update_agent x{done}: recorded {recorded / done * 1000:.2f} ms, not recorded "
                  f"{baseline / done * 1000:.2f} ms; recorded / not recorded: {recorded / baseline:.2f}")
            filled = fill(services, args.entries)
            first, deep = page_times(services.changelogs, args.entries, args.repeat)
            print(f"{backend}: list_changelogs on {args.entries} entries (filled in {filled:.1f} s): first page "
                  f"{first:.2f} ms, deep page {deep:.2f} ms; deep page / first page: {deep / first:.2f}")
        finally:
            services.close()


if __name__ == "__main__":
    main()

"""Benchmark of chat: importing a generated Slack export, then list_messages on it, on SQLite and PostgreSQL.

Run from the repository root::

    .venv/bin/python benchmarks/chat.py [--messages 1000000] [--channels 50] [--users 200]
        [--backend sqlite|postgresql|both] [--postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test]
        [--repeat 20] [--keep-export DIR]

It writes a Slack workspace export to a temporary folder, one day file at a time (never the whole
workspace in memory), seeded so every run makes the same one: ``--users`` people with emails plus a
bot, ``--channels`` channels over two years, one of them (``#general``, every user a member) holding
20% of the ``--messages``. Messages are mrkdwn (mentions, links, channel links, bold, code, lists,
emoji); about 10% are thread replies, some carry reactions, files (hosted or Google Drive), edits,
shares of earlier messages, joins. Then, on each backend:

* import - ``ChatImporter(...).run(SlackExport(...))`` into a fresh store: messages/s. The baseline
           is the reader alone (``SlackExport`` iterated to the last message, nothing written),
           measured right before each backend's import: ``import ÷ read alone`` is the import's speed as a share of the reader's
           (1.0 would be storing for free; the target is at least 0.3).
* list   - ``ChatService.list_messages`` in #general, as one of its members, pageSize 50: page 1,
           page 2 and the page at 90% depth. Their tokens come from walking the pages once, from
           page 1 (the walk is timed too: pages/s). The baseline is ``raw``: the SELECT the service
           issues (same columns and join, same WHERE, ORDER BY and LIMIT 51) as text SQL on the same
           engine, for the same positions, with the keyset written in its index-friendly form,
           ``create_time_us <= :t AND (create_time_us < :t OR (create_time_us = :t AND row_id < :r))``:
           the leading bound lets ``ix_chat_messages_listing`` seek to the position.
* search - ``search_messages`` with one keyword (relevance order) vs its raw full-text SELECT
           (FTS5 ``MATCH`` + ``bm25`` on SQLite, ``tsvector @@ plainto_tsquery`` + ``ts_rank`` on PostgreSQL).

How to read the ratios: ``svc/raw`` is what the service adds above the database (caller and
membership checks, the page token, building the response models); it should be about the same for
every page and not grow with the size of the store. ``raw/page 1`` and ``svc/page 1`` compare a page
with page 1: with a keyset the database seeks to the position, so they stay near 1 whatever
``--messages`` is. If the service's grow with ``--messages`` (and the raw ones do not), the service's
query makes the database walk the rows before the position (SQLite: a scan of the index from the
newest row) or sort the rows after it (PostgreSQL: a bitmap scan and a sort, worst on page 2): compare
the EXPLAIN printed for both queries (SQLite ``EXPLAIN QUERY PLAN``, PostgreSQL ``EXPLAIN (ANALYZE,
BUFFERS)``). Medians of ``--repeat`` runs; the service and raw SQL returning different pages is an
error; nothing is asserted about timings.

Each backend ends with its two ratio lines, against the floors measured in the same run:
``ratio import ÷ read alone`` (speeds) and ``ratio list_messages service ÷ raw SQL`` (the slowest of
the three pages' svc/raw). ``--messages 2500 --channels 3 --users 5 --repeat 2`` is a smoke run.
The PostgreSQL run uses a private schema, dropped at the end (and is skipped, with a note, when the
server cannot be reached).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends import add_arguments, each_backend, median_ms, postgres_reachable
from sqlalchemy import text

from convener.auth.caller import Caller
from convener.chat.importing import ChatImporter, ImportProgress
from convener.chat.importing.slack import SlackExport
from convener.chat.models import ListChatMessagesRequest, OrderBy, SearchMessagesRequest, SearchParameters
from convener.config import Settings
from convener.services import Services

SEED = 2024
PAGE = 50
DEPTH = 0.9
BIG_SHARE = 0.20  # of all messages, in #general
DAYS = 730
START = 1_672_617_600  # 2023-01-02T00:00:00Z, a Monday
WORKDAY_US = 12 * 3600 * 1_000_000  # messages fall between 07:00 and 19:00 UTC
TEAM = "T0BENCH01"
DOMAIN = "benchco.example"
SEARCH_WORD = "postmortem"  # in ~0.5% of messages
PROGRESS_EVERY = 5.0  # seconds between progress lines on stderr

# ------------------------------------------------------------------------------------------ the export

FIRST = ("ana ben cy dana eli fay gus hana ivan jo kai lea mo nia omar pia quinn rosa sam tara uma "
         "vic wen xia yara zoe amir bea carl dev ema finn gia hugo ines jon kira luca maya noor otto").split()
LAST = ("lima okafor park silva chen novak berg kowalski haddad moreau rossi tanaka ivanova smith "
        "garcia nguyen muller dubois costa jensen").split()
WORDS = ("the a to we it is for on this that and i you of in be can with deploy build release review "
         "merge branch test fix bug ticket customer issue meeting sync standup design doc draft plan "
         "roadmap sprint launch metrics dashboard alert incident latency cache database query index "
         "migration rollback staging production api endpoint client server config flag feature "
         "experiment results numbers today tomorrow friday monday morning later soon done blocked "
         "waiting looking thanks great sounds good agree question idea update status shipped merged "
         "approved pipeline flaky timeout retry memory cpu disk queue worker job cron backup restore "
         "invoice pricing onboarding signup churn support escalation feedback survey quarter goals "
         "okr hiring interview candidate offer lunch coffee team offsite slides demo recording notes "
         "agenda action items owner deadline estimate scope risk dependency vendor contract legal "
         "security audit token password rotation certificate dns load balancer kubernetes terraform "
         "python rust typescript react mobile ios android web search ranking model eval prompt agent").split()
WORD_WEIGHTS = list(itertools.accumulate(1 / (rank + 1) ** 0.9 for rank in range(len(WORDS))))
"""Cumulative, Zipf-like: a few words are common, most are rare."""
REACTIONS = ("+1", "tada", "eyes", "white_check_mark", "joy", "heart", "rocket", "pray", "fire",
             "thumbsup::skin-tone-2", "raised_hands", "100", "party_parrot")  # the last one custom
EMOJI = (":smile:", ":tada:", ":thinking_face:", ":rocket:", ":+1:", ":eyes:", ":coffee:")
FILES = (("notes.txt", "text/plain", "text"), ("report.pdf", "application/pdf", "pdf"),
         ("screenshot.png", "image/png", "png"), ("data.csv", "text/csv", "csv"))


@dataclass(frozen=True)
class SlackUser:
    id: str
    handle: str
    name: str


@dataclass
class Channel:
    id: str
    name: str
    members: list[str]
    created_day: int
    messages: int
    poster_weights: list[float] = field(default_factory=list)
    """Cumulative, over ``members``: a few people write most of a channel's messages."""


@dataclass
class Workspace:
    users: list[SlackUser]
    channels: list[Channel]
    bot: SlackUser

    @property
    def big(self) -> Channel:
        return self.channels[0]


def slack_id(rng: random.Random, prefix: str, taken: set[str]) -> str:
    alphabet = string.digits + string.ascii_uppercase
    while (candidate := prefix + "".join(rng.choices(alphabet, k=8))) in taken:
        pass
    taken.add(candidate)
    return candidate


def largest_remainder(total: int, weights: list[float]) -> list[int]:
    """``total`` split in proportion to ``weights``, as whole numbers that add up to it exactly."""
    scale = total / sum(weights)
    shares = [weight * scale for weight in weights]
    counts = [int(share) for share in shares]
    by_remainder = sorted(range(len(shares)), key=lambda index: counts[index] - shares[index])
    for index in by_remainder[:total - sum(counts)]:
        counts[index] += 1
    return counts


def plan_workspace(rng: random.Random, user_count: int, channel_count: int, messages: int) -> Workspace:
    taken: set[str] = set()
    users, handles = [], set()
    for index in range(user_count):
        first, last = FIRST[index % len(FIRST)], LAST[(index // len(FIRST) + index) % len(LAST)]
        handle = f"{first}.{last}"
        handle = handle if handle not in handles else f"{handle}{index}"
        handles.add(handle)
        users.append(SlackUser(slack_id(rng, "U0", taken), handle, f"{first.title()} {last.title()}"))
    bot = SlackUser(slack_id(rng, "U0", taken), "deploybot", "deploybot")
    big = round(messages * BIG_SHARE)
    others = largest_remainder(messages - big, [1 / (rank + 1) ** 0.8 for rank in range(channel_count - 1)])
    channels = [Channel(slack_id(rng, "C0", taken), "general", [user.id for user in users], 0, big)]
    for rank, count in enumerate(others):
        size = rng.randint(min(5, user_count), min(80, user_count))
        members = rng.sample([user.id for user in users], size)
        name = f"{rng.choice(WORDS[20:])}-{rng.choice(WORDS[20:])}-{rank}"
        channels.append(Channel(slack_id(rng, "C0", taken), name, members, rng.randrange(DAYS // 2), count))
    for channel in channels:
        channel.poster_weights = list(itertools.accumulate(rng.paretovariate(1.2) for _ in channel.members))
    return Workspace(users, channels, bot)


def day_counts(rng: random.Random, channel: Channel) -> list[int]:
    """Messages per day: weekdays busy, weekends quiet, activity growing over the two years."""
    weights = [0.0 if day < channel.created_day else
               (0.12 if day % 7 >= 5 else 1.0) * (0.6 + 0.8 * day / DAYS) * rng.uniform(0.7, 1.3)
               for day in range(DAYS)]
    return largest_remainder(channel.messages, weights)


def mrkdwn(rng: random.Random, channel: Channel, workspace: Workspace) -> str:
    words = rng.choices(WORDS, cum_weights=WORD_WEIGHTS, k=rng.randint(4, 28))
    if rng.random() < 0.005:
        words.insert(rng.randrange(len(words)), SEARCH_WORD)
    if rng.random() < 0.10:
        words.insert(rng.randrange(len(words)), f"*{rng.choice(WORDS[20:])}*")
    if rng.random() < 0.05:
        words.insert(rng.randrange(len(words)), f"_{rng.choice(WORDS[20:])}_")
    if rng.random() < 0.05:
        words.insert(rng.randrange(len(words)), f"`{rng.choice(WORDS[20:])}.py`")
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), f"<@{rng.choice(channel.members)}>")
    if rng.random() < 0.10:
        path = "/".join(rng.choices(WORDS[20:], k=2))
        if rng.random() < 0.7:
            site = rng.choice(["github.com/benchco", f"docs.{DOMAIN}", f"grafana.{DOMAIN}"])
            words.append(f"<https://{site}/{path}|{rng.choice(WORDS[20:])}>")
        else:
            words.append(f"<https://{DOMAIN}/{path}>")
    if rng.random() < 0.03:
        other = rng.choice(workspace.channels)
        words.append(f"<#{other.id}|{other.name}>")
    if rng.random() < 0.10:
        words.append(rng.choice(EMOJI))
    body = " ".join(words).capitalize() + rng.choice(".?!")
    if rng.random() < 0.03:
        body += "\n" + "\n".join(f"• {' '.join(rng.choices(WORDS, k=4))}" for _ in range(rng.randint(2, 4)))
    if rng.random() < 0.01:
        body += "\n```" + f"$ make {rng.choice(WORDS[20:])}\nerror: {rng.choice(WORDS[20:])} failed" + "```"
    return body


def user_message(rng: random.Random, channel: Channel, workspace: Workspace, ts: str) -> dict[str, Any]:
    user = rng.choices(channel.members, cum_weights=channel.poster_weights)[0]
    body = mrkdwn(rng, channel, workspace)
    record: dict[str, Any] = {
        "client_msg_id": f"{rng.getrandbits(128):032x}", "type": "message", "text": body, "user": user,
        "ts": ts, "team": TEAM, "user_team": TEAM, "source_team": TEAM,
        "blocks": [{"type": "rich_text", "block_id": f"{rng.getrandbits(20):05x}", "elements": [
            {"type": "rich_text_section", "elements": [{"type": "text", "text": body}]}]}],
    }
    if rng.random() < 0.03:
        record["edited"] = {"user": user, "ts": f"{float(ts) + rng.randint(5, 600):.6f}"}
    if rng.random() < 0.08:
        record["reactions"] = []
        for name in rng.sample(REACTIONS, rng.randint(1, 3)):
            fans = rng.sample(channel.members, min(len(channel.members), rng.randint(1, 5)))
            record["reactions"].append({"name": name, "users": fans, "count": len(fans)})
    if rng.random() < 0.02:
        record["files"] = [file_record(rng, user, ts)]
    return record


def file_record(rng: random.Random, user: str, ts: str) -> dict[str, Any]:
    file_id = f"F0{rng.getrandbits(40):010X}"
    if rng.random() < 0.2:
        doc = "".join(rng.choices(string.ascii_letters + string.digits, k=33))
        return {"id": file_id, "name": "Design doc", "title": "Design doc", "filetype": "gdoc",
                "mimetype": "application/vnd.google-apps.document", "user": user, "mode": "external",
                "is_external": True, "url_private": f"https://docs.google.com/document/d/{doc}/edit"}
    name, mime, kind = rng.choice(FILES)
    seconds = int(ts.split(".")[0])
    return {"id": file_id, "created": seconds, "timestamp": seconds, "name": name, "title": name,
            "mimetype": mime, "filetype": kind, "user": user, "mode": "hosted",
            "size": rng.randint(200, 2_000_000),
            "url_private": f"https://files.slack.com/files-pri/{TEAM}-{file_id}/{name}"}


def day_records(rng: random.Random, channel: Channel, workspace: Workspace, day: int,
                count: int) -> list[dict[str, Any]]:
    """One day file: top-level messages, replies to the day's recent ones (~10%), joins, bot posts, shares."""
    base_us = (START + day * 86_400 + 7 * 3600) * 1_000_000
    records: list[dict[str, Any]] = []
    roots: list[dict[str, Any]] = []  # the day's top-level user messages, candidates for a thread
    for offset in sorted(rng.sample(range(WORKDAY_US), count)):
        at = base_us + offset
        ts = f"{at // 1_000_000}.{at % 1_000_000:06d}"
        roll = rng.random()
        if roll < 0.005:
            user = rng.choice(channel.members)
            records.append({"type": "message", "subtype": "channel_join", "ts": ts, "user": user,
                            "text": f"<@{user}> has joined the channel"})
        elif roll < 0.015:
            deployed = f"Deployed `{rng.choice(WORDS[20:])}` to *production* :rocket:"
            records.append({"type": "message", "subtype": "bot_message", "ts": ts, "bot_id": "B0DEPLOYBOT",
                            "username": "deploybot", "text": deployed})
        elif roll < 0.125 and roots:
            records.append(reply(rng, channel, workspace, rng.choice(roots[-8:]), ts))
        else:
            record = user_message(rng, channel, workspace, ts)
            if roll > 0.995 and roots:
                record["attachments"] = [share(channel, rng.choice(roots))]
            records.append(record)
            roots.append(record)
    return records


def reply(rng: random.Random, channel: Channel, workspace: Workspace, root: dict[str, Any],
          ts: str) -> dict[str, Any]:
    record = user_message(rng, channel, workspace, ts)
    record.update(thread_ts=root["ts"], parent_user_id=root["user"])
    root["thread_ts"] = root["ts"]
    root.setdefault("replies", []).append({"user": record["user"], "ts": ts})
    root["reply_count"] = len(root["replies"])
    root["reply_users"] = sorted({item["user"] for item in root["replies"]})
    root["reply_users_count"] = len(root["reply_users"])
    root["latest_reply"] = ts
    return record


def share(channel: Channel, quoted: dict[str, Any]) -> dict[str, Any]:
    digits = quoted["ts"].replace(".", "")
    return {"is_share": True, "is_msg_unfurl": True, "channel_id": channel.id, "channel_name": channel.name,
            "ts": quoted["ts"], "author_id": quoted["user"], "text": quoted["text"],
            "from_url": f"https://benchco.slack.com/archives/{channel.id}/p{digits}", "fallback": "[shared]"}


def user_record(user: SlackUser, bot: bool = False) -> dict[str, Any]:
    profile = {"title": "", "phone": "", "real_name": user.name, "real_name_normalized": user.name,
               "display_name": user.handle.split(".")[0], "first_name": user.name.split()[0],
               "image_72": f"https://avatars.slack-edge.com/{user.id}_72.png", "team": TEAM}
    if bot:
        profile["bot_id"] = "B0DEPLOYBOT"
    else:
        profile["email"] = f"{user.handle}@{DOMAIN}"
    return {"id": user.id, "team_id": TEAM, "name": user.handle, "deleted": False, "real_name": user.name,
            "tz": "Europe/Berlin", "tz_offset": 3600, "profile": profile, "is_admin": False,
            "is_owner": False, "is_bot": bot, "is_app_user": False, "updated": START}


def write_export(root: Path, workspace: Workspace, rng: random.Random, messages: int) -> None:
    """The export's files, one day file at a time: at most one day of one channel in memory."""
    users = [user_record(user) for user in workspace.users] + [user_record(workspace.bot, bot=True)]
    (root / "users.json").write_text(json.dumps(users, indent=4))
    (root / "channels.json").write_text(json.dumps([
        {"id": channel.id, "name": channel.name, "created": START + channel.created_day * 86_400,
         "creator": channel.members[0], "is_archived": False, "is_general": channel is workspace.big,
         "members": channel.members, "topic": {"value": "", "creator": "", "last_set": 0},
         "purpose": {"value": f"All about {channel.name}", "creator": channel.members[0], "last_set": START}}
        for channel in workspace.channels], indent=4))
    progress = Ticker("generated", messages)
    written = 0
    for channel in workspace.channels:
        folder = root / channel.name
        folder.mkdir()
        for day, count in enumerate(day_counts(rng, channel)):
            if count:
                date = time.strftime("%Y-%m-%d", time.gmtime(START + day * 86_400))
                records = day_records(rng, channel, workspace, day, count)
                (folder / f"{date}.json").write_text(json.dumps(records, ensure_ascii=False))
                written += count
                progress(written, channel.name)


# ------------------------------------------------------------------------------------------ helpers


class Ticker:
    """A progress line on stderr every few seconds."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.started = self.shown = time.perf_counter()

    def __call__(self, done: int, where: str) -> None:
        now = time.perf_counter()
        if now - self.shown >= PROGRESS_EVERY:
            self.shown = now
            rate = done / (now - self.started)
            print(f"    {self.label} {done:,}/{self.total:,} messages ({done / self.total:.0%}), "
                  f"{rate:,.0f}/s, in {where}", file=sys.stderr, flush=True)


def ignore(problem: object) -> None:
    pass


# ------------------------------------------------------------------------------------------ import


def read_only(path: Path) -> tuple[int, float]:
    """Messages the reader yields and the seconds it takes, nothing written: the import's baseline."""
    started = time.perf_counter()
    count = 0
    with SlackExport(path) as export:
        for _ in export.users(ignore):
            pass
        for conversation in export.conversations(ignore):
            for _ in conversation.messages:
                count += 1
    return count, time.perf_counter() - started


def import_export(services: Services, path: Path, expected: int) -> float:
    ticker = Ticker("imported", expected)

    def progress(step: ImportProgress) -> None:
        ticker(step.messages, step.conversation)

    started = time.perf_counter()
    with SlackExport(path) as export:
        summary = ChatImporter(services.database).run(export, progress)
    elapsed = time.perf_counter() - started
    if summary.messages != expected or summary.failed_conversations or summary.problem_count:
        problems = "; ".join(str(problem) for problem in summary.problems[:5])
        raise SystemExit(f"the import differs from the export: {summary.messages:,} messages "
                         f"of {expected:,}, {summary.failed_conversations} failed conversations, "
                         f"{summary.problem_count} problems {problems}")
    return elapsed


def settle(services: Services) -> None:
    """VACUUM ANALYZE the chat tables, as autovacuum would soon after a bulk import (statistics, the
    visibility map, GIN's pending list flushed): the timings then neither wait for it nor race it.
    Convener never ANALYZEs SQLite."""
    started = time.perf_counter()
    tables = "chat_users, chat_links, chat_spaces, chat_memberships, chat_messages, chat_mentions"
    with services.database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql(f"VACUUM (ANALYZE) {tables}")
    print(f"  VACUUM (ANALYZE) of the chat tables: {time.perf_counter() - started:.1f} s (not counted)")


# ------------------------------------------------------------------------------------------ list_messages

COLUMNS = (  # as the service's _message_select
    "chat_messages.row_id, chat_messages.space_id, chat_messages.message_id, chat_messages.thread_id, "
    "chat_messages.threaded_reply, chat_messages.create_time_us, chat_messages.body, "
    "chat_messages.attachments, chat_messages.reactions, chat_messages.quote, chat_messages.sender_id, "
    "chat_users.display_name AS sender_name, chat_users.email AS sender_email, "
    "chat_users.user_type AS sender_type "
    "FROM chat_messages LEFT OUTER JOIN chat_users ON chat_users.user_id = chat_messages.sender_id"
)
LISTED = "chat_messages.space_id = :space AND chat_messages.listed = :listed"
KEYSET = (  # rows after the position (created, row_id), newest first; the leading <= lets the index seek
    "chat_messages.create_time_us <= :created AND (chat_messages.create_time_us < :created OR "
    "(chat_messages.create_time_us = :created AND chat_messages.row_id < :row_id))"
)
NEWEST_FIRST = "ORDER BY chat_messages.create_time_us DESC, chat_messages.row_id DESC"
LISTING_INDEX = "ix_chat_messages_listing"


@dataclass(frozen=True)
class Target:
    """Where list_messages is measured: #general as Convener stores it, and a member to read it as."""

    space_id: str
    caller: Caller
    user_id: str
    listed: int


def find_target(services: Services, workspace: Workspace) -> Target:
    member = workspace.big.members[len(workspace.big.members) // 2]
    with services.database.reading() as connection:
        def linked(kind: str, external: str) -> str:
            return str(connection.scalar(text(
                "SELECT internal_id FROM chat_links "
                "WHERE source = 'slack' AND kind = :kind AND external_id = :external"),
                {"kind": kind, "external": external}))
        space_id, user_id = linked("space", workspace.big.id), linked("user", member)
        listed = connection.scalar(text(f"SELECT count(*) FROM chat_messages WHERE {LISTED}"),
                                   {"space": space_id, "listed": True})
    return Target(space_id, Caller(f"users/{user_id}"), user_id, int(listed or 0))


@contextmanager
def captured(services: Services) -> Iterator[list[tuple[str, Any]]]:
    """The SELECTs on chat_messages run inside the block, with their parameters."""
    seen: list[tuple[str, Any]] = []

    def listen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if "FROM chat_messages" in statement:
            seen.append((statement, parameters))

    with services.database.listening("before_cursor_execute", listen):
        yield seen


def explain(services: Services, statement: str, parameters: Any, driver: bool = False) -> list[str]:
    """The plan of a SELECT: EXPLAIN QUERY PLAN on SQLite, EXPLAIN (ANALYZE, BUFFERS) on PostgreSQL."""
    prefix = "EXPLAIN QUERY PLAN " if services.database.dialect == "sqlite" else "EXPLAIN (ANALYZE, BUFFERS) "
    with services.database.reading() as connection:
        rows = (connection.exec_driver_sql(prefix + statement, parameters) if driver
                else connection.execute(text(prefix + statement), parameters))
        return [f"      {row[-1]}" for row in rows]


def uses_index(plan: list[str]) -> str:
    return "uses" if any(LISTING_INDEX in line for line in plan) else "does NOT use"


def walk(services: Services, target: Target, last: int) -> tuple[list[str | None], float]:
    """The page tokens of pages 1 to ``last + 1`` (page 1 has none), found by following next_page_token
    from page 1; and the seconds the walk took."""
    request = ListChatMessagesRequest(conversation_id=f"spaces/{target.space_id}", page_size=PAGE)
    tokens: list[str | None] = [None]
    started = time.perf_counter()
    for page in range(last):
        request.page_token = services.chat.list_messages(request, target.caller).next_page_token
        if request.page_token is None:
            raise SystemExit(f"#general ended at page {page + 1}, before page {last + 1}")
        tokens.append(request.page_token)
    return tokens, time.perf_counter() - started


def measure_listing(services: Services, target: Target, repeat: int) -> float:
    """Prints the pages' timings; returns the largest service ÷ raw of them."""
    pages = -(-target.listed // PAGE)
    deep = min(int(pages * DEPTH), target.listed // PAGE - 1)  # 0 is page 1; a full page, also when tiny
    tokens, walk_seconds = walk(services, target, deep)
    print(f"  #general: {target.listed:,} listed messages, {pages:,} pages of {PAGE}; walking pages 1 to "
          f"{deep} for the token of page {deep + 1} took {walk_seconds:.1f} s: "
          f"{deep / walk_seconds:,.0f} pages/s")
    results: dict[str, tuple[float, float]] = {}
    for label, index in (("page 1", 0), ("page 2", 1), (f"page {deep + 1} ({DEPTH:.0%} deep)", deep)):
        params: dict[str, Any] = {"space": target.space_id, "listed": True}
        keyset = ""
        if index:  # the position the page starts after: the last row of the page before it
            with services.database.reading() as connection:
                before = connection.execute(text(
                    "SELECT chat_messages.create_time_us, chat_messages.row_id FROM chat_messages "
                    f"WHERE {LISTED} {NEWEST_FIRST} LIMIT 1 OFFSET :skip"),
                    {**params, "skip": index * PAGE - 1}).one()
            params.update(created=before.create_time_us, row_id=before.row_id)
            keyset = f" AND {KEYSET}"
        sql = f"SELECT {COLUMNS} WHERE {LISTED}{keyset} {NEWEST_FIRST} LIMIT {PAGE + 1}"
        request = ListChatMessagesRequest(conversation_id=f"spaces/{target.space_id}", page_size=PAGE,
                                          page_token=tokens[index])

        def raw(sql: str = sql, params: dict[str, Any] = params) -> list[Any]:
            with services.database.reading() as connection:
                return list(connection.execute(text(sql), params).all())

        def service(request: ListChatMessagesRequest = request) -> list[str]:
            response = services.chat.list_messages(request, target.caller)
            return [message.message_id or "" for message in response.messages or ()]

        with captured(services) as seen:
            names = service()
        expected = [f"spaces/{row.space_id}/messages/{row.message_id}" for row in raw()[:PAGE]]
        if names != expected or len(names) != PAGE:
            raise SystemExit(f"{label}: the service and raw SQL return different pages, or the page is short")
        results[label] = median_ms(raw, repeat), median_ms(service, repeat)
        raw_plan, service_plan = explain(services, sql, params), explain(services, *seen[-1], driver=True)
        print(f"    {label}: the raw SELECT {uses_index(raw_plan)} {LISTING_INDEX}, "
              f"the service's {uses_index(service_plan)} it")
    print(f"    plans of page {deep + 1}: the raw SELECT", *raw_plan,
          "    the service's SELECT", *service_plan, sep="\n")
    first_raw, first_service = results["page 1"]
    print(f"\n  {'list_messages, pageSize 50':<28}{'raw ms':>8}{'svc ms':>8}{'svc/raw':>9}"
          f"{'raw/page 1':>12}{'svc/page 1':>12}")
    for label, (r, s) in results.items():
        print(f"  {label:<28}{r:>8.2f}{s:>8.2f}{s / r:>9.1f}{r / first_raw:>12.2f}{s / first_service:>12.2f}")
    return max(s / r for r, s in results.values())


# ------------------------------------------------------------------------------------------ search_messages


def raw_search_sql(dialect: str) -> str:
    """The service's full-text SELECT for one keyword in the caller's spaces, most relevant first."""
    mine = ("chat_messages.listed = :listed AND chat_messages.space_id IN "
            "(SELECT chat_memberships.space_id FROM chat_memberships WHERE chat_memberships.user_id = :user)")
    if dialect == "postgresql":
        query = "plainto_tsquery('simple', :keyword)"
        rank = f"-CAST(ts_rank(chat_messages.search_vector, {query}) AS DOUBLE PRECISION)"
        return (f"SELECT {COLUMNS.replace(' FROM ', f', {rank} AS rank FROM ', 1)} "
                f"WHERE {mine} AND chat_messages.search_vector @@ {query} "
                f"ORDER BY {rank}, chat_messages.row_id LIMIT 26")
    return (f"SELECT {COLUMNS.replace(' FROM ', ', bm25(chat_messages_fts) AS rank FROM ', 1)} "
            "JOIN chat_messages_fts ON chat_messages_fts.rowid = chat_messages.row_id "
            f"WHERE {mine} AND chat_messages_fts MATCH :match "
            "ORDER BY bm25(chat_messages_fts), chat_messages.row_id LIMIT 26")


def measure_search(services: Services, target: Target, repeat: int) -> None:
    params = {"user": target.user_id, "listed": True, "keyword": SEARCH_WORD, "match": f'"{SEARCH_WORD}"'}
    sql = raw_search_sql(services.database.dialect)
    request = SearchMessagesRequest(search_parameters=SearchParameters(keywords=[SEARCH_WORD]),
                                    order_by=OrderBy.RELEVANCE_DESC)

    def raw() -> list[Any]:
        with services.database.reading() as connection:
            return list(connection.execute(text(sql), params).all())

    def service() -> list[str]:
        response = services.chat.search_messages(request, target.caller)
        return [message.message_id or "" for message in response.messages or ()]

    with services.database.reading() as connection:
        everything = sql.replace(" LIMIT 26", "")
        hits = connection.scalar(text(f"SELECT count(*) FROM ({everything}) AS found"), params)
    expected = [f"spaces/{row.space_id}/messages/{row.message_id}" for row in raw()[:25]]
    if service() != expected:
        raise SystemExit("search: the service and raw SQL return different pages")
    r, s = median_ms(raw, repeat), median_ms(service, repeat)
    print(f"\n  {'search_messages, pageSize 25':<30}{'raw ms':>9}{'svc ms':>9}{'svc/raw':>9}")
    print(f"  {repr(SEARCH_WORD) + f' ({hits:,} hits)':<30}{r:>9.2f}{s:>9.2f}{s / r:>9.1f}")


# ------------------------------------------------------------------------------------------ main


def run(backend: str, url: str, export: Path, workspace: Workspace, messages: int, repeat: int) -> None:
    print(f"\n=== {backend}: {messages:,} messages, {len(workspace.channels)} channels, "
          f"median of {repeat} runs ===")
    # The floor is measured right before the import it is compared with: on a shared machine the load
    # moves, and a baseline taken minutes earlier would tilt the ratio.
    count, read_seconds = read_only(export)
    print(f"  read only (the baseline): {count:,} messages in {read_seconds:.1f} s: "
          f"{count / read_seconds:,.0f} messages/s")
    with tempfile.TemporaryDirectory() as data_dir:
        services = Services.open(Settings(data_dir=Path(data_dir), database_url=url))
        try:
            cpu_started = time.process_time()
            seconds = import_export(services, export, messages)
            # this process's CPU (the PostgreSQL server's is not in it): on a loaded machine, wall time
            # moves with the neighbours, CPU time much less
            cpu = time.process_time() - cpu_started
            print(f"  import: {messages:,} messages in {seconds:.1f} s: {messages / seconds:,.0f} "
                  f"messages/s; import ÷ read alone {read_seconds / seconds:.2f}×; "
                  f"this process's CPU {cpu:.1f} s ({cpu / messages * 1e6:.0f} µs a message)")
            if services.database.dialect == "postgresql":
                settle(services)
            target = find_target(services, workspace)
            listing = measure_listing(services, target, repeat)
            measure_search(services, target, repeat)
            print(f"\n  ratio import ÷ read alone ({backend}): {read_seconds / seconds:.2f}× (target ≥ 0.3×)")
            print(f"  ratio list_messages service ÷ raw SQL ({backend}): {listing:.2f}× (target ≤ 3×)")
        finally:
            services.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--keep-export", type=Path, help="Write the export to this (new) folder and keep it.")
    add_arguments(parser)
    args = parser.parse_args()
    if args.channels < 2 or args.users < 2 or args.messages * BIG_SHARE < 10 * PAGE:
        parser.error(f"needs at least 2 channels, 2 users and {10 * PAGE / BIG_SHARE:,.0f} messages")
    if args.backend != "sqlite" and not postgres_reachable(args.postgres_url):
        print(f"PostgreSQL at {args.postgres_url} cannot be reached: its run is skipped.")
        if args.backend == "postgresql":
            return
        args.backend = "sqlite"
    with tempfile.TemporaryDirectory() as tmp:
        export = args.keep_export or Path(tmp) / "export"
        export.mkdir(parents=True)
        rng = random.Random(SEED)
        workspace = plan_workspace(rng, args.users, args.channels, args.messages)
        started = time.perf_counter()
        write_export(export, workspace, rng, args.messages)
        print(f"Slack export of {args.messages:,} messages ({len(workspace.channels)} channels, "
              f"{len(workspace.users)} users, #general {workspace.big.messages:,}) written in "
              f"{time.perf_counter() - started:.1f} s (not counted)")
        for backend, url in each_backend(args):
            run(backend, url, export, workspace, args.messages, args.repeat)


if __name__ == "__main__":
    main()

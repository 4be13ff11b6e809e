"""A conversation's turns in rows of their own; the conversation's body keeps its header (all but ``turns``).

Recording a turn appended it to the body and rewrote the whole body, so a session of n turns wrote O(n²).
Existing conversations are moved in batches of rows, never the whole table at once.

Revision ID: 0009
Revises: 0008
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")
BATCH = 200

conversations = sa.table("ces_conversations", sa.column("id", sa.Integer), sa.column("body", Json))
turns = sa.table("ces_conversation_turns", sa.column("conversation_pk", sa.Integer),
                 sa.column("turn_index", sa.Integer), sa.column("body", Json))


def upgrade() -> None:
    op.create_table(
        "ces_conversation_turns",
        sa.Column("conversation_pk", sa.Integer, sa.ForeignKey("ces_conversations.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("turn_index", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("body", Json, nullable=False),
    )
    connection = op.get_bind()
    after = 0
    while True:
        batch = connection.execute(
            sa.select(conversations.c.id, conversations.c.body)
            .where(conversations.c.id > after).order_by(conversations.c.id).limit(BATCH)
        ).all()
        if not batch:
            break
        after = batch[-1].id
        _move(connection, [(row.id, row.body) for row in batch])


def _move(connection: sa.Connection, batch: list[tuple[int, dict[str, Any]]]) -> None:
    rows: list[dict[str, Any]] = []
    for pk, body in batch:
        if "turns" not in body:
            continue
        rows.extend({"conversation_pk": pk, "turn_index": index, "body": turn}
                    for index, turn in enumerate(body["turns"] or ()))
        header = {key: value for key, value in body.items() if key != "turns"}
        connection.execute(sa.update(conversations).where(conversations.c.id == pk).values(body=header))
    if rows:
        connection.execute(sa.insert(turns), rows)


def downgrade() -> None:
    connection = op.get_bind()
    after = 0
    while True:
        ids = connection.execute(
            sa.select(conversations.c.id).where(conversations.c.id > after).order_by(conversations.c.id).limit(BATCH)
        ).scalars().all()
        if not ids:
            break
        after = ids[-1]
        found: dict[int, list[Any]] = {}
        for row in connection.execute(sa.select(turns.c.conversation_pk, turns.c.body)
                                      .where(turns.c.conversation_pk.in_(ids))
                                      .order_by(turns.c.conversation_pk, turns.c.turn_index)):
            found.setdefault(row.conversation_pk, []).append(row.body)
        for pk, moved in found.items():
            body = connection.execute(sa.select(conversations.c.body).where(conversations.c.id == pk)).scalar_one()
            connection.execute(sa.update(conversations).where(conversations.c.id == pk)
                               .values(body={**body, "turns": moved}))
    op.drop_table("ces_conversation_turns")

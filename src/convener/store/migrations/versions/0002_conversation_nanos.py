"""Conversation times keep their nanoseconds: ordering and filters no longer round to the microsecond.

Revision ID: 0002
Revises: 0001
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

KEYSET = ["app_pk", "start_time_us", "start_time_nanos", "conversation_id"]


def _nanos_below_micro(text: object) -> int | None:
    """The digits past the sixth of an RFC 3339 fraction, as stored bodies write them."""
    if not isinstance(text, str):
        return None
    fraction = text.rstrip("Zz").partition(".")[2]
    return int(fraction.ljust(9, "0")[6:9]) if fraction else 0


def upgrade() -> None:
    with op.batch_alter_table("ces_conversations") as batch:
        batch.add_column(sa.Column("start_time_nanos", sa.SmallInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("end_time_nanos", sa.SmallInteger, nullable=True))
        batch.drop_index("ix_ces_conv_keyset")
        batch.drop_index("ix_ces_conv_source_keyset")
        batch.create_index("ix_ces_conv_keyset", KEYSET)
        batch.create_index("ix_ces_conv_source_keyset", ["app_pk", "source", *KEYSET[1:]])
    # Recorded times are exact in the stored bodies; copy their sub-microsecond part.
    connection = op.get_bind()
    table = sa.table(
        "ces_conversations",
        sa.column("id", sa.Integer),
        sa.column("body", sa.JSON),
        sa.column("end_time_us", sa.BigInteger),
        sa.column("start_time_nanos", sa.SmallInteger),
        sa.column("end_time_nanos", sa.SmallInteger),
    )
    last_id = 0
    while True:  # in batches by id, so a large store is never loaded whole
        rows = connection.execute(
            sa.select(table.c.id, table.c.body, table.c.end_time_us)
            .where(table.c.id > last_id)
            .order_by(table.c.id)
            .limit(1000)
        ).all()
        if not rows:
            break
        last_id = rows[-1].id
        for row in rows:
            body = row.body if isinstance(row.body, dict) else json.loads(row.body)
            start = _nanos_below_micro(body.get("startTime")) or 0
            end = _nanos_below_micro(body.get("endTime")) if row.end_time_us is not None else None
            if start or end:
                connection.execute(
                    sa.update(table).where(table.c.id == row.id).values(start_time_nanos=start, end_time_nanos=end)
                )
    connection.execute(
        sa.update(table).where(table.c.end_time_us.is_not(None), table.c.end_time_nanos.is_(None)).values(end_time_nanos=0)
    )


def downgrade() -> None:
    with op.batch_alter_table("ces_conversations") as batch:
        batch.drop_index("ix_ces_conv_keyset")
        batch.drop_index("ix_ces_conv_source_keyset")
        batch.drop_column("start_time_nanos")
        batch.drop_column("end_time_nanos")
        batch.create_index("ix_ces_conv_keyset", ["app_pk", "start_time_us", "conversation_id"])
        batch.create_index("ix_ces_conv_source_keyset", ["app_pk", "source", "start_time_us", "conversation_id"])

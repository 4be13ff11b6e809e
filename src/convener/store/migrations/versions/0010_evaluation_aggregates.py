"""Each evaluation's aggregates in a row of its own, kept up to date as its results change; filled from the
results already stored.

Revision ID: 0010
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")
BATCH = 200
"""Evaluations rebuilt per round: their keys are read a batch at a time, so a large store is never listed whole."""


def upgrade() -> None:
    op.create_table(
        "ces_evaluation_aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("app_pk", sa.Integer, sa.ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
        sa.Column("evaluation_id", sa.String(128), nullable=False),
        sa.Column("body", Json, nullable=False),
    )
    op.create_index("ix_ces_eval_aggregates_id", "ces_evaluation_aggregates", ["app_pk", "evaluation_id"], unique=True)
    # The sums are those the running code keeps (convener.ces.evaluation.aggregates), so it computes them here too:
    # a second definition of the metrics would be a second thing to keep equal.
    from convener.ces.evaluation.aggregates import rebuild

    connection = op.get_bind()
    results = sa.table("ces_evaluation_results", sa.column("app_pk", sa.Integer),
                       sa.column("evaluation_id", sa.String))
    after: tuple[int, str] = (-1, "")
    while True:
        keys = [(int(app_pk), str(evaluation_id)) for app_pk, evaluation_id in connection.execute(
            sa.select(results.c.app_pk, results.c.evaluation_id).distinct().where(sa.or_(
                results.c.app_pk > after[0], sa.and_(results.c.app_pk == after[0], results.c.evaluation_id > after[1])))
            .order_by(results.c.app_pk, results.c.evaluation_id).limit(BATCH)).all()]
        if not keys:
            return
        rebuild(connection, keys)
        after = keys[-1]


def downgrade() -> None:
    op.drop_index("ix_ces_eval_aggregates_id", table_name="ces_evaluation_aggregates")
    op.drop_table("ces_evaluation_aggregates")

"""Each evaluation's aggregates in a row of its own, kept up to date as its results change. The rows of results
already stored are filled by 0014, in the layout of the code that keeps them (the table as made here has no
column for the runs: the code of today could not fill it).

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


def upgrade() -> None:
    op.create_table(
        "ces_evaluation_aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("app_pk", sa.Integer, sa.ForeignKey("ces_apps.id", ondelete="CASCADE"), nullable=False),
        sa.Column("evaluation_id", sa.String(128), nullable=False),
        sa.Column("body", Json, nullable=False),
    )
    op.create_index("ix_ces_eval_aggregates_id", "ces_evaluation_aggregates", ["app_pk", "evaluation_id"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_ces_eval_aggregates_id", table_name="ces_evaluation_aggregates")
    op.drop_table("ces_evaluation_aggregates")

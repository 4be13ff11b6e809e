"""Deployments: the deployment a session was started through, kept on the session, and an index that lists an
app's conversations of one deployment newest first.

Deployments themselves are app parts, stored in ``ces_definitions`` like agents: no table of their own.

Revision ID: 0013
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ces_sessions") as batch:
        batch.add_column(sa.Column("deployment", sa.String(512), nullable=False, server_default=""))
    op.create_index("ix_ces_conv_deployment_keyset", "ces_conversations",
                    ["app_pk", "deployment", "start_time_us", "start_time_nanos", "conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_ces_conv_deployment_keyset", table_name="ces_conversations")
    with op.batch_alter_table("ces_sessions") as batch:
        batch.drop_column("deployment")

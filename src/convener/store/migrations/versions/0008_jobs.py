"""Jobs with leases; the evaluation results a stopped process left queued or running become jobs.

Revision ID: 0008
Revises: 0007
"""

import time

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task", sa.String(64), nullable=False),
        sa.Column("queue", sa.String(64), nullable=False),
        sa.Column("operation", sa.String(512), nullable=False),
        sa.Column("payload", Json, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("worker", sa.String(256), nullable=True),
        sa.Column("lease_until_us", sa.BigInteger, nullable=False),
        sa.Column("since_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_jobs_claim", "jobs", ["lease_until_us", "id"])
    op.create_index("ix_jobs_operation", "jobs", ["operation"])
    # Until now a server re-queued these on its start; from now on they are jobs like any other. A result's
    # attempts so far count, so one interrupted too often is given up with its reason rather than run again.
    now = int(time.time() * 1_000_000)
    op.execute(sa.text(
        "INSERT INTO jobs (task, queue, operation, payload, attempts, worker, lease_until_us, since_us) "
        "SELECT 'ces.play_evaluation_result', 'evaluations', r.operation, "
        + ("json_build_object('result', e.id)::jsonb" if op.get_bind().dialect.name == "postgresql"
           else "json_object('result', e.id)")
        + ", e.attempts, NULL, 0, :now FROM ces_evaluation_runs r JOIN ces_apps a ON a.id = r.app_pk "
        "JOIN ces_evaluation_results e ON e.app_pk = r.app_pk "
        "AND e.evaluation_run = a.name || '/evaluationRuns/' || r.run_id "
        "WHERE r.state = 'RUNNING' AND e.execution_state IN ('QUEUED', 'RUNNING') ORDER BY e.id"
    ).bindparams(now=now))

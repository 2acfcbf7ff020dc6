"""A workload's tuning knows its process: a tuning killed without a word (SIGKILL, a machine
lost) is resumed where it stopped.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28

- autotune_workload_tunings.owner_host, owner_pid, owner_token: the process running the
  tuning now (its host name, its pid on that host, a token of its own run); NULL for rows
  stored before.
- autotune_workload_tunings.heartbeat_at: when that process last said it is alive (every
  few seconds while it runs). A ``running`` tuning whose process is gone (its pid not alive
  on its host, or its heartbeat older than the lease) is resumed by the next ``autotune tune``.
- autotune_workload_results.status may also be 'running': the problem is being tuned now
  (handed to a GPU). A running result of a tuning whose process is gone becomes
  'interrupted', with the trials and seconds its search stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = "'pending', 'tuned', 'skipped', 'failed', 'interrupted'"
_AFTER = _BEFORE + ", 'running'"
_CHECK = "ck_autotune_workload_results__status_valid"


def upgrade() -> None:
    with op.batch_alter_table("autotune_workload_tunings") as batch:
        batch.add_column(sa.Column("owner_host", sa.String(255), nullable=True))
        batch.add_column(sa.Column("owner_pid", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("owner_token", sa.String(32), nullable=True))
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("autotune_workload_results") as batch:
        batch.drop_constraint(_CHECK, type_="check")
        batch.create_check_constraint(_CHECK, f"status IN ({_AFTER})")


def downgrade() -> None:
    # a problem being tuned: 0009 has no word for it; 'interrupted' is what it becomes anyway
    op.get_bind().execute(sa.text("UPDATE autotune_workload_results SET status = 'interrupted' "
                                  "WHERE status = 'running'"))
    with op.batch_alter_table("autotune_workload_results") as batch:
        batch.drop_constraint(_CHECK, type_="check")
        batch.create_check_constraint(_CHECK, f"status IN ({_BEFORE})")
    with op.batch_alter_table("autotune_workload_tunings") as batch:
        for name in ("heartbeat_at", "owner_token", "owner_pid", "owner_host"):
            batch.drop_column(name)

"""Trials that crashed their GPU context or ran past their time limit; time per phase.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

- autotune_trials.status may also be 'crash' (the config left the CUDA context unusable:
  an illegal address, a trap, a launch failure; the search goes on in a fresh context) and
  'timeout' (its kernel ran past the per-trial time limit and was killed).
- autotune_trials.phases: milliseconds the trial spent in each phase, e.g.
  {"compile": 812.0, "load": 1.2, "verify": 40.3, "time": 95.1, "store": 3.0}; NULL for
  trials stored before this revision.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = "'ok', 'compile_error', 'resources', 'launch_error', 'wrong_result'"
_AFTER = _BEFORE + ", 'crash', 'timeout'"


def upgrade() -> None:
    with op.batch_alter_table("autotune_trials") as batch:
        batch.add_column(sa.Column("phases", sa.JSON(), nullable=True))
        batch.drop_constraint("ck_autotune_trials__status_valid", type_="check")
        batch.create_check_constraint("ck_autotune_trials__status_valid", f"status IN ({_AFTER})")


def downgrade() -> None:
    held = op.get_bind().execute(sa.text(
        "SELECT count(*) FROM autotune_trials WHERE status IN ('crash', 'timeout')")).scalar()
    if held:
        raise RuntimeError(f"cannot downgrade to 0006: autotune_trials holds {held} crash or timeout trials, "
                           "statuses 0006 does not allow")
    with op.batch_alter_table("autotune_trials") as batch:
        batch.drop_constraint("ck_autotune_trials__status_valid", type_="check")
        batch.create_check_constraint("ck_autotune_trials__status_valid", f"status IN ({_BEFORE})")
        batch.drop_column("phases")

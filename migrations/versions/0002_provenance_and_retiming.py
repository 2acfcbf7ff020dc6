"""Provenance and noise-aware winners: device UUID, copy bound, L2 mode, clocks, re-timing.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

- autotune_devices.uuid joins the device identity ('' where it could not be read).
- autotune_searches: the copy_row bound measured on the search's shape (GB/s), how the
  timing treated L2 ('single' buffers or 'rotating'), the GPU clocks and throttle reasons
  at start and end (JSON) and a warning when they moved.
- autotune_trials.pct_copy: a trial's bandwidth as % of that copy bound; occupancy: the
  theoretical occupancy (0..1) the CUDA driver gives its registers, shared memory and block.
- autotune_best: the winner of the interleaved re-timing of the top configs: its pooled
  median (ms), the relative spread, the number of rounds, and the tie group (JSON).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_IDENTITY = ["name", "compute_capability", "sm_count", "total_memory", "driver_version", "cuda_version"]


def upgrade() -> None:
    with op.batch_alter_table("autotune_devices") as batch:
        batch.add_column(sa.Column("uuid", sa.String(64), nullable=False, server_default=""))
        batch.drop_constraint("uq_autotune_devices__identity", type_="unique")
        batch.create_unique_constraint("uq_autotune_devices__identity", [*_OLD_IDENTITY, "uuid"])
    with op.batch_alter_table("autotune_searches") as batch:
        batch.add_column(sa.Column("copy_gbps", sa.Float(), nullable=True))
        batch.add_column(sa.Column("l2_mode", sa.String(16), nullable=True))
        batch.add_column(sa.Column("clocks_start", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("clocks_end", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("clock_warning", sa.Text(), nullable=True))
    with op.batch_alter_table("autotune_trials") as batch:
        batch.add_column(sa.Column("pct_copy", sa.Float(), nullable=True))
        batch.add_column(sa.Column("occupancy", sa.Float(), nullable=True))
    with op.batch_alter_table("autotune_best") as batch:
        batch.add_column(sa.Column("pooled_median_ms", sa.Float(), nullable=True))
        batch.add_column(sa.Column("spread", sa.Float(), nullable=True))
        batch.add_column(sa.Column("rounds", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("tie_group", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("autotune_best") as batch:
        for column in ("tie_group", "rounds", "spread", "pooled_median_ms"):
            batch.drop_column(column)
    with op.batch_alter_table("autotune_trials") as batch:
        batch.drop_column("occupancy")
        batch.drop_column("pct_copy")
    with op.batch_alter_table("autotune_searches") as batch:
        for column in ("clock_warning", "clocks_end", "clocks_start", "l2_mode", "copy_gbps"):
            batch.drop_column(column)
    with op.batch_alter_table("autotune_devices") as batch:
        batch.drop_constraint("uq_autotune_devices__identity", type_="unique")
        batch.create_unique_constraint("uq_autotune_devices__identity", _OLD_IDENTITY)
        batch.drop_column("uuid")

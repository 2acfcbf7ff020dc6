"""Certified timing and energy (issue 40): each trial's sample count, the 95 % CI of its median,
joules per launch and the SM clock seen while timing; the best's certificate.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

- autotune_trials.samples: timed samples (each a batch of launches) of the trial.
- autotune_trials.ci_low_ms, ci_high_ms: the distribution-free 95 % confidence interval of its
  median, ms (order statistics; autotune/measure/timing.py).
- autotune_trials.energy_j: energy per launch, joules, from NVML's total-energy counter (NULL:
  not metered, or the GPU has no counter).
- autotune_trials.sm_mhz: the SM clock NVML reported while the trial's first samples ran, MHz.
- autotune_best.certificate: the final re-timing's verdict, e.g. {"level": 0.95, "tied": false,
  "winner": {"config": ..., "pooled_median_ms": ..., "ci_low_ms": ..., "ci_high_ms": ...},
  "runner_up": {... , "ratio": 1.012, "ratio_low": 1.008, "ratio_high": 1.02}}.
- autotune_searches.objective: what the search minimised ('time', 'energy' or 'edp').

Every new column is nullable (or has a server default), so rows stored before keep their meaning:
NULL where it was not measured.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("autotune_trials") as batch:
        batch.add_column(sa.Column("samples", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("ci_low_ms", sa.Float(), nullable=True))
        batch.add_column(sa.Column("ci_high_ms", sa.Float(), nullable=True))
        batch.add_column(sa.Column("energy_j", sa.Float(), nullable=True))
        batch.add_column(sa.Column("sm_mhz", sa.Integer(), nullable=True))
    with op.batch_alter_table("autotune_best") as batch:
        batch.add_column(sa.Column("certificate", sa.JSON(), nullable=True))
    with op.batch_alter_table("autotune_searches") as batch:
        batch.add_column(sa.Column("objective", sa.String(16), server_default="time", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("autotune_searches") as batch:
        batch.drop_column("objective")
    with op.batch_alter_table("autotune_best") as batch:
        batch.drop_column("certificate")
    with op.batch_alter_table("autotune_trials") as batch:
        for name in ("sm_mhz", "energy_j", "ci_high_ms", "ci_low_ms", "samples"):
            batch.drop_column(name)

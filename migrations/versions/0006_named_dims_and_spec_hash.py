"""Open kernel model: the key's shape becomes the kernel's named dimensions; kernels gain a spec hash.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

- autotune_kernels.spec_hash: SHA-256 of the kernel's launch-relevant description ('' where
  none is known); a kernel is (name, source_hash, spec_hash). Rows of the 15 catalog kernels
  get the spec hash of their 0.1 description from :data:`SPEC_HASHES_0_1`.
- autotune_searches, autotune_best, autotune_bench_runs: ``dims`` (the text form
  "rows=8192,cols=8192", the kernel's declared order) replaces rows, cols and depth. The 0.1
  rule: matmul_naive, matmul_tiled and matmul_reg -> m=rows, n=cols, k=depth; every other
  kernel -> rows, cols (bench runs: depth > 0 -> m, n, k, else rows, cols). The best's unique key
  uses dims. Within a key higher GB/s was lower median time, so every best stays the best.
- autotune_trials: the check "an ok trial has gbps" becomes "an ok trial has median_ms" (a
  kernel without a bytes objective has no GB/s).

Upgrade is plain SQL, so ``alembic upgrade --sql`` can emit it. Downgrade (the reverse rule)
reads the dims back in Python, so it needs a live connection; it refuses a database holding
results it cannot express in 0005 (dims other than rows,cols or m,n,k; ok trials without GB/s;
kernels that differ only by spec hash).

SPEC_HASHES_0_1 is a literal copy (a migration never imports live code); the same table is in
autotune/store/share.py (version-1 exports), and tests/test_migrations.py checks that both are
equal and equal to ``autotune.kernel.catalog.get_kernel(name).spec_hash`` of every catalog kernel.

PLACEHOLDER: until the kernel model ("Kernel model:" on main) lands, the values below are the
spec hashes of the temporary shim in autotune/kernel/catalog.py; they are to be replaced by
the literal values of get_kernel(name).spec_hash of the kernel model, before this is released.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# PLACEHOLDER values (the catalog shim's), see the docstring; replace with the kernel model's.
SPEC_HASHES_0_1 = {
    "copy_row": "b3041c9f65b55e7a88c41dc021301f02bd6a99b3ae03641765e2921dc448a754",
    "copy_col": "caa688767eef5decab67e6a20bba431e9f52073bf85513980f2e5b5a88ea4d38",
    "naive_row": "a90881f9e448e86410381af5777e019b7057584e59f8f73e48313416a054b904",
    "naive_col": "6264a9fb1885f872160364fa9530ed0497d6383dc84fc28676da402a8634f108",
    "unroll_row": "b924c18100c9d49cd1eac82459940761b1071421c88732c0f8d2b17cfd7059db",
    "unroll_col": "99fc9f08ded534da65af90273b994995a369ea44de6fbf2efa2856f9c3685f5c",
    "diagonal_row": "88f30c5e2add8fd2733d2eb1cb0a414c1528a4d59128721fbaa8ad26aea1fd23",
    "diagonal_col": "408517987e830bb735d2eca9c93c6d7c8d72acbee282fb13bd6d86aa1f43c20a",
    "smem": "565e467e1e010feec38e7a0fbf701c429e93ab5e8a2145da2d02f0dd13f9d457",
    "smem_pad": "8e001ca9cb7261b5ca876e685538dd92323b95685c2bc51f805d62bb72e5d24c",
    "smem_unroll_pad": "bc80e940e49e8610f91d4e4c89b5f7c91c52d94f171b1a039cc8a096639ff760",
    "smem_vec": "d5522ef848b592958cd2c722a5e5aa47ee8120045b22095cf148523256d15970",
    "matmul_naive": "7e90c8d236e31e42b0384ff7f1043cf1dcc973a8c8c4a454d970f3f3a070d449",
    "matmul_tiled": "89f44f85bb62a467facbfac7274cd388595bd3ffef957cea6074fbf04eb5dd74",
    "matmul_reg": "f7208b1d7ca63beb7f0039d113eb6dae566ff829a435483aa87237cc15dc27d5",
}
"""Spec hash of each catalog kernel's 0.1 description (see the module docstring)."""

MATMUL_0_1 = ("matmul_naive", "matmul_tiled", "matmul_reg")
"""The 0.1 kernels whose rows, cols, depth were M, N, K."""

_KEY_TABLES = ("autotune_searches", "autotune_best")
_OLD_BEST_KEY = ["device_id", "kernel_id", "rows", "cols", "dtype", "nvcc_version", "compile_flags", "depth"]
_NEW_BEST_KEY = ["device_id", "kernel_id", "dims", "dtype", "nvcc_version", "compile_flags"]


def _text(column: str) -> str:
    return f"CAST({column} AS VARCHAR(20))"


_RC = f"'rows=' || {_text('rows')} || ',cols=' || {_text('cols')}"
_MNK = f"'m=' || {_text('rows')} || ',n=' || {_text('cols')} || ',k=' || {_text('depth')}"
_MATMUL_IDS = ("(SELECT id FROM autotune_kernels WHERE name IN ("
               + ", ".join(f"'{name}'" for name in MATMUL_0_1) + "))")


def upgrade() -> None:
    with op.batch_alter_table("autotune_kernels") as batch:
        batch.add_column(sa.Column("spec_hash", sa.String(64), nullable=False, server_default=""))
        batch.drop_constraint("uq_autotune_kernels__name_source_hash", type_="unique")
        batch.create_unique_constraint("uq_autotune_kernels__name_source_hash_spec_hash",
                                       ["name", "source_hash", "spec_hash"])
    for name, digest in SPEC_HASHES_0_1.items():
        op.execute(f"UPDATE autotune_kernels SET spec_hash = '{digest}' WHERE name = '{name}'")

    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("dims", sa.String(1024), nullable=True))
    for table in _KEY_TABLES:
        op.execute(f"UPDATE {table} SET dims = CASE WHEN kernel_id IN {_MATMUL_IDS} THEN {_MNK} ELSE {_RC} END")
    op.execute(f"UPDATE autotune_bench_runs SET dims = CASE WHEN depth > 0 THEN {_MNK} ELSE {_RC} END")

    with op.batch_alter_table("autotune_best") as batch:
        batch.drop_constraint("uq_autotune_best__key", type_="unique")
    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        with op.batch_alter_table(table) as batch:
            batch.alter_column("dims", existing_type=sa.String(1024), nullable=False)
            for column in ("rows", "cols", "depth"):
                batch.drop_column(column)
    with op.batch_alter_table("autotune_best") as batch:
        batch.create_unique_constraint("uq_autotune_best__key", _NEW_BEST_KEY)

    with op.batch_alter_table("autotune_trials") as batch:
        batch.drop_constraint("ck_autotune_trials__ok_has_gbps", type_="check")
        batch.create_check_constraint("ck_autotune_trials__ok_has_median_ms",
                                      "status != 'ok' OR median_ms IS NOT NULL")


def _old_shape(dims: str) -> tuple[int, int, int] | None:
    """``(rows, cols, depth)`` of a dims text by the reverse 0.1 rule, or ``None`` when it has no
    0005 form."""
    try:
        pairs = [item.split("=") for item in dims.split(",")]
        names, values = [p[0] for p in pairs], [int(p[1]) for p in pairs]
    except (ValueError, IndexError):
        return None
    if names == ["rows", "cols"]:
        return values[0], values[1], 0
    if names == ["m", "n", "k"]:
        return values[0], values[1], values[2]
    return None


def _refuse(problem: str) -> None:
    raise RuntimeError(f"cannot downgrade to 0005: {problem}; export or delete those results first")


def downgrade() -> None:
    bind = op.get_bind()
    rows = {}
    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        rows[table] = bind.execute(sa.text(f"SELECT id, dims FROM {table}")).all()
        bad = sorted({dims for _, dims in rows[table] if _old_shape(dims) is None})
        if bad:
            _refuse(f"{table} holds dims with no rows/cols/depth form ({', '.join(bad[:3])})")
    if bind.execute(sa.text("SELECT count(*) FROM autotune_trials WHERE status = 'ok' AND gbps IS NULL")).scalar():
        _refuse("ok trials without GB/s (kernels without a bytes objective)")
    if bind.execute(sa.text("SELECT count(*) FROM (SELECT name, source_hash FROM autotune_kernels "
                            "GROUP BY name, source_hash HAVING count(*) > 1) AS twins")).scalar():
        _refuse("kernels that differ only by their spec hash")

    with op.batch_alter_table("autotune_trials") as batch:
        batch.drop_constraint("ck_autotune_trials__ok_has_median_ms", type_="check")
        batch.create_check_constraint("ck_autotune_trials__ok_has_gbps", "status != 'ok' OR gbps IS NOT NULL")

    with op.batch_alter_table("autotune_best") as batch:
        batch.drop_constraint("uq_autotune_best__key", type_="unique")
    for table in (*_KEY_TABLES, "autotune_bench_runs"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("rows", sa.Integer(), nullable=True))
            batch.add_column(sa.Column("cols", sa.Integer(), nullable=True))
            batch.add_column(sa.Column("depth", sa.Integer(), nullable=False, server_default="0"))
        update = sa.text(f"UPDATE {table} SET rows = :rows, cols = :cols, depth = :depth WHERE id = :id")
        for row_id, dims in rows[table]:
            r, c, d = _old_shape(dims)
            bind.execute(update, {"rows": r, "cols": c, "depth": d, "id": row_id})
        with op.batch_alter_table(table) as batch:
            batch.alter_column("rows", existing_type=sa.Integer(), nullable=False)
            batch.alter_column("cols", existing_type=sa.Integer(), nullable=False)
            batch.drop_column("dims")
    with op.batch_alter_table("autotune_best") as batch:
        batch.create_unique_constraint("uq_autotune_best__key", _OLD_BEST_KEY)

    with op.batch_alter_table("autotune_kernels") as batch:
        batch.drop_constraint("uq_autotune_kernels__name_source_hash_spec_hash", type_="unique")
        batch.create_unique_constraint("uq_autotune_kernels__name_source_hash", ["name", "source_hash"])
        batch.drop_column("spec_hash")

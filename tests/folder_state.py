"""What a folder holds, to check that a refused or failed write left it as it was: shared by the
folder swap's tests (tests/base/test_folders.py) and the bundle export's
(tests/report/test_bundle_export.py)."""

from __future__ import annotations

import stat
from pathlib import Path


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (and the folder itself): bytes, mode, inode, mtime."""
    out = {".": (stat.S_IMODE(folder.stat().st_mode), folder.stat().st_ino)}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(folder))] = (p.read_bytes() if p.is_file() else None, stat.S_IMODE(st.st_mode),
                                           st.st_ino, st.st_mtime_ns)
    return out


def staging_left(parent: Path) -> list[str]:
    """The hidden entries of ``parent``: a staging folder (``.NAME.*.tmp``) left behind."""
    return [p.name for p in parent.iterdir() if p.name.startswith(".")]

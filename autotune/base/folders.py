"""A folder autotune writes for a user, replaced whole, the user's files in it kept.

A folder (a deployment bundle: ``autotune export NAME --bundle DIR``) is autotune's to write
where it is new (missing parent folders are made, as ``mkdir -p`` would), empty, or marked as
autotune's by a marker file the caller names and reads (a bundle's ``bundle.json``), which also
says which of its files are autotune's; any other folder is refused and left as it was
(:func:`check_folder`). Every other file in it is the user's and is kept, byte for byte; a
sub-folder of the user's, or a file of the user's where autotune would write one, is refused.

Nothing is written until every file is made (:func:`replace_folder`): they are written to a new
folder beside the target (each by :func:`autotune.base.files.write_atomically`, the user's files
hard-linked into it), which then takes the target's place in one step (``renameat2``'s exchange
where the system has it, else two renames), and the old folder is removed. A failure leaves the
target as it was, no staging folder behind, and no parent folder made. New folders and files
follow the umask; a folder written again keeps its mode.

Every refusal is one :class:`~autotune.errors.InvalidInputError`: ``cannot write <what> <folder>:
<why>``, ``what`` naming the folder's kind (``bundle``).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from autotune.base.files import write_atomically
from autotune.errors import InvalidInputError

__all__ = ["Folder", "refused", "check_folder", "replace_folder"]


@dataclass(frozen=True)
class Folder:
    """What :func:`check_folder` found at a folder: ``ours``, the names of autotune's files in it
    (``None``: the folder does not exist yet), ``theirs``, the user's, and ``missing``, the parent
    folders to make, outermost first."""

    ours: frozenset[str] | None
    theirs: frozenset[str] = frozenset()
    missing: tuple[Path, ...] = ()


def refused(directory: Path, what: str, why: str) -> InvalidInputError:
    """The one refusal of a folder: ``cannot write <what> <directory>: <why>``."""
    return InvalidInputError(f"cannot write {what} {directory}: {why}")


def check_folder(directory: Path, what: str, marker: str, owned: Callable[[Path], set[str]]) -> Folder:
    """Refuse a target that is not a new folder, an empty one, or one of autotune's: one holding
    ``marker``, whose files ``owned(directory)`` names (it raises where the marker is not
    autotune's); nothing written, nothing made.

    Raises:
        InvalidInputError: naming it and what is allowed (:func:`refused`).
    """
    if not os.path.lexists(directory):
        missing, up = [], directory.parent
        while not os.path.lexists(up) and up != up.parent:
            missing.append(up)
            up = up.parent
        if not up.is_dir():
            raise refused(directory, what, f"{up} is not a folder")
        return Folder(None, missing=tuple(reversed(missing)))
    if directory.is_symlink():
        raise refused(directory, what, "it is a symbolic link; give the folder it points to, or a new folder")
    if not directory.is_dir():
        raise refused(directory, what, f"it is a file; give a new folder or a {what}'s")
    names = sorted(p.name for p in directory.iterdir())
    if not names:
        return Folder(frozenset())
    if marker not in names:
        raise refused(directory, what, f"the folder holds other files ({', '.join(names[:3])}"
                                       f"{', ...' if len(names) > 3 else ''}); give a new folder or a {what}'s")
    ours = owned(directory) & set(names)
    theirs = frozenset(names) - ours
    for name in sorted(theirs):
        mode = (directory / name).lstat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise refused(directory, what, f"it holds {name}, which is not a file autotune wrote and cannot be "
                                           f"carried over into the new {what}; move it out, or give another folder")
    return Folder(frozenset(ours), theirs)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_folder(target: Path, files: Mapping[str, str | bytes], folder: Folder, what: str) -> None:
    """Every file of ``files`` (name -> text or bytes) in the folder ``target``, which
    :func:`check_folder` found as ``folder``, with the user's files ``folder.theirs`` kept, or
    nothing changed (module doc).

    Raises:
        InvalidInputError: a file of the user's is where one of ``files`` would go, or the folder
            cannot be written (a full disk, a failed rename); ``target`` is then as it was.
    """
    clash = sorted(folder.theirs & set(files))
    if clash:
        raise refused(target, what, f"it holds {', '.join(clash)}, which autotune did not write and the {what} "
                                    "would replace; move it out, or give another folder")
    made: list[Path] = []
    done = False
    staging: Path | None = None
    try:
        for parent in folder.missing:  # mkdir -p, each with the umask's mode
            parent.mkdir()
            made.append(parent)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
        for name, data in files.items():
            try:
                write_atomically(staging / name, data, f"{what} file {name}")
            except InvalidInputError as exc:  # named by its staging path: named here by the folder's
                raise refused(target, what, f"{name}: {str(exc).rsplit(': ', 1)[-1]}") from None
        for name in sorted(folder.theirs):  # the user's files, the same ones (hard links)
            if (target / name).is_symlink():
                os.symlink(os.readlink(target / name), staging / name)
            else:
                os.link(target / name, staging / name, follow_symlinks=False)
        keep = stat.S_IMODE(target.stat().st_mode) if folder.ours is not None else 0o777 & ~_umask()
        os.chmod(staging, keep)
        _swap(staging, target)
        done = True
    except OSError as exc:
        raise refused(target, what, exc.strerror or str(exc)) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)  # after the swap: the old folder
        if not done:
            for parent in reversed(made):
                try:
                    parent.rmdir()
                except OSError:
                    pass


def _swap(staging: Path, target: Path) -> None:
    """Put the folder ``staging`` in ``target``'s place in one step; the old ``target``, if any,
    is then at ``staging`` (for the caller to remove). Where the two cannot be exchanged at once
    (no ``renameat2``): ``target`` is renamed aside, ``staging`` renamed in (the old one renamed
    back if that fails), and the old one renamed to ``staging``."""
    if not os.path.lexists(target):
        os.rename(staging, target)
        return
    if _exchange(staging, target):
        return
    aside = staging.with_name(staging.name + ".old")
    os.rename(target, aside)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(aside, target)
        raise
    os.rename(aside, staging)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Exchange the paths ``a`` and ``b`` atomically (Linux ``renameat2(RENAME_EXCHANGE)``, glibc
    2.28 and later); ``False`` where the system or the file system does not offer it.

    Raises:
        OSError: the exchange failed for another reason.
    """
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))

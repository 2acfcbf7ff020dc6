"""Users' files: the one reader of what they give autotune, and the one writer of what it gives back.

Reading (:func:`read_text`): kernel files, ``.cu`` sources and their ``#include`` files,
search spaces, reference modules and results files to import all go through here. A path must
name an existing *regular* file (not a folder, device node, FIFO or socket: ``/dev/zero`` as a
source would never end), of at most :data:`MAX_READ_BYTES`, in UTF-8. Anything else is one
:class:`~autotune.errors.InvalidInputError` naming the file, what it is, and what is allowed;
the caller's ``what`` (``"kernel file"``, ``"source"``...) starts the message.

Writing (:func:`write_atomically`): every file autotune writes for a user (``export --out``,
``export --header``, reports' PNGs) is written to a temporary file in the target's folder,
flushed and ``fsync``-ed, then renamed over the target (``os.replace``), so that a reader sees
the old file or the new one, never half of one, and a full disk (``ENOSPC``) leaves the old file
as it was. A target that exists and is not a regular file (``/dev/full``, ``/dev/null``, a FIFO,
a folder) is refused before anything is written: renaming over it would replace a device node
with a regular file. A missing folder is refused too (nothing is created but the file).

Standard output: a target of ``-`` (or ``/dev/stdout``, which is a pipe or a terminal, not a
file) writes the data to standard output instead (:data:`STDOUT`), so that ``autotune export
--out - | jq`` works; whoever writes there says what it did on standard error.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from autotune.errors import InvalidInputError

__all__ = ["MAX_READ_BYTES", "STDOUT", "is_stdout", "read_text", "read_bytes", "write_atomically", "check_writable",
           "lock_file"]

MAX_READ_BYTES = 16 * 1024 * 1024
"""Largest file read (16 MiB): kernel files, sources and results files are far smaller."""
STDOUT = ("-", "/dev/stdout")
"""Targets that mean standard output."""


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether ``path`` means standard output (:data:`STDOUT`)."""
    return path is not None and os.fspath(path) in STDOUT


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _named(what: str, path) -> str:
    """``"kernel file /x/k.toml"``, or the path alone where ``what`` is empty."""
    return f"{what} {path}" if what else str(path)


def _reason(exc: OSError) -> str:
    return "no such file" if exc.errno == errno.ENOENT else exc.strerror or str(exc)


def read_bytes(path: str | os.PathLike[str], what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (at most :data:`MAX_READ_BYTES`).

    Raises:
        InvalidInputError: missing, unreadable, not a regular file, or too large (``what``
            names it: ``"cannot read source /x/k.cu: a folder; give a regular file"``).
    """
    file = Path(path)
    if "\0" in str(file):  # open() would raise ValueError (a TOML string may hold "\u0000")
        raise InvalidInputError(f"cannot read {_named(what, repr(str(file)))}: the path holds a NUL byte")
    try:
        with open(file, "rb", opener=_open_no_block) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InvalidInputError(f"cannot read {_named(what, file)}: {_kind(info.st_mode)}; give a regular file")
            if info.st_size > MAX_READ_BYTES:
                raise InvalidInputError(f"cannot read {_named(what, file)}: {info.st_size} bytes; allowed: at most "
                                        f"{MAX_READ_BYTES} bytes")
            data = handle.read(MAX_READ_BYTES + 1)
    except IsADirectoryError:
        raise InvalidInputError(f"cannot read {_named(what, file)}: a folder; give a regular file") from None
    except OSError as exc:
        raise InvalidInputError(f"cannot read {_named(what, file)}: {_reason(exc)}") from None
    if len(data) > MAX_READ_BYTES:  # grew while read
        raise InvalidInputError(f"cannot read {_named(what, file)}: more than {MAX_READ_BYTES} bytes")
    return data


def _open_no_block(path: str, flags: int) -> int:
    """``open`` that does not wait on a FIFO without writer (it is refused once opened)."""
    return os.open(path, flags | os.O_NONBLOCK)


def read_text(path: str | os.PathLike[str], what: str = "file") -> str:
    """The text of the regular UTF-8 file ``path`` (see :func:`read_bytes`).

    Raises:
        InvalidInputError: as :func:`read_bytes`, or not UTF-8 (naming the byte offset: a
            binary file, or text in another encoding).
    """
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"cannot read {_named(what, path)}: not UTF-8 text (byte {exc.start}); "
                                "give a UTF-8 text file") from None


def check_writable(path: str | os.PathLike[str], what: str = "output") -> Path:
    """Refuse a target that :func:`write_atomically` would refuse, before any work is done:
    an existing target that is not a regular file, or a folder that does not exist.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        InvalidInputError: naming the target and what is allowed.
    """
    target = Path(path)
    if is_stdout(path):
        return Path("-")
    if "\0" in str(target):  # os.stat would raise ValueError
        raise InvalidInputError(f"cannot write {str(target)!r} ({what}): the path holds a NUL byte")
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise InvalidInputError(f"cannot write {target} ({what}): {_reason(exc)}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise InvalidInputError(f"cannot write {target} ({what}): it is {_kind(info.st_mode)}; give the path of a "
                                "regular file (it is replaced whole) or of a new one")
    folder = target.parent
    if not folder.is_dir():
        raise InvalidInputError(f"cannot write {target} ({what}): the folder {folder} does not exist")
    return target


def write_atomically(path: str | os.PathLike[str], data: str | bytes, what: str = "output") -> Path:
    """Write ``data`` (text is written as UTF-8) to ``path`` whole or not at all; to standard
    output where ``path`` is ``-`` or ``/dev/stdout`` (:func:`is_stdout`).

    The file gets the usual mode of a new file (``0o666`` less the umask); an existing regular
    file is replaced (its mode is not kept: it is a new file).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        InvalidInputError: the target is not a regular file, its folder is missing or not
            writable, or the disk is full (``no space left on device``); the target is then
            as it was, and no temporary file is left.
    """
    target = check_writable(path, what)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if is_stdout(path):
        sys.stdout.flush()
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
        return target
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise InvalidInputError(f"cannot write {target} ({what}): {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        check_writable(target, what)  # not turned into a device or folder meanwhile
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InvalidInputError(f"cannot write {target} ({what}): {_reason(exc)}") from None
        raise
    return target


@contextlib.contextmanager
def lock_file(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the lock file ``path`` (made with its folder if missing)
    for the block: another holder (process or thread) waits until this block ends. Where it
    cannot be taken (a folder that cannot be written, no ``fcntl``) the block runs unlocked:
    for the locks whose absence costs only time or a second search (the cubin cache's builds,
    a first-sight tuning)."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock

"""Writing files safely: nothing lost, nothing clobbered.

Everything dawrap writes (checkpoints, study stores, results) goes through these helpers:

* :func:`as_path` and :func:`refuse_special` check an output path before anything is computed:
  a symlink, a device (``/dev/null``), a FIFO or a socket is refused, never replaced, and a
  file is refused where a folder is expected and vice versa;
* :func:`ensure_folder` and :func:`check_writable` create an output folder up front and prove
  that a file can be created in it, so a bad path fails before sampling, not after;
* :func:`atomic_write` writes to a unique temporary name in the target's folder (two
  processes never share one), flushes it to disk and renames it into place; the temporary
  file is removed on any failure (a full disk leaves nothing behind);
* :class:`Lock` holds an exclusive ``fcntl.flock`` lock on a lock file while a checkpoint
  folder or a study store is in use. The operating system releases it when the process dies,
  so a run killed by SIGKILL never leaves a stale lock behind.
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

try:  # POSIX; elsewhere runs are not locked against each other
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["as_path", "kind_of", "refuse_special", "ensure_folder", "check_writable",
           "atomic_write", "temporary_name", "Lock", "flock", "is_held"]


def as_path(value, argument: str) -> Path:
    """``value`` as a :class:`~pathlib.Path`, or a clear error naming ``argument``.

    An empty string is refused: ``Path("")`` is the current folder, which nobody means."""
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{argument} must be a path (str or os.PathLike), got "
                        f"{type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip() or "\x00" in text:
        raise ValueError(f"{argument} must be a non-empty path without NUL characters, "
                         f"got {text!r}")
    return Path(text)


def kind_of(path) -> str | None:
    """What ``path`` itself is (a symlink is not followed): ``None`` if nothing is there,
    else ``"file"``, ``"folder"``, ``"symlink"``, ``"device"``, ``"FIFO"`` or ``"socket"``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:  # a parent is a file: nothing can be here
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return "socket"


def refuse_special(path, argument: str, want: str) -> str | None:
    """Raise a ValueError naming ``argument`` unless ``path`` is missing or is a ``want``
    (``"file"`` or ``"folder"``); returns what is there (``None`` or ``want``).

    dawrap replaces only regular files it writes itself: a symlink could point anywhere, and a
    device or FIFO would be destroyed (or block) if written to."""
    kind = kind_of(path)
    if kind is None or kind == want:
        return kind
    if kind in ("file", "folder"):
        what = "an existing file" if kind == "file" else "an existing folder"
        raise ValueError(f"{argument}: {path} is {what}, not a {want}; give the path of a "
                         f"{want} (it is created if missing)")
    raise ValueError(f"{argument}: {path} is a {kind}, not a regular {want}; dawrap never "
                     f"writes through or replaces a {kind}: give the path of a regular {want}")


def check_writable(folder, argument: str) -> None:
    """Prove that a file can be created in ``folder`` (an existing folder) by creating and
    removing one; a ValueError naming ``argument`` otherwise. Permission bits alone would not
    tell (root ignores them; a read-only file system does not)."""
    try:
        fd, name = temporary_name(Path(folder) / "write-test")
        os.close(fd)
        os.unlink(name)
    except OSError as err:
        raise ValueError(f"{argument}: cannot write in {folder} "
                         f"({err.strerror or err}); choose a writable location") from err


def ensure_folder(path, argument: str) -> Path:
    """Create folder ``path`` if needed (with its parents) and check that it is a real folder
    in which files can be written; returns it."""
    path = as_path(path, argument)
    refuse_special(path, argument, "folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{argument}: cannot create the folder {path} "
                         f"({err.strerror or err}); choose another path") from err
    refuse_special(path, argument, "folder")  # a symlink made meanwhile, or mkdir's race
    check_writable(path, argument)
    return path


def temporary_name(target) -> tuple[int, str]:
    """Create a new, unique, hidden temporary file next to ``target``; returns its open file
    descriptor and name. Unique per process and call, so concurrent writers never collide;
    created with mode 0o666 less the umask, like any file the user writes."""
    target = Path(target)
    for _ in range(100):
        # hidden, and ending like the target: writers that choose a format by the file name
        # (matplotlib's savefig) still do
        name = target.with_name(f".tmp-{os.getpid()}-{secrets.token_hex(4)}-{target.name}")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), str(name)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(target))


def atomic_write(path, write: Callable[[str], None], argument: str,
                 overwrite: bool = True) -> None:
    """Write ``path`` all at once: ``write(temporary_path)`` fills a unique temporary file in
    the same folder, which is forced to disk and renamed to ``path``.

    A crash leaves either the old file or the new one, never a mix, and a failure (a full
    disk, an error in ``write``) removes the temporary file. Only a missing path or a regular
    file is replaced; with ``overwrite=False`` an existing file is an error (also one that
    appears while writing: the final step is a hard link, which never replaces)."""
    path = Path(path)
    refuse_special(path, argument, "file")
    if not overwrite and path.exists():
        raise FileExistsError(errno.EEXIST, f"{argument}: {path} exists; it is not "
                                            f"overwritten", str(path))
    fd, tmp = temporary_name(path)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as f:  # the data reaches the disk before the name does
            os.fsync(f.fileno())
        refuse_special(path, argument, "file")  # again: something may have appeared meanwhile
        if overwrite:
            os.replace(tmp, path)
        else:
            _place_new(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(path.parent)


def _place_new(tmp: str, path: Path) -> None:
    """Give ``tmp`` the name ``path``, which must not exist (FileExistsError otherwise)."""
    try:
        os.link(tmp, path)  # atomic, and never replaces
    except FileExistsError:
        raise
    except OSError:
        # No hard links on this file system (some network or FUSE mounts): claim the name
        # exclusively, then replace only the empty file just created
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.replace(tmp, path)
    else:
        os.unlink(tmp)


def _sync_folder(folder: Path) -> None:
    """Make a rename durable (best effort: not every system can fsync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class Lock:
    """An exclusive lock on ``path`` (a lock file, created if missing) for one run.

    ``what`` names the thing protected in the error a second run gets, e.g. ``"checkpoint
    folder /x"``. The lock is ``fcntl.flock``: the operating system drops it when the process
    ends however it ends, so a dead run never blocks the next one. Locks taken through
    different opens conflict even within one process, so two runs in threads are told apart
    too. The lock file holds the owner's process id, for the message; it is left in place
    (removing it would let two runs lock two different files of the same name).

    Use as a context manager: ``with Lock(path, what): ...``.
    """

    def __init__(self, path, what: str, advice: str = "wait for it to finish, or use another "
                                                       "path"):
        self.path, self.what, self.advice = Path(path), what, advice
        self._fd = None

    def acquire(self) -> "Lock":
        if fcntl is None:  # pragma: no cover - no flock on this platform
            return self
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.path, flags, 0o666)
        except OSError as err:
            raise ValueError(f"{self.what}: cannot create the lock file {self.path} "
                             f"({err.strerror or err})") from err
        try:
            flock(fd, self.what, self.advice, owner=True)
        except BaseException:
            os.close(fd)
            raise
        with contextlib.suppress(OSError):  # who holds it, for a second run's message
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing drops the flock

    def __enter__(self) -> "Lock":
        return self.acquire()

    def __exit__(self, *exc) -> bool:
        self.release()
        return False


def is_held(path, what: str, advice: str = "wait for it to finish, or use another path") \
        -> None:
    """Raise the error :class:`Lock` would if another run holds ``path`` (checked up front,
    before any work; the run itself takes the lock later)."""
    if Path(path).parent.is_dir() and kind_of(path) in ("file", None):
        Lock(path, what, advice).acquire().release()


def flock(fd: int, what: str, advice: str, owner: bool = False) -> None:
    """Lock open file ``fd`` exclusively (``fcntl.flock``, without waiting); a ValueError
    saying another run uses ``what`` if it is taken (with its process id when ``owner``:
    the file then holds it)."""
    if fcntl is None:  # pragma: no cover - no flock on this platform
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            pid = _read_small(fd) if owner else ""
            who = f" (process {pid})" if pid.isdigit() else ""
            raise ValueError(f"another run{who} is using the {what}: {advice}") from None
        raise ValueError(f"{what}: cannot lock it ({err.strerror or err})") from err


def _read_small(fd: int) -> str:
    with contextlib.suppress(OSError):
        return os.pread(fd, 32, 0).decode(errors="replace").strip()
    return ""

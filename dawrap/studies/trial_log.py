"""A study's completed trials, kept in a JSON-lines file so a stopped study loses at most the
trials in progress: the first line holds the settings, each later line one trial.

The store is locked (``fcntl.flock`` on the file itself) while a study uses it, so a second
study on the same file is refused instead of recomputing every trial beside the first; the
lock dies with its process. Everything read back is checked: a damaged header or row, or two
different results for one trial, is a ValueError naming the file and the line. Only a last
line cut short (a study killed while appending) is expected, and it is dropped.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from .._files import as_path, atomic_write, check_writable, flock, refuse_special

__all__ = ["Store"]

_BUSY = ("wait for it to finish, or give this study another store (a study that died "
         "releases it by itself)")
#: Largest header read before the file is known to be a store (an unrelated large file is
#: refused without being read whole).
_MAX_HEADER = 1 << 20


def _canonical(row: dict) -> str:
    """One text per row content, to tell identical duplicate rows from conflicting ones
    (NaN != NaN, so comparing parsed rows would not do)."""
    return json.dumps(row, sort_keys=True)


class Store:
    """An open, locked study store at ``path`` for a study with ``settings``.

    Parameters
    ----------
    path : str or path
        The JSON-lines file: created with a settings header if missing (or empty).
    settings : dict
        The study's settings; a store holding another study's is an error, unless
        ``replace`` is true, when its content is discarded for this study.
    check_row : callable, optional
        ``check_row(row) -> str | None``: why a parsed trial row is invalid (None if valid).
    argument : str
        How the path is named in errors (``"store"``).

    ``rows`` holds the completed trials by index. Use as a context manager; the lock is held
    until it exits.
    """

    def __init__(self, path, settings: dict, check_row: Callable[[dict], str | None] =
                 lambda row: None, replace: bool = False, argument: str = "store"):
        self.path = as_path(path, argument)
        self.settings, self.check_row, self.argument = settings, check_row, argument
        self._header = json.dumps({"settings": settings}) + "\n"
        self._fd = None
        self.rows = self._open(replace)

    # -- opening -------------------------------------------------------------------------
    def _open(self, replace: bool) -> dict:
        path = self.path
        if refuse_special(path, self.argument, "file") is None:
            folder = path.parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ValueError(f"{self.argument}: cannot create the folder {folder} "
                                 f"({err.strerror or err})") from err
            refuse_special(folder, self.argument, "folder")
            check_writable(folder, self.argument)
            try:  # header and file appear together (a link never replaces a file)
                atomic_write(path, lambda tmp: Path(tmp).write_bytes(self._header.encode()),
                             self.argument, overwrite=False)
            except FileExistsError:
                pass  # another study created it meanwhile: the lock below decides
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_BINARY", 0))  # Windows: no newline translation
        except OSError as err:
            raise ValueError(f"{self.argument}: cannot open {path} for appending "
                             f"({err.strerror or err})") from err
        try:
            # What was opened, not what the name pointed to a moment ago
            refuse_special(path, self.argument, "file")
            if not _is_regular(fd):
                raise ValueError(f"{self.argument}: {path} is not a regular file")
            flock(fd, f"study store {path}", _BUSY)
            self._fd = fd
            return self._load(replace)
        except BaseException:
            self._fd = None
            os.close(fd)  # drops the lock, if it was taken
            raise

    def _read(self) -> bytes:
        size = os.fstat(self._fd).st_size
        head = _read_at(self._fd, min(size, _MAX_HEADER), 0)
        if size > len(head):  # a large file: is it a store at all, before reading it whole?
            first = head.split(b"\n", 1)[0]
            if len(first) == len(head):
                self._corrupt(1, "no header line in its first megabyte")
            try:
                json.loads(first.decode())
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                self._corrupt(1, f"not JSON: {err}")
        return head + _read_at(self._fd, size - len(head), len(head))

    def _load(self, replace: bool) -> dict:
        data = self._read()
        header = self._header.encode()
        if not data or (b"\n" not in data and header.startswith(data)):
            # Empty (left by a crash before the header, or made by the user), or our own
            # header cut short: (re)write the header in place, nothing else is there.
            self._rewrite(header)
            return {}
        rows, good, _ = self._parse(data)
        if rows is None:  # another study's store
            if not replace:
                saved = json.loads(data.split(b"\n", 1)[0])["settings"]
                raise ValueError(f"store {self.path} holds a study with other settings: "
                                 f"{saved}; use a new file for this one (the command line: "
                                 f"--force discards it)")
            self._rewrite(header)
            return {}
        if good < len(data):
            # A row cut short by a study stopped mid-write: dropped (it is run again), so that
            # new rows do not follow it on the same line
            os.ftruncate(self._fd, good)
            os.fsync(self._fd)
        return rows

    def _rewrite(self, content: bytes) -> None:
        os.ftruncate(self._fd, 0)
        _write_all(self._fd, content)
        os.fsync(self._fd)

    def _corrupt(self, line: int, why: str):
        if line == 1:
            raise ValueError(f"{self.argument}: {self.path} line 1 is not a dawrap study "
                             f"header ({why}); this is not a study store, or a damaged one: "
                             f"give another path, or delete the file to start afresh")
        raise ValueError(f"{self.argument}: {self.path} line {line} is not a valid trial "
                         f"({why}); the store is damaged: delete that line (the trial is run "
                         f"again) or the whole file (the study starts afresh)")

    def _parse(self, data: bytes):
        """``(rows, bytes of complete content, lines)`` of a store's content; ``rows`` is
        None when the header holds other settings."""
        lines = data.split(b"\n")
        *complete, tail = lines  # tail: the part after the last newline ("" if none)
        try:
            header = json.loads(lines[0].decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            self._corrupt(1, f"not JSON: {err}")
        if not isinstance(header, dict) or not isinstance(header.get("settings"), dict):
            self._corrupt(1, "no settings")
        if not complete:  # a header without its newline
            self._corrupt(1, "the line is not complete")
        if header["settings"] != self.settings:
            return None, 0, 0
        rows, seen = {}, {}
        good = len(data) - len(tail)
        for number, line in enumerate(complete[1:], start=2):
            if not line.strip():
                continue
            row, why = self._row(line)
            if why is not None:
                self._corrupt(number, why)
            self._add(rows, seen, row, number)
        if tail:
            row, why = self._row(tail)
            if why is None:  # complete but for its newline: keep it, and end the line
                self._add(rows, seen, row, len(lines))
                if self._fd is not None:
                    _write_all(self._fd, b"\n")
                good = len(data) + 1
        return rows, good, len(lines)

    def _row(self, line: bytes):
        try:
            row = json.loads(line.decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            return None, f"not JSON: {err}"
        if not isinstance(row, dict):
            return None, "not a JSON object"
        trial = row.get("trial")
        if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
            return None, f"trial must be an index >= 0, got {trial!r}"
        why = self.check_row(row)
        return (row, None) if why is None else (None, why)

    def _add(self, rows: dict, seen: dict, row: dict, number: int) -> None:
        trial, text = row["trial"], _canonical(row)
        if trial in rows:
            if seen[trial][1] != text:
                raise ValueError(f"{self.argument}: {self.path} holds two different results "
                                 f"for trial {trial}, on lines {seen[trial][0]} and {number} "
                                 f"(two studies wrote it at once?); delete the wrong line, or "
                                 f"the whole file to start afresh")
            return  # the same result twice: harmless, read once
        rows[trial], seen[trial] = row, (number, text)

    # -- while the study runs ------------------------------------------------------------
    def append(self, row: dict) -> None:
        """Append one row and force it to disk; on failure (a full disk) the file is cut back
        to its last complete row and an OSError naming the store is raised."""
        line = (json.dumps(row) + "\n").encode()
        size = os.fstat(self._fd).st_size
        try:
            _write_all(self._fd, line)
            os.fsync(self._fd)
        except OSError as err:
            try:  # a half-written row would be a damaged line to the next reader
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise OSError(err.errno, f"could not append trial {row.get('trial')} to the "
                                     f"study store {self.path}: {err.strerror or err}") \
                from err
        self.rows[row["trial"]] = row

    def verify(self, rows: dict, trials: int) -> None:
        """Read the file again and check it holds exactly ``rows`` for trials ``0 ..
        trials - 1``: results are never written from a store that disagrees with them (a
        file replaced, edited or removed while the study ran)."""
        try:
            same = os.path.samestat(os.stat(self.path), os.fstat(self._fd))
        except OSError:
            same = False
        if not same:
            raise ValueError(f"{self.argument}: {self.path} was removed or replaced while the "
                             f"study ran; run the study again to rebuild it")
        data = self._read()
        fd, self._fd = self._fd, None  # parse without repairing anything
        try:
            on_disk, _, _ = self._parse(data)
        finally:
            self._fd = fd
        if on_disk is None:
            raise ValueError(f"{self.argument}: {self.path} now holds another study's header")
        for t in range(trials):
            if t not in on_disk:
                raise ValueError(f"{self.argument}: {self.path} lacks trial {t}, which this "
                                 f"study completed; the store was changed while it ran: run "
                                 f"the study again")
            if _canonical(on_disk[t]) != _canonical(rows[t]):
                raise ValueError(f"{self.argument}: {self.path} holds another result for trial "
                                 f"{t} than this study computed; the store was changed while "
                                 f"it ran: delete it and run the study again")

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # drops the lock

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def _read_at(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes from ``offset`` (fewer at the end of the file). Seek and read, not
    ``os.pread``, which Windows lacks; appends are unaffected (``O_APPEND``)."""
    os.lseek(fd, offset, os.SEEK_SET)
    parts = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

"""A small progress line for long runs: stderr, only on a terminal unless asked for."""
from __future__ import annotations

import sys
import threading
import time

__all__ = ["Progress"]


class Progress:
    """Report ``sum(done) / total`` iterations on stderr every ``interval`` seconds.

    ``enabled=None`` shows it only when stderr is a terminal, so logs and CI stay clean.
    Use as a context manager; chains write their iteration counts into ``done[c]`` (a study
    counts trials instead: ``unit``).
    """

    def __init__(self, label: str, chains: int, total: int, enabled: bool | None = None,
                 interval: float = 0.5, stream=None, unit: str = "iterations"):
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)()
        self.enabled = isatty if enabled is None else bool(enabled)
        self.label, self.total, self.interval = label, total * chains, interval
        self.unit = unit
        self.done = [0] * chains
        self._stop = threading.Event()
        self._thread = None
        self._began = 0.0

    def __enter__(self):
        if self.enabled:
            self._began = time.perf_counter()
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._write(final=True)
        return False

    def _loop(self):
        while not self._stop.wait(self.interval):
            self._write()

    def _write(self, final: bool = False):
        done = sum(self.done)
        elapsed = time.perf_counter() - self._began
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        line = (f"\r{self.label}: {done}/{self.total} {self.unit} "
                f"({100 * done / max(self.total, 1):.0f}%), {rate:.3g} {self.unit}/s, "
                f"{'done' if final else f'{eta:.0f} s left'}   ")
        self.stream.write(line + ("\n" if final else ""))
        self.stream.flush()

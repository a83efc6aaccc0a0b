"""Whether a run's arrays fit in memory, checked before anything is allocated.

Each method estimates what it allocates (:meth:`dawrap.methods.Method.memory_needed`, a list
of :class:`MemoryPart`); :func:`check_memory` compares the total with what the system says is
available (:func:`available_memory`) and refuses, naming the arguments, a run that cannot fit.
Without it, ``n = 2**31`` ran until the kernel killed the process at 22 GB.

Examples
--------
>>> from dawrap.runner.memory import MemoryPart, check_memory
>>> check_memory([MemoryPart(8e3, "the draws (1000 values x 8 bytes)")], chains=1)
>>> check_memory([MemoryPart(1e30, "the draws (10^29 values x 8 bytes)")],
...              chains=1)                               # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: this run would need about 1e+21 GB of memory (1e+21 GB for the draws ...) but about ...
"""
from __future__ import annotations

import os
from typing import NamedTuple

__all__ = ["MemoryPart", "available_memory", "check_memory", "CHAIN_OVERHEAD"]

#: Bytes per chain besides its arrays: its generator, seed sequence and small state.
CHAIN_OVERHEAD = 2048


class MemoryPart(NamedTuple):
    """One array a run allocates: its size and how it was counted (shown in the refusal)."""
    nbytes: float
    what: str


def available_memory() -> int | None:
    """Bytes this process can still allocate without swapping or being killed, as far as the
    system says: Linux's ``MemAvailable`` (else the free physical pages), capped by a cgroup
    (container) limit minus its usage. ``None`` when none of these can be read.

    Examples
    --------
    >>> from dawrap.runner.memory import available_memory
    >>> have = available_memory()
    >>> have is None or have > 0
    True
    """
    found = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            try:
                found.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
            except (ValueError, OSError, AttributeError):
                pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit) as f, open(usage) as g:
                found.append(int(f.read().strip()) - int(g.read().strip()))
        except (OSError, ValueError):  # absent, or "max": no limit
            pass
    return min(found) if found else None


def gigabytes(nbytes: float) -> str:
    """``nbytes`` as ``"1.5 GB"`` (three significant digits)."""
    return f"{nbytes / 1e9:.3g} GB"


def check_memory(parts: list[MemoryPart], chains: int, advice: str = "") -> None:
    """Refuse a run whose ``parts`` plus :data:`CHAIN_OVERHEAD` per chain exceed the
    available memory: a ValueError naming each part and what is available, ending with
    ``advice``. Nothing happens when the memory cannot be read.

    Parameters
    ----------
    parts : list of MemoryPart
        What the method allocates (:meth:`dawrap.methods.Method.memory_needed`).
    chains : int
        The number of chains.
    advice : str
        Appended to the refusal (e.g. a method that needs less).

    Examples
    --------
    >>> from dawrap.runner.memory import MemoryPart, check_memory
    >>> check_memory([MemoryPart(8e6, "the draws")], chains=4)   # 8 MB: fits
    """
    need = sum(part.nbytes for part in parts) + CHAIN_OVERHEAD * chains
    have = available_memory()
    if have is None or need <= have:
        return
    shown = " and ".join(f"{gigabytes(part.nbytes)} for {part.what}" for part in parts)
    raise ValueError(f"this run would need about {gigabytes(need)} of memory ({shown}) but "
                     f"about {gigabytes(max(have, 0))} is available: reduce n, chains or "
                     f"draws{advice}")

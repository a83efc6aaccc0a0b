"""One chain on many cores: where a chain's groups of records run.

``dw.sample(..., method=dw.Record(groups=dw.parallel.Threads(4)))`` splits each chain's
records into the groups of a :class:`Partition` (the option's, or the model's own, as the
census and small-area models derive) and sweeps them at once (:mod:`dawrap.samplers.parallel`
for the mathematics, :mod:`dawrap.runner.grouped` for the iteration). The option says where:

* :class:`Threads`: threads of this process;
* :class:`Dask`: the workers of a ``dask.distributed`` cluster, each holding its groups'
  records for the whole run.

Each group has its own generator, and the chain folds the groups' results in group order, so
the draws for a seed are the same on any backend and any number of threads or workers (and
differ from the serial sweep's: same posterior). A checkpoint written on one resumes on the
other.

**A backend of your own** (processes, MPI, Ray) is a backend object with the five members
:mod:`dawrap.runner.backends` lists, and an option object that builds it: any object with

* ``partition``: a :class:`Partition` or None (the model's own);
* ``local``: whether the backend's workers share this process's memory (then theta's kernel
  and a move without a group form may read the records);
* ``chains_in_turn``: whether the chains run one after another (each using every worker);
* ``backend(chain) -> backend``: a fresh backend for chain number ``chain``;
* ``attrs() -> dict``: what the result's attributes say of it

(:func:`check_option` checks them). The docs' "Extending" pages build one step by step.

Examples
--------
>>> import dawrap as dw
>>> dw.parallel.Threads(2)
Threads(2)
>>> dw.parallel.Threads(0)
Traceback (most recent call last):
...
ValueError: Threads: threads must be an integer >= 1, got 0
"""
from __future__ import annotations

import dataclasses
import math
import numbers

from ._checks import MAX_COUNT, as_count
from .samplers.parallel import Partition

__all__ = ["Threads", "Dask", "Partition", "check_option"]

#: What an option object must have (module docstring).
OPTION_MEMBERS = ("partition", "local", "chains_in_turn", "backend", "attrs")


def check_option(option) -> None:
    """Check that ``option`` can choose where a chain's groups run (module docstring): a
    TypeError naming what it lacks.

    Examples
    --------
    >>> import dawrap as dw
    >>> dw.parallel.check_option(dw.parallel.Threads(2))
    >>> dw.parallel.check_option(4)   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: groups must be dw.parallel.Threads(...), dw.parallel.Dask(...) or an option ...
    """
    missing = [name for name in OPTION_MEMBERS if not hasattr(option, name)]
    if not missing and not (callable(option.backend) and callable(option.attrs)):
        missing = ["a callable backend and attrs"]
    if missing:
        raise TypeError(f"groups must be dw.parallel.Threads(...), dw.parallel.Dask(...) or an "
                        f"option object with {', '.join(OPTION_MEMBERS)}; "
                        f"{type(option).__name__} lacks {', '.join(missing)}")
    _check_partition(option.partition, type(option).__name__)


def _check_partition(partition, owner: str) -> None:
    if partition is not None and not isinstance(partition, Partition):
        raise TypeError(f"{owner}: partition must be a dawrap.parallel.Partition, got "
                        f"{type(partition).__name__}")


@dataclasses.dataclass(frozen=True)
class Threads:
    """Sweep each chain's groups on ``threads`` threads of this process.

    Parameters
    ----------
    threads : int
        Threads per chain (at most one per group is used; ``Threads(1)`` gives the grouped
        chain's draws on one thread).
    partition : Partition, optional
        The groups; default: the model's own (``Model(partition=...)``).

    Notes
    -----
    Needs a mechanism whose statistic is declared sparse (:func:`dawrap.declare_sparse`).
    Theta's kernel and a model's move without a group form see the whole database, as in the
    serial chain.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import small_area
    >>> model = small_area.model([3, 2], 2)
    >>> mech = small_area.discrete_gaussian([0, 0], 2, rho=(0.5, 0.5))
    >>> s_dp = mech.release(small_area.records([3, 2], [0, 1, 1, 0, 1]), seed=0)
    >>> idata = dw.sample(model, mech, s_dp, 5, method=dw.Record(groups=dw.parallel.Threads(2)),
    ...                   draws=50, tune=50, chains=1, seed=0, progress=False)
    >>> dw.diagnostics.group(idata, "posterior").attrs["threads"]
    2
    """

    threads: int = 1
    partition: Partition | None = None

    #: The chains run at once, as many as ``dw.sample(cores=...)`` allows.
    chains_in_turn = False
    #: The records stay in this process (theta's kernel may read them).
    local = True

    def __post_init__(self):
        object.__setattr__(self, "threads", as_count(self.threads, "Threads: threads",
                                                     maximum=MAX_COUNT))
        _check_partition(self.partition, "Threads")

    def backend(self, chain: int):
        """A fresh threads backend for chain ``chain`` (:mod:`dawrap.runner.backends`)."""
        from .runner.backends.threads import ThreadsBackend

        return ThreadsBackend(self.threads)

    def attrs(self) -> dict:
        """What the result's attributes say of it."""
        return {"threads": self.threads}

    def __repr__(self) -> str:
        return f"Threads({self.threads}{', partition=...' if self.partition else ''})"


@dataclasses.dataclass(frozen=True)
class Dask:
    """Sweep each chain's groups on the workers of a dask cluster.

    Every worker holds the records of its groups for the whole run (:mod:`dawrap.runner.
    backends.dask`); per sweep only theta, the shared cells' pieces and the groups' cell
    totals move. The chains run one after another, each on every worker.

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster's client.
    partition : Partition, optional
        The groups; default: the model's own (``Model(partition=...)``).
    timeout : float
        Seconds to wait for the workers' answer to one call (a sweep of their groups, a
        recount, a checkpoint's records; the chain's start and each kind of call's first,
        which compile code on the workers, wait at least 600 s). A worker that does not
        answer in time, hung rather than lost (a deadlock, a stopped process, a machine
        swapping), stops the run with a ``RuntimeError`` naming it; the checkpoint folder
        keeps the last checkpoint written. Default 600.

    Notes
    -----
    The model and mechanism reach the workers by their :func:`dawrap.recipe`, so their
    factories must be importable there; theta's kernel must read the records only through
    ``stats``; ``interweave`` (which moves every record with theta) is refused; a model's
    move without a group form (:mod:`dawrap.samplers.group_moves`) is refused, naming the
    move and the setting that turns it off (without it the chain would be another chain than
    on threads). The census model's moves run in the groups, on the workers, except the pair
    move where the shared cells' pieces are pinned.

    Examples
    --------
    >>> import dawrap as dw
    >>> dw.parallel.Dask("not a client")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: dw.parallel.Dask: client must be a dask.distributed.Client ..., got str
    """

    client: object
    partition: Partition | None = None
    timeout: float = 600.0

    #: The chains run one after another, each on every worker (its records scattered when
    #: it begins).
    chains_in_turn = True
    #: The records live on the workers.
    local = False

    def __post_init__(self):
        from .runner.backends.dask import check_client

        check_client(self.client)
        _check_partition(self.partition, "Dask")
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or \
                not 0 < timeout < math.inf:
            raise ValueError(f"Dask: timeout must be a number of seconds > 0, got "
                             f"{timeout!r}")

    def backend(self, chain: int):
        """A dask backend for chain ``chain`` (:mod:`dawrap.runner.backends`)."""
        from .runner.backends.dask import DaskBackend

        return DaskBackend(self.client, self.timeout, chain)

    def attrs(self) -> dict:
        """What the result's attributes say of it."""
        return {"executor": "dask"}

    def __repr__(self) -> str:
        return f"Dask({self.client!r}{', partition=...' if self.partition else ''})"

"""Sampling methods as objects: each carries and validates its own options and runs itself.

``dw.sample(model, mech, s_dp, n, method=dw.Record(interweave=True, sweeps=2))``: the method
object holds what applies to that method only (numpyro's ``MCMC(kernel, ...)`` shape), and
:func:`dawrap.sample` what every method shares (draws, chains, seed, ...). The names
``"record"``, ``"suffstat"``, ``"naive"``, ``"nonprivate"`` and ``"ops"`` are shorthands:
``dw.sample(..., method="record", interweave=True)`` builds ``Record(interweave=True)``.

Examples
--------
A method object, or its name with its options: the same run.

>>> import numpy as np
>>> import dawrap as dw
>>> from dawrap.models import beta_binomial
>>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
>>> small = dict(draws=200, tune=100, chains=1, seed=0, progress=False)   # a quick run
>>> a = dw.sample(model, mech, 312.4, 1000, method=dw.Record(sweeps=2), **small)
>>> b = dw.sample(model, mech, 312.4, 1000, method="record", sweeps=2, **small)
>>> bool(np.array_equal(dw.diagnostics.group(a, "posterior")["p"],
...                     dw.diagnostics.group(b, "posterior")["p"]))
True
"""
from __future__ import annotations

import dataclasses
import numbers
import warnings
from typing import ClassVar, NamedTuple

import numpy as np

from ._checks import MAX_COUNT, as_choice, as_count
from .mechanisms import Mechanism
from .model import Model
from .runner.memory import MemoryPart
from .samplers.output import Output

__all__ = ["Method", "Record", "Suffstat", "Naive", "NonPrivate", "OPS", "RunOptions", "as_method",
           "METHODS"]

class RunOptions(NamedTuple):
    """What ``dw.sample`` validated for every method, handed to :meth:`Method.run`."""
    draws: int
    tune: int
    keep_stats: bool
    cores: int
    init_theta: object
    progress: bool | None
    seed_entropy: str


@dataclasses.dataclass(frozen=True)
class Method:
    """A sampling method: options in the fields, :meth:`prepare` to resolve choices that
    depend on the problem, :meth:`run` to sample."""

    name: ClassVar[str] = ""
    #: Whether the method samples from the release ``s_dp`` (else from ``confidential``).
    uses_release: ClassVar[bool] = True
    #: Options of earlier versions the method converts (init-only, with a FutureWarning).
    former_options: ClassVar[tuple] = ()
    #: Whether ``dw.sample(init_theta=...)`` applies.
    takes_init_theta: ClassVar[bool] = False

    def prepare(self, model: Model, mechanism: Mechanism, n: int, s_dp=None) -> "Method":
        """The method with every automatic choice made for this problem (default: itself);
        ``s_dp`` is the release (``None`` where it is not known)."""
        return self

    def run(self, model: Model, mechanism: Mechanism, s_dp, n: int, rngs: list,
            shared: RunOptions) -> Output:  # pragma: no cover - abstract
        raise NotImplementedError

    def attrs(self) -> dict:
        """The options stored in the result's attributes."""
        return {}

    #: Sample statistics kept per draw (``sample_stats``), for :meth:`memory_needed`.
    stats_per_draw: ClassVar[int] = 1

    def memory_needed(self, model: Model, mechanism: Mechanism, n: int, draws: int,
                      chains: int, cores: int, keep_stats: bool) -> list[MemoryPart]:
        """What the run allocates that grows with its arguments, 8 bytes a float, as named
        parts (:func:`dawrap.runner.memory.check_memory` compares them with the memory
        available before anything is allocated): every method keeps ``chains x draws``
        draws of theta and its sample statistics (and of the statistic with
        ``keep_stats``), twice (the traces and the stacked output).

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
        >>> [part.nbytes for part in dw.Suffstat().memory_needed(model, mech, n=10 ** 9,
        ...                                                        draws=1000, chains=4,
        ...                                                        cores=2, keep_stats=False)]
        [128000]
        """
        per_draw = model.theta_size + self.stats_per_draw + (mechanism.size if keep_stats
                                                              else 0)
        floats = 2 * chains * draws * per_draw
        return [MemoryPart(8 * floats, f"the draws (chains={chains} x draws={draws} x "
                                       f"{per_draw} values x 8 bytes, twice)")]


def _groups_of_old_options(groups, threads, partition, executor, worker_timeout):
    """``groups`` from dawrap 0.2's ``threads``, ``partition``, ``executor`` and
    ``worker_timeout`` (a FutureWarning saying what to write instead)."""
    import warnings

    from .parallel import Dask, Threads

    if groups is not None:
        raise ValueError("groups replaces threads, partition, executor and worker_timeout: "
                         "pass only groups=dw.parallel.Threads(...) or dw.parallel.Dask(...)")
    if executor is not None and threads is not None:
        raise ValueError("executor and threads are two ways to sweep a chain's groups: pass "
                         "groups=dw.parallel.Dask(client) or groups=dw.parallel.Threads(k)")
    if executor is not None:
        new = Dask(executor, partition, 600.0 if worker_timeout is None else worker_timeout)
        said = "groups=dw.parallel.Dask(client, partition=..., timeout=...)"
    elif threads is not None:
        if worker_timeout is not None:
            raise ValueError("worker_timeout is for a dask cluster: "
                             "groups=dw.parallel.Dask(client, timeout=...)")
        new, said = Threads(threads, partition), "groups=dw.parallel.Threads(k, partition=...)"
    else:
        raise ValueError("partition is for a chain's groups: pass "
                         "groups=dw.parallel.Threads(k, partition=...) or "
                         "dw.parallel.Dask(client, partition=...)")
    warnings.warn(f"dw.Record(threads=, partition=, executor=, worker_timeout=) are replaced by "
                  f"{said}", FutureWarning, stacklevel=4)
    return new


@dataclasses.dataclass(frozen=True)
class Record(Method):
    """The exact record-level sampler (Ju et al. 2022), :mod:`dawrap.samplers.record`.

    Parameters
    ----------
    interweave : bool or int, optional
        Non-centred theta steps per iteration (:mod:`dawrap.samplers.interweave`; needs
        ``Model(noncentred=...)``): ``True`` for the default number, an integer for that
        many, ``False`` or 0 for none; ``None`` (default) turns it on where the estimated
        fraction of missing information is at least 0.3 (always for a release that is not
        the statistic plus noise, ``mechanism.additive`` false: a selection among
        candidates), or where the release is explained
        by separate modes of theta (:mod:`dawrap.runner.modes`), unless the model has its own
        records move (``Model(records_move=...)``): the chain has one move slot, which the
        automatic choice leaves to the model's move, and ``True`` takes (with a warning).
    jumps : bool, optional
        After each non-centred step, an independence proposal from a Gaussian mixture over
        the modes the release allows, which carries theta and every record from one mode
        to another (needs ``interweave``). ``None`` (default): on where the release-weighted
        prior draws separate into modes.
    sweeps : int
        Record sweeps per theta update.
    scan : {"systematic", "random"}
        Visit the records in order, or ``n`` records drawn at random per sweep.
    init_x : array_like, optional
        Initial ``(n, record_size)`` database (default: ``n`` draws from ``f(. | theta)``).
    checkpoint, resume : path, optional
        Folder to checkpoint every chain's complete state to every ``checkpoint_every``
        iterations; folder of a run to continue (bit-identical to an uninterrupted run).
    databases : int
        Keep this many imputed confidential databases per chain, at kept draws evenly
        spaced (the last draw of each of ``databases`` equal blocks of draws), in the
        result's group ``imputed_databases`` (variables ``x``, ``(chain, database, n,
        record_size)``, and ``draw``, the draw each was taken at): the multiple imputations
        behind :func:`dawrap.studies.synthetic.datasets`. Not with ``checkpoint`` or
        ``resume`` (a checkpoint does not hold them). Default 0: none.
    groups : dawrap.parallel.Threads or dawrap.parallel.Dask, optional
        Sweep each chain's records in groups (:mod:`dawrap.parallel`): on threads of this
        process (``dw.parallel.Threads(4)``) or on the workers of a dask cluster
        (``dw.parallel.Dask(client)``). The records are split into groups touching disjoint
        released cells (the option's ``partition``, or the model's own), each group swept
        with its own generator, so the draws for a seed are the same on any backend and any
        number of threads or workers. Default None: the serial sweep (other draws for the
        same seed, same posterior). Needs a mechanism whose statistic is declared sparse
        (:func:`dawrap.declare_sparse`).
    threads, partition, executor, worker_timeout
        The options of dawrap 0.2 that ``groups`` replaces (a ``FutureWarning``):
        ``threads=k, partition=p`` is ``groups=dw.parallel.Threads(k, partition=p)``,
        ``executor=client, worker_timeout=t`` is ``groups=dw.parallel.Dask(client,
        timeout=t)``.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> idata = dw.sample(model, mech, 312.4, 1000, method=dw.Record(sweeps=2),
    ...                   draws=200, tune=100, chains=1, seed=0, progress=False)
    >>> dw.diagnostics.group(idata, "posterior").attrs["sweeps"]
    2
    >>> dw.Record(scan="sideways")
    Traceback (most recent call last):
    ...
    ValueError: scan must be 'systematic' or 'random', got 'sideways'
    """

    name: ClassVar[str] = "record"
    takes_init_theta: ClassVar[bool] = True
    former_options: ClassVar[tuple] = ("threads", "partition", "executor", "worker_timeout")
    interweave: bool | int | None = None
    jumps: bool | None = None
    sweeps: int = 1
    scan: str = "systematic"
    init_x: object = None
    checkpoint: object = None
    checkpoint_every: int = 1000
    resume: object = None
    databases: int = 0
    groups: object = None
    # dawrap 0.2's options, which groups replaces (converted with a FutureWarning)
    threads: dataclasses.InitVar[int | None] = None
    partition: dataclasses.InitVar[object] = None
    executor: dataclasses.InitVar[object] = None
    worker_timeout: dataclasses.InitVar[float | None] = None

    def __post_init__(self, threads=None, partition=None, executor=None,
                      worker_timeout=None):
        object.__setattr__(self, "sweeps",
                           as_count(self.sweeps, "sweeps", maximum=MAX_COUNT))
        object.__setattr__(self, "databases", as_count(self.databases, "databases", minimum=0,
                                                       maximum=MAX_COUNT))
        if self.databases and (self.checkpoint is not None or self.resume is not None):
            raise ValueError("databases cannot be kept with checkpoint or resume: a checkpoint "
                             "holds a chain's current database only. Run without them, or "
                             "keep no databases")
        object.__setattr__(self, "checkpoint_every",
                           as_count(self.checkpoint_every, "checkpoint_every",
                                    maximum=MAX_COUNT))
        as_choice(self.scan, "scan", ("systematic", "random"))
        if any(v is not None for v in (threads, partition, executor, worker_timeout)):
            object.__setattr__(self, "groups", _groups_of_old_options(
                self.groups, threads, partition, executor, worker_timeout))
        from .parallel import check_option

        if self.groups is not None:
            check_option(self.groups)
            if self.interweave and not self.groups.local:
                raise ValueError(f"interweave moves every record with theta, which "
                                 f"{self.groups!r} keeps on its workers: pass "
                                 f"interweave=False with it")
        iw = self.interweave
        if iw is not None and not isinstance(iw, (bool, np.bool_)) and not (
                isinstance(iw, numbers.Integral) and iw >= 0):
            raise TypeError(f"interweave must be None, True, False or a number of non-centred "
                            f"steps per iteration (an integer >= 0), got {iw!r}")
        if iw is not None and not isinstance(iw, (bool, np.bool_)) and iw > MAX_COUNT:
            raise ValueError(f"interweave must be at most 2**53 non-centred steps per "
                             f"iteration, got {iw}")
        if self.jumps is not None and not isinstance(self.jumps, (bool, np.bool_)):
            raise TypeError(f"jumps must be None, True or False, got {self.jumps!r}")

    def prepare(self, model, mechanism, n, s_dp=None):
        from .runner.information import missing_information
        from .runner.modes import landscape
        from .samplers.interweave import AUTO_THRESHOLD, DEFAULT_STEPS

        def modes():
            # The release's modes, where the move could use them (cached: computed once).
            if model.noncentred is None or s_dp is None:
                return None
            return landscape(model, mechanism, s_dp, n)

        iw = self.interweave
        if iw is None and self.groups is not None and not self.groups.local:
            iw = 0  # the move needs every record on the client (the records are on a cluster)
        if iw is None:
            # Where the release is explained by separate modes, the move (with its jumps) is
            # the only kernel that crosses between them, whatever the missing information.
            # A model's own records move holds the one move slot the non-centred move would
            # take: the automatic choice keeps the move the model's author wrote.
            # A release that is not the statistic plus noise (a selection among candidates)
            # has no noise variance to measure the missing information by; it tells little
            # about n records by nature (a few choices), so the move is on.
            nc = model.noncentred
            threshold = AUTO_THRESHOLD if nc is None or nc.threshold is None else nc.threshold
            on = nc is not None and model.records_move is None and (
                not mechanism.additive
                or (missing_information(model, mechanism, n) or 0.0) >= threshold
                or getattr(modes(), "multimodal", False))
            steps = DEFAULT_STEPS if on else 0
        elif isinstance(iw, (bool, np.bool_)):
            steps = DEFAULT_STEPS if iw else 0
        else:
            steps = int(iw)
        if steps and model.noncentred is None:
            raise ValueError("interweave needs the model's non-centred parameterisation: "
                             "Model(noncentred=dw.NonCentred(...))")
        if steps and model.records_move is not None:
            warnings.warn(f"interweave takes the chain's one records-move slot, so the model's "
                          f"own records move ({getattr(model.records_move, 'name', 'records_move')}) "
                          f"does not run in this chain (the posterior is the same; the mixing "
                          f"differs); pass interweave=False to run the model's move instead",
                          UserWarning, stacklevel=4)
        jumps = self.jumps
        if jumps is None:
            jumps = bool(steps) and getattr(modes(), "multimodal", False)
        elif jumps:
            if not steps:
                raise ValueError("jumps=True needs the non-centred move: pass interweave=True "
                                 "(and a model with Model(noncentred=...))")
            if modes() is None:
                raise ValueError(f"jumps=True needs the release-weighted prior draws that find "
                                 f"the modes (dawrap.runner.modes): a release (s_dp), a theta "
                                 f"of at most 3 entries (this model has {model.theta_size}) "
                                 f"and a mechanism whose noise can be drawn")
        if self.checkpoint is not None or self.resume is not None:
            from .runner.checkpoint import check_folder

            check_folder(self.checkpoint, self.resume)  # up front, not at the first save
        return dataclasses.replace(self, interweave=steps, jumps=bool(jumps))

    def run(self, model, mechanism, s_dp, n, rngs, shared):
        from .runner.record import run_record

        return run_record(model, mechanism, s_dp, n, rngs, self, shared)

    def attrs(self):
        out = {"interweave": int(self.interweave or 0), "jumps": int(bool(self.jumps)),
               "sweeps": self.sweeps, "scan": self.scan}
        if self.groups is not None:
            out.update(self.groups.attrs())
        return out

    #: The four of :data:`dawrap.samplers.record.SAMPLE_STATS`, and one to spare.
    stats_per_draw: ClassVar[int] = 5

    def memory_needed(self, model, mechanism, n, draws, chains, cores, keep_stats):
        """Also every chain's imputed database (``chains x n x record_size``, all made
        before the first iteration) plus one more per running chain (the non-centred
        move's proposal, a checkpoint's copy).

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
        >>> databases, _ = dw.Record().memory_needed(model, mech, n=10 ** 9, draws=1000,
        ...                                          chains=4, cores=2, keep_stats=False)
        >>> databases.nbytes                        # (4 + 2) x 10^9 records x 1 x 8 bytes
        48000000000
        """
        running = min(cores, chains)
        kept = f" + {chains * self.databases} kept" if self.databases else ""
        databases = MemoryPart(
            8 * (chains + running + chains * self.databases) * n * model.record_size,
            f"the imputed databases (chains={chains} (+{running} running{kept}) x n={n} "
            f"records x record_size={model.record_size} x 8 bytes)")
        return [databases, *super().memory_needed(model, mechanism, n, draws, chains, cores,
                                                  keep_stats)]


#: The longest release the sufficient-statistic sampler accepts for a family without a
#: one-hot declaration (see Suffstat.prepare).
SUFFSTAT_LARGEST_RELEASE = 500


@dataclasses.dataclass(frozen=True)
class Suffstat(Method):
    """The sufficient-statistic sampler (Bernstein & Sheldon 2018),
    :mod:`dawrap.samplers.suffstat`: a CLT approximation whose cost does not grow with ``n``;
    needs ``model.family``.

    Parameters
    ----------
    variant : {None, "gibbs", "marginal", "printed"}
        The kernel. ``"gibbs"``: the Bernstein-Sheldon Gibbs sampler, with the proper update
        of the centre statistic for a truncated release; ``"printed"``: Algorithm 2 line 10
        as printed; ``"marginal"``: theta updated with the statistic and the noise scale
        integrated out (:mod:`dawrap.samplers.suffstat_marginal`), which mixes where the noise
        dominates (needs the family's ``natural`` and ``log_partition``). ``None`` (default)
        decides by the estimated fraction of missing information: ``"marginal"`` at
        :data:`dawrap.runner.suffstat.AUTO_THRESHOLD` or more, where the family supports it,
        else ``"gibbs"``. The kernel used is the result's attribute ``variant``.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> idata = dw.sample(model, mech, 312.4, 1000, method=dw.Suffstat(variant="gibbs"),
    ...                   draws=200, tune=100, chains=1, seed=0, progress=False)
    >>> dw.diagnostics.group(idata, "posterior").attrs["variant"]
    'gibbs'
    """

    name: ClassVar[str] = "suffstat"
    takes_init_theta: ClassVar[bool] = True
    variant: str | None = None

    def __post_init__(self):
        from .runner.suffstat import VARIANTS

        if self.variant is not None:
            as_choice(self.variant, "variant", VARIANTS)

    def prepare(self, model, mechanism, n, s_dp=None):
        from .runner.suffstat import choose_variant, structured

        # A dense family's kernels factorise size x size covariances, O(size^3) per
        # iteration (benchmarks/results/tables_suffstat.md). A one-hot statistic
        # (family.cell_probabilities) runs in O(size) and has no limit.
        family = model.family
        if (mechanism.size > SUFFSTAT_LARGEST_RELEASE and family is not None
                and not structured(family)):
            raise ValueError(
                f"method='suffstat': the release has {mechanism.size} coordinates, above "
                f"{SUFFSTAT_LARGEST_RELEASE}; for this family the sufficient-statistic "
                f"sampler costs O(size^3) per iteration (only a one-hot statistic, declared "
                f"with ExponentialFamily(..., cell_probabilities=...), runs in O(size)). Use "
                f"method='record' (the default): with a sparse statistic and a separable "
                f"mechanism its record update does not grow with the release's size "
                f"(docs/tables.md)")
        return dataclasses.replace(self, variant=choose_variant(model, mechanism, n,
                                                                self.variant))

    def run(self, model, mechanism, s_dp, n, rngs, shared):
        from .runner.suffstat import run_suffstat

        return run_suffstat(model, mechanism, s_dp, n, rngs, self, shared)

    def attrs(self):
        return {"variant": self.variant}


@dataclasses.dataclass(frozen=True)
class Naive(Method):
    """Baseline (Foulds et al. 2016): the conjugate update on the projected noisy release,
    ignoring the noise; needs ``model.family``.

    Examples
    --------
    The Beta(1 + 312.4, 1 + 687.6) posterior, as if the release were the count:

    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> idata = dw.sample(model, mech, 312.4, 1000, method=dw.Naive(), draws=2000, seed=0)
    >>> p = dw.diagnostics.group(idata, "posterior")["p"]
    >>> bool(abs(float(p.mean()) - 313.4 / 1002) < 0.002)      # 4 sd of the mean of 8000
    True
    """

    name: ClassVar[str] = "naive"

    def run(self, model, mechanism, s_dp, n, rngs, shared):
        from .samplers.baselines import run_naive

        return run_naive(model, mechanism, s_dp, n, rngs, draws=shared.draws)


@dataclasses.dataclass(frozen=True)
class _FromConfidential(Method):
    """A baseline for studies that reads the ``confidential`` records (required) instead of
    the release."""

    uses_release: ClassVar[bool] = False
    confidential: object = None

    def __post_init__(self):
        if self.confidential is None:
            raise ValueError(f"method={self.name!r} needs confidential= (the confidential "
                             f"records)")


@dataclasses.dataclass(frozen=True)
class NonPrivate(_FromConfidential):
    """Baseline for studies: the conjugate posterior from the ``confidential`` records.

    Parameters
    ----------
    confidential : array_like of shape (n, record_size)
        The confidential records (required), whose conjugate posterior is drawn.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> x = model.simulate({"p": 0.3}, n=1000, seed=1)
    >>> idata = dw.sample(model, mech, None, 1000, method=dw.NonPrivate(confidential=x),
    ...                   draws=200, seed=0)
    >>> dw.diagnostics.group(idata, "posterior")["p"].shape              # (chain, draw)
    (4, 200)
    >>> dw.NonPrivate()
    Traceback (most recent call last):
    ...
    ValueError: method='nonprivate' needs confidential= (the confidential records)
    """

    name: ClassVar[str] = "nonprivate"

    def run(self, model, mechanism, s_dp, n, rngs, shared):
        from .samplers.baselines import run_nonprivate

        return run_nonprivate(model, self.confidential, n, rngs, draws=shared.draws)


@dataclasses.dataclass(frozen=True)
class OPS(_FromConfidential):
    """Baseline for studies: one-posterior-sample via the exponential mechanism,
    ``chains * draws`` samples at ``mechanism.epsilon / (chains * draws)`` each, from the
    ``confidential`` records.

    Parameters
    ----------
    confidential : array_like of shape (n, record_size)
        The confidential records (required), from which each sample is drawn.

    Examples
    --------
    The confidential records ``x`` of the :class:`NonPrivate` example, sampled at the privacy
    budget of its ``mech`` (no release):

    >>> idata = dw.sample(model, mech, None, 1000, method=dw.OPS(confidential=x),
    ...                   draws=50, chains=1, seed=0)
    >>> dw.diagnostics.group(idata, "posterior")["p"].shape              # (chain, draw)
    (1, 50)
    """

    name: ClassVar[str] = "ops"

    def run(self, model, mechanism, s_dp, n, rngs, shared):
        from .samplers.baselines import run_ops

        return run_ops(model, mechanism, self.confidential, n, rngs, draws=shared.draws)


#: ``method`` shorthands, in the order the README lists them.
METHODS = {cls.name: cls for cls in (Record, Suffstat, Naive, NonPrivate, OPS)}


def as_method(method, options: dict) -> Method:
    """A :class:`Method` from ``dw.sample``'s ``method`` and its method-specific keyword
    arguments ``options`` (only with a name: a method object carries its own)."""
    if isinstance(method, Method):
        if options:
            raise TypeError(f"{', '.join(sorted(options))}: give these options to the method "
                            f"object ({type(method).__name__}(...)), not to dw.sample")
        return method
    if not isinstance(method, str):
        raise TypeError(f"method must be one of {tuple(METHODS)} or a dawrap method object "
                        f"(dw.Record(...), dw.Suffstat(...), ...), got {method!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {tuple(METHODS)} or a dawrap method object "
                         f"(dw.Record(...), dw.Suffstat(...), ...), got {method!r}")
    cls = METHODS[method]
    fields = set(_options(cls))
    own = {k: v for k, v in options.items() if k in fields}
    stray = {k: v for k, v in options.items() if k not in fields}
    unknown = sorted(k for k in stray if k not in _DEFAULTS)
    if unknown:
        raise TypeError(f"dw.sample() got unexpected keyword argument(s) {', '.join(unknown)}")
    # Another method's option at its default value means "not used": studies and the CLI pass
    # one set of options to every method. ``confidential`` is the data a study also has; the
    # methods that sample from the release do not read it.
    given = [k for k, v in stray.items()
             if k != "confidential" and not _is_default(v, _DEFAULTS[k][1])
             and not _is_default(v, _FORMER_DEFAULTS.get(k, _DEFAULTS[k][1]))]
    for k in given:  # a bad value is reported as such before its method is
        METHODS[_DEFAULTS[k][0]](**{k: stray[k]})
    if given:
        owner = _DEFAULTS[given[0]][0]
        verb = "applies" if len(given) == 1 else "apply"
        raise ValueError(f"{', '.join(given)} {verb} to method={owner!r} only")
    return cls(**own)


def _options(cls) -> dict:
    """A method's options and their defaults: its fields, and the options of earlier
    versions it still converts (``former_options``, init-only: not fields)."""
    return {**{f.name: f.default for f in dataclasses.fields(cls)},
            **{name: None for name in cls.former_options}}


def _is_default(value, default) -> bool:
    if value is None or default is None:
        return value is default
    return isinstance(value, type(default)) and value == default


#: Options whose default changed, and the value that was their default: for the other methods
#: it still means "not used", so option sets written for earlier versions keep working.
_FORMER_DEFAULTS = {"variant": "gibbs"}
#: Every method-specific option: the method it belongs to and its default.
_DEFAULTS = {name: (cls.name, default) for cls in METHODS.values()
             for name, default in _options(cls).items()}

r"""Releases made by SmartNoise Synth's AIM and MST synthesizers, read in one call.

AIM and MST (``snsynth.Synthesizer.create("aim" | "mst", epsilon=...)``, after McKenna et
al.'s Private-PGM) measure marginal tables of the encoded data with Gaussian noise: each
measurement is a clique of attributes, its noisy counts :math:`y = M(x) + z`,
:math:`z \sim N(0, \sigma^2 I)`, and :math:`\sigma`. Those measurements are the release
dawrap's marginals model (:mod:`dawrap.models.marginals`) conditions on. :func:`fit` fits a
synthesizer and reads them into what :func:`dawrap.sample` takes: the
:class:`~dawrap.models.marginals.MarginalRelease` of the measured tables
(:func:`~dawrap.models.marginals.from_measurements`, one ``(clique, sigma)`` per
measurement), ``s_dp`` (the ``y`` concatenated in the same order), the attributes' levels,
the original value of each code, and ``n``.

Where the measurements are. SmartNoise 1.0 keeps them only in a local variable of ``fit``
(``AIMSynthesizer.AIM``, ``MSTSynthesizer.MST`` in ``snsynth/aim/aim.py`` and
``snsynth/mst/mst.py``): the fitted object holds the estimated graphical model
(``synth.synthesizer``, an ``mbi.MarkovRandomField``: potentials, marginals, total), not the
measurements. Both end their fit by estimating the model from every measurement with
``mbi.estimation.mirror_descent(domain, measurements, ...)``, called through the name
``estimation`` of their module. :func:`recording` (used by :func:`fit`) wraps that name
for the duration of the fit and keeps what the call received; the call whose result
became ``synth.synthesizer`` is the one read, so a record is never taken from another
fit. Nothing in SmartNoise is changed outside the ``with`` block. (Recordings take a lock,
one at a time; a fit in another thread that is not recorded but runs during one is seen by
the wrapper too, and never read in this fit's place: the call read is the one whose result
is ``synth.synthesizer``.)

What is read, and checked:

* each measurement is an ``mbi.LinearMeasurement`` whose query is the identity
  (``Factor.datavector``): ``y`` is the noisy count vector of the clique, in C order over
  the clique's attributes in the clique's order (``Dataset.project(clique).datavector()``),
  which is dawrap's order for the table listed with the same attribute order;
  ``stddev`` is its :math:`\sigma` (MST's measurements carry their share of the budget in
  it: :math:`\sigma\sqrt k` for :math:`k` cliques measured together);
* the domain the model was estimated on must be the encoded data's (the transformer's
  cardinalities). MST merges the levels of an attribute whose noisy 1-way count is below
  :math:`3\sigma` into one level before measuring its 2-way tables; those tables are over
  merged levels, which a marginal table of the attribute is not, and their merged 1-way
  counts are rescaled. Which levels MST kept is seen through its ``transform_data(data,
  supports)`` (wrapped on the instance during the recording; with one level merged the
  number of levels does not change, only their codes): a fit that merged any is refused,
  naming the attributes and levels (merge or drop the rare levels before fitting, so that
  none is merged);
* the installed ``smartnoise-synth`` must be 1.0.x and the synthesizer's module must call
  ``estimation.mirror_descent``: another version is refused, naming what differs, rather
  than read by guess.

What dawrap conditions on, and what it does not. The noisy tables are conditioned on
exactly. Which cliques were measured is chosen with the data (MST: a spanning tree by the
exponential mechanism; AIM: each round's clique by the exponential mechanism, its
:math:`\sigma` halved when the estimate moves little): that choice is taken as given, not
modelled. The privacy accounting differs and is stated, not converted: AIM and MST account
under add/remove-one neighbours (each table's L2 sensitivity 1,
:math:`1/(2\sigma^2)`-zCDP a table, plus the budget of the selections), while
``mechanism.privacy`` states the replace-one guarantee of the same noise,
:math:`1/\sigma^2` a table, and dawrap holds ``n`` fixed.

``n``. SmartNoise keeps the exact number of rows fitted on the synthesizer
(``synth.num_rows = len(data)``); MST estimates its model with that total
(``known_total``) and ``synth.sample()`` draws that many rows by default, so ``n`` is
released with the synthetic data unless the curator draws another number. It is read from
there; it is not covered by AIM's or MST's add/remove-one guarantee. A curator who does not
publish it should give the analyst's ``n`` instead.

The encoding. SmartNoise encodes each column (``synth._transformer``, a
``snsynth.transform.TableTransformer``): a categorical or ordinal column's values sorted
(``LabelTransformer``; without ``nullable``), a continuous column cut into equal bins
between given or privately estimated bounds (``BinTransformer``). ``codes`` gives, for
each attribute, the original value of each code: the category, or the ``(lower, upper)``
bounds of the bin. The categories are the values seen in the data (SmartNoise reads them
without noise unless a transformer with known categories is given).

Examples
--------
Three categorical columns, fitted with MST and read (SmartNoise's noise comes from
OpenDP's generator and is not seeded: the example shows what is read, not the numbers):

>>> import numpy as np, pandas as pd
>>> from snsynth import Synthesizer
>>> rng = np.random.default_rng(1)
>>> data = pd.DataFrame({"sex": rng.choice(["F", "M"], 1000),
...                      "edu": rng.choice(["lo", "mid", "hi"], 1000),
...                      "inc": rng.choice([0, 1], 1000)})
>>> synth = Synthesizer.create("mst", epsilon=1.0)
>>> read = fit(synth, data, categorical_columns=["sex", "edu", "inc"])
>>> read.levels, read.codes["edu"], read.n
({'sex': 2, 'edu': 3, 'inc': 2}, ('hi', 'lo', 'mid'), 1000)
>>> [t for t, _ in read.measurements][:3]          # MST's 1-way tables first
[('sex',), ('edu',), ('inc',)]
>>> read.mechanism.size == read.s_dp.size
True
>>> read.mechanism.total(read.encode(data))[:2].tolist()       # sex: F, M in the data
[509.0, 491.0]

The marginals model on the read release: ``dw.sample(model, read.mechanism, read.s_dp,
read.n)`` with ``model = marginals.model(read.levels, [t for t, _ in
read.measurements])``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import threading

import numpy as np

from .models.marginals import MarginalRelease, from_measurements

__all__ = ["fit", "recording", "from_synthesizer", "SynthRelease", "SUPPORTED_VERSIONS"]

#: The smartnoise-synth versions whose internals this reader was written against.
SUPPORTED_VERSIONS = "1.0.x"
#: The synthesizer classes read (their module's name and class name).
_READABLE = {("snsynth.aim.aim", "AIMSynthesizer"): "AIM",
             ("snsynth.mst.mst", "MSTSynthesizer"): "MST"}
#: The attribute on the synthesizer where :func:`recording` keeps what it saw.
_RECORD = "_dawrap_smartnoise_record"
_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class SynthRelease:
    """What :func:`from_synthesizer` read: pass ``mechanism``, ``s_dp`` and ``n`` to
    :func:`dawrap.sample` with a marginals model over ``levels``.

    Attributes
    ----------
    mechanism : MarginalRelease
        The measured tables in the order measured, each with its Gaussian noise.
    s_dp : ndarray
        The measurements' noisy counts concatenated, in the mechanism's cell order.
    levels : dict
        ``{attribute: number of levels}`` in the encoded data's column order.
    n : int
        The number of records fitted (``synth.num_rows``; module docstring).
    codes : dict
        ``{attribute: tuple}``: the original value of each code (a category, or the
        ``(lower, upper)`` bounds of a bin); None for an attribute whose encoding is not
        one value per code.
    measurements : tuple
        ``((clique, sigma), ...)`` as passed to
        :func:`~dawrap.models.marginals.from_measurements`.
    synthesizer : str
        ``"AIM"`` or ``"MST"``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from snsynth import Synthesizer
    >>> data = pd.DataFrame({"a": np.arange(600) % 2, "b": np.arange(600) % 3})
    >>> read = fit(Synthesizer.create("mst", epsilon=2.0), data, categorical_columns=["a", "b"])
    >>> read.synthesizer, read.n, read.mechanism.size == read.s_dp.size
    ('MST', 600, True)
    """

    mechanism: MarginalRelease
    s_dp: np.ndarray
    levels: dict
    n: int
    codes: dict
    measurements: tuple
    synthesizer: str
    _transformer: object = dataclasses.field(repr=False, compare=False, default=None)

    def encode(self, data) -> np.ndarray:
        """Records of ``data`` (the table the synthesizer was fitted on, or one like it) as
        dawrap's records: one float code per attribute, with SmartNoise's own encoding.

        Parameters
        ----------
        data : pandas.DataFrame, ndarray or list of tuples
            Rows with the fitted table's columns.

        Returns
        -------
        ndarray of shape (rows, len(levels))

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from snsynth import Synthesizer
        >>> data = pd.DataFrame({"a": ["x", "y"] * 300, "b": ["p", "q", "r"] * 200})
        >>> read = fit(Synthesizer.create("mst", epsilon=2.0), data,
        ...            categorical_columns=["a", "b"])
        >>> read.codes["a"], read.encode(data.head(2)).tolist()
        (('x', 'y'), [[0.0, 0.0], [1.0, 1.0]])
        """
        rows = self._transformer.transform(data)
        return np.asarray(rows, dtype=float).reshape(len(rows), len(self.levels))


def _snsynth():
    """SmartNoise Synth, imported when a synthesizer is read (an optional dependency)."""
    try:
        import mbi
        import snsynth
    except ImportError as error:
        raise ImportError("reading a SmartNoise synthesizer needs smartnoise-synth 1.0: "
                          "pip install 'smartnoise-synth>=1.0,<1.1'") from error
    return snsynth, mbi


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version("smartnoise-synth")
    except metadata.PackageNotFoundError:  # pragma: no cover - snsynth imported without it
        return "unknown"


def _kind(synth, argument: str = "synth") -> tuple[str, object]:
    """("AIM" | "MST", the synthesizer's module), or a TypeError naming ``argument``."""
    key = (type(synth).__module__, type(synth).__name__)
    _snsynth()
    if key not in _READABLE:
        raise TypeError(f"{argument} must be a SmartNoise AIM or MST synthesizer "
                        "(Synthesizer.create('aim' | 'mst', epsilon=...)), got "
                        f"{type(synth).__module__}.{type(synth).__name__}")
    version = _version()
    if not version.startswith("1.0."):
        raise ImportError(f"{argument}: smartnoise-synth {version} is installed; this reader "
                          f"knows the internals of {SUPPORTED_VERSIONS} (where AIM and MST keep "
                          "their measurements), and does not guess another version's")
    module = sys.modules[key[0]]
    estimation = getattr(module, "estimation", None)
    if not callable(getattr(estimation, "mirror_descent", None)):
        raise ImportError(f"{argument}: {key[0]} (smartnoise-synth {version}) has no "
                          "estimation.mirror_descent, through which this reader sees the "
                          "measurements; its internals differ from the ones read")
    return _READABLE[key], module


class _Estimation:
    """The module ``mbi.estimation`` as a synthesizer's module sees it during a recording:
    every name is the module's, and ``mirror_descent`` keeps its arguments and result."""

    def __init__(self, module, calls: list):
        self._module, self._calls = module, calls

    def __getattr__(self, name):
        return getattr(self._module, name)

    def mirror_descent(self, domain, loss_fn, *args, **kwargs):
        result = self._module.mirror_descent(domain, loss_fn, *args, **kwargs)
        self._calls.append((domain, list(loss_fn) if isinstance(loss_fn, (list, tuple))
                            else loss_fn, kwargs.get("known_total"), result))
        return result


@contextlib.contextmanager
def recording(synth):
    """Keep the measurements of ``synth``'s next fit, for :func:`from_synthesizer`.

    Parameters
    ----------
    synth : snsynth AIMSynthesizer or MSTSynthesizer
        Created with ``Synthesizer.create("aim" | "mst", ...)``; fit it inside the block.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from snsynth import Synthesizer
    >>> data = pd.DataFrame({"a": np.arange(600) % 2, "b": np.arange(600) % 3})
    >>> synth = Synthesizer.create("mst", epsilon=2.0)
    >>> with recording(synth):
    ...     synth.fit(data, categorical_columns=["a", "b"])
    >>> from_synthesizer(synth).levels
    {'a': 2, 'b': 3}
    """
    kind, module = _kind(synth)
    calls: list = []
    supports: list = []
    if kind == "MST":
        transform_data = getattr(synth, "transform_data", None)
        if not callable(transform_data):
            raise ImportError("synth: MSTSynthesizer has no transform_data, through which "
                              "this reader sees which levels MST merged; its internals "
                              "differ from the ones read")

        def merging(data, support):  # MST's levels kept (True) and merged, per column
            supports.append({c: np.asarray(v, dtype=bool).copy() for c, v in support.items()})
            return transform_data(data, support)

    with _LOCK:
        original = module.estimation
        module.estimation = _Estimation(original, calls)
        if kind == "MST":
            synth.transform_data = merging  # on the instance, for this fit only
        try:
            yield synth
        finally:
            module.estimation = original
            if kind == "MST":
                del synth.transform_data
    setattr(synth, _RECORD, (_version(), calls, supports))


def fit(synth, data, **fit_kwargs) -> SynthRelease:
    """Fit ``synth`` to ``data`` and read its release (:func:`recording`, then
    :func:`from_synthesizer`).

    Parameters
    ----------
    synth : snsynth AIMSynthesizer or MSTSynthesizer
        Not yet fitted (or to be fitted again).
    data : pandas.DataFrame, ndarray or list of tuples
        The confidential table, as ``synth.fit`` takes it.
    **fit_kwargs
        ``synth.fit``'s keywords: ``categorical_columns``, ``ordinal_columns``,
        ``continuous_columns``, ``transformer``, ``preprocessor_eps``, ``nullable``.

    Returns
    -------
    SynthRelease

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from snsynth import Synthesizer
    >>> data = pd.DataFrame({"a": np.arange(600) % 2, "b": np.arange(600) % 3})
    >>> read = fit(Synthesizer.create("mst", epsilon=2.0), data, categorical_columns=["a", "b"])
    >>> [clique for clique, _ in read.measurements][:2], read.levels
    ([('a',), ('b',)], {'a': 2, 'b': 3})
    """
    with recording(synth):
        synth.fit(data, **fit_kwargs)
    return from_synthesizer(synth)


def _codes(transformer) -> tuple[list, list]:
    """The encoded columns' names and original values per code, from SmartNoise's
    transformer (one column transformer per input column, skipping dropped ones)."""
    from snsynth.transform.bin import BinTransformer
    from snsynth.transform.label import LabelTransformer
    columns = getattr(transformer, "_columns", None)
    names, codes, out = [], [], 0
    for i, t in enumerate(transformer.transformers):
        width = int(getattr(t, "output_width", 0) or 0)
        if width == 0:
            continue  # dropped or anonymised: not in the encoded data
        cards = list(t.cardinality)
        base = str(columns[i]) if columns is not None and i < len(columns) else None
        for j in range(width):
            names.append((base if width == 1 else f"{base}[{j}]") if base is not None
                         else f"col{out}")
            out += 1
            if width != 1:
                codes.append(None)
            elif isinstance(t, LabelTransformer):
                codes.append(tuple(t.categories[c] for c in range(cards[0])))
            elif isinstance(t, BinTransformer):
                codes.append(tuple(tuple(float(v) for v in t._bin_edges(c))
                                   for c in range(cards[0])))
            else:
                codes.append(None)
    return names, codes


def from_synthesizer(synth) -> SynthRelease:
    r"""Read the release of an AIM or MST synthesizer fitted under :func:`recording`
    (module docstring: what is read, and what is not).

    Parameters
    ----------
    synth : snsynth AIMSynthesizer or MSTSynthesizer
        Fitted inside ``with recording(synth):`` (or by :func:`fit`).

    Returns
    -------
    SynthRelease
        ``mechanism`` (the measured tables, table :math:`m` with
        :math:`N(0, \sigma_m^2)` noise on each cell), ``s_dp``, ``levels``, ``n``,
        ``codes``.

    Examples
    --------
    A synthesizer fitted without the recording is refused, and says how to read it:

    >>> from snsynth import Synthesizer
    >>> from_synthesizer(Synthesizer.create("aim", epsilon=1.0))   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: synth: this AIM synthesizer is not fitted...
    """
    kind, _ = _kind(synth)
    model = getattr(synth, "synthesizer", None)
    transformer = getattr(synth, "_transformer", None)
    if model is None or transformer is None:
        raise ValueError(f"synth: this {kind} synthesizer is not fitted (synth.synthesizer is "
                         "None); fit it with dawrap.smartnoise.fit(synth, data, ...)")
    record = getattr(synth, _RECORD, None)
    call = None
    if record is not None:
        version, calls, supports = record
        call = next((c for c in reversed(calls) if c[3] is model), None)
    if call is None:
        raise ValueError(
            f"synth: SmartNoise keeps {kind}'s measurements only inside fit, and this fit was "
            "not recorded (or the synthesizer was fitted again since); fit it with "
            "dawrap.smartnoise.fit(synth, data, ...) or inside "
            "`with dawrap.smartnoise.recording(synth):`")
    domain, measurements, known_total, _ = call
    if version != _version():
        raise ValueError(f"synth: recorded with smartnoise-synth {version}, read with "
                         f"{_version()}")
    from mbi import Factor, LinearMeasurement

    names, codes = _codes(transformer)
    cards = [int(c) for c in transformer.cardinality]
    attrs, shape = tuple(domain.attributes), tuple(int(s) for s in domain.shape)
    encoded = tuple(f"col{i}" for i in range(len(cards)))
    if attrs != encoded or len(names) != len(cards):
        raise ValueError(f"synth: {kind} estimated its model over the attributes {attrs}, "
                         f"SmartNoise's encoding has {encoded}: its internals differ from the "
                         "ones read")
    if kind == "MST" and len(supports) != 1:
        raise ValueError(f"synth: MST decided which levels to merge {len(supports)} times in "
                         "one fit (once expected): its internals differ from the ones read")
    merged = []
    for i, a in enumerate(attrs):
        kept = supports[0].get(a) if kind == "MST" else np.ones(cards[i], dtype=bool)
        if kept is None or kept.shape != (cards[i],):
            raise ValueError(f"synth: MST's kept levels of {names[i]} are not one per level "
                             f"({cards[i]}): its internals differ from the ones read")
        if not kept.all():
            values = codes[i] or range(cards[i])
            merged.append(f"{names[i]} {[values[c] for c in np.flatnonzero(~kept)]}")
    if merged:
        raise ValueError(
            f"synth: {kind} merged the rare levels of {'; '.join(merged)} (each a noisy "
            "count below 3 sigma) into one level before measuring the 2-way tables, which "
            "are then not marginal tables of the attribute; merge or drop the rare levels "
            "before fitting so that none is merged")
    if shape != tuple(cards):
        raise ValueError(f"synth: {kind} estimated its model over levels {shape}, SmartNoise's "
                         f"encoding has {tuple(cards)}: its internals differ from the ones read")
    if not isinstance(measurements, list) or not measurements:
        raise ValueError(f"synth: {kind}'s model was estimated from {type(measurements).__name__}"
                         ", not a list of measurements: its internals differ from the ones read")
    rename = dict(zip(encoded, names))
    pairs, values = [], []
    for k, m in enumerate(measurements):
        if not isinstance(m, LinearMeasurement):
            raise ValueError(f"synth: {kind}'s measurement {k} is a {type(m).__name__}, not an "
                             "mbi.LinearMeasurement: its internals differ from the ones read")
        clique = tuple(m.clique)
        if m.query is not Factor.datavector:
            raise ValueError(f"synth: {kind}'s measurement {k} (of {clique}) is not the identity "
                             "query of its table (mbi's Factor.datavector), which this reader "
                             "does not know")
        if not set(clique) <= set(attrs):
            raise ValueError(f"synth: {kind}'s measurement {k} is of {clique}, outside the "
                             f"attributes {attrs}")
        y = np.asarray(m.noisy_measurement, dtype=float)
        cells = math.prod(shape[attrs.index(a)] for a in clique)
        sigma = float(m.stddev)
        if y.shape != (cells,) or not np.all(np.isfinite(y)):
            raise ValueError(f"synth: {kind}'s measurement {k} of {clique} has {y.shape} "
                             f"values, its table {cells} cells (or is not finite)")
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"synth: {kind}'s measurement {k} of {clique} has sd {sigma}")
        pairs.append((tuple(rename[a] for a in clique), sigma))
        values.append(y)
    levels = dict(zip(names, cards))
    n = getattr(synth, "num_rows", None)
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"synth: synth.num_rows is {n!r}, not the number of records fitted")
    mechanism = from_measurements(levels, pairs, kind="gaussian")
    return SynthRelease(mechanism, np.concatenate(values), levels, int(n),
                        dict(zip(names, codes)), tuple(pairs), kind, transformer)

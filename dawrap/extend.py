"""What a model, move or mechanism author needs beyond :mod:`dawrap`'s public names: one
module, the extension surface.

The built-in models (:mod:`dawrap.models`) are written against it and nothing else of
dawrap's internals (``tests/test_layers.py`` checks that they import only :mod:`dawrap`,
this module, :mod:`dawrap.random`, :mod:`dawrap.reference`, :mod:`dawrap.diagnostics` and
each other), so a model of your own can do all they do.

**Records moves** (``Model(records_move=...)``, the docs' "Extending" pages): :class:`Move`,
:class:`Moves`, :class:`MoveBuilder`; the chain state a move's ``step`` receives and returns,
:class:`RecordState`; the status codes it returns (:data:`OK`, :data:`BAD_ENTRIES`,
:data:`BAD_RATIO`, :data:`BAD_PARTITION`); the change of a separable density over a
record's entries (:func:`merge_entries`, :func:`density_change_of`). A move's form that runs
in a grouped chain's groups: :class:`GroupMove`, its inputs :class:`GroupInputs` and
:class:`GroupState`, :func:`group_density_change_of`, :func:`apply_group_change`,
:func:`whole_database`.

**Partitions** (``Model(partition=...)``): :class:`Partition`, :func:`merge_units`,
:data:`MAX_GROUPS`.

**Mechanisms**: the separable densities' coordinate terms (:func:`laplace_coordinate`,
:func:`gaussian_coordinate`) and log densities (:func:`laplace_log_density`,
:func:`gaussian_log_density`, :func:`discrete_gaussian_log_normaliser`), the
:class:`NoiseLaw`, the usable noise scales (:func:`usable_scale`,
:data:`LARGEST_SCALE`, :data:`LARGEST_INTEGER_SCALE`), how a guarantee is stated (:func:`stated_budget`) and how a
mechanism's arrays are made read-only (:func:`read_only`); a factory's argument check
(:func:`as_positive_float`).

**Noise families** (the docs' "Extending" page on them): :class:`NoiseFamily` (what every
part of the package asks of a family), :class:`Split` (how a shared cell is split into
group pieces), :class:`ContinuousNoise` (the sufficient-statistic sampler's continuous
form), the registry (:func:`register`, :func:`family_named`, :func:`registered`,
:func:`of_coordinate`) and :func:`nearest_totals`.

**Parallel backends** (``dw.Record(groups=...)`` with an option of one's own, the
"Extending" page on backends): :class:`GroupWorker`, what one worker of a grouped chain
holds and the named steps a backend runs on it.

Names are imported on first use (PEP 562), so importing this module costs nothing until
one of them is needed.

Examples
--------
>>> from dawrap.extend import Move, OK
>>> OK
0
>>> Move.__name__
'Move'
"""
from __future__ import annotations

import importlib

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "Move": "dawrap.model.protocols", "Moves": "dawrap.model.protocols",
    "MoveBuilder": "dawrap.model.protocols",
    "RecordState": "dawrap.samplers.record",
    "OK": "dawrap.samplers.status", "BAD_ENTRIES": "dawrap.samplers.status",
    "BAD_RATIO": "dawrap.samplers.status",
    "BAD_PARTITION": "dawrap.samplers.parallel", "Partition": "dawrap.samplers.parallel",
    "GroupInputs": "dawrap.samplers.parallel", "GroupState": "dawrap.samplers.parallel",
    "merge_units": "dawrap.samplers.parallel", "MAX_GROUPS": "dawrap.samplers.parallel",
    "GroupMove": "dawrap.samplers.group_moves",
    "group_density_change_of": "dawrap.samplers.group_moves",
    "apply_group_change": "dawrap.samplers.group_moves",
    "whole_database": "dawrap.samplers.group_moves",
    "merge_entries": "dawrap.samplers.entries_path",
    "density_change_of": "dawrap.samplers.entries_path",
    "laplace_coordinate": "dawrap.mechanisms.separable",
    "gaussian_coordinate": "dawrap.mechanisms.separable",
    "laplace_log_density": "dawrap.mechanisms.laplace",
    "gaussian_log_density": "dawrap.mechanisms.gaussian",
    "discrete_gaussian_log_normaliser": "dawrap.mechanisms.discrete_gaussian",
    "NoiseLaw": "dawrap.mechanisms.noise", "usable_scale": "dawrap.mechanisms.noise",
    "LARGEST_INTEGER_SCALE": "dawrap.mechanisms.noise",
    "LARGEST_SCALE": "dawrap.mechanisms.noise",
    "NoiseFamily": "dawrap.mechanisms.families", "Split": "dawrap.mechanisms.families",
    "ContinuousNoise": "dawrap.mechanisms.families", "register": "dawrap.mechanisms.families",
    "family_named": "dawrap.mechanisms.families", "registered": "dawrap.mechanisms.families",
    "of_coordinate": "dawrap.mechanisms.families",
    "nearest_totals": "dawrap.mechanisms.families",
    "GroupWorker": "dawrap.runner.group_worker",
    "stated_budget": "dawrap.mechanisms.noise",
    "read_only": "dawrap.mechanisms._immutable",
    "as_positive_float": "dawrap._checks",
    "closure_jit": "dawrap.compile.templates",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    """Import a name on first access and keep it."""
    if name not in _LAZY:
        raise AttributeError(f"module 'dawrap.extend' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))

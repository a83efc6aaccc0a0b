r"""Names for the axes of the posterior's variables, and variables derived from the draws.

A :class:`dawrap.Model` may say what each axis of a parameter means (``dims``), label its
positions (``coords``) and compute further posterior variables from the draws
(``deterministics``), as PyMC's ``dims=``, ``coords=`` and ``pm.Deterministic`` do:

>>> import numba, numpy as np, dawrap as dw
>>> @numba.njit
... def draw_record(rng, theta, out):           # a group and a value in it
...     out[0] = rng.integers(0, 3)
...     out[1] = theta[int(out[0])] + theta[3] * rng.standard_normal()
>>> model = dw.Model(params={"a": (3,), "tau": ()}, record_size=2, draw_record=draw_record,
...                  draw_theta=lambda rng, theta, x, stats: theta,
...                  draw_prior=lambda rng: np.append(rng.normal(size=3), 1.0),
...                  dims={"a": ("group",), "a_scaled": ("group",)},
...                  coords={"group": ["north", "centre", "south"]},
...                  deterministics=lambda v: {"a_scaled": v["tau"][..., None] * v["a"]})
>>> model.dims
{'a': ('group',), 'a_scaled': ('group',)}

The result's posterior then has ``a`` and ``a_scaled`` with the dimension ``group`` and its
labels. The deterministics are computed once, from the kept draws, after sampling: they never
enter the chain.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["check_labels", "posterior_variables"]


def _as_dims(value, name: str) -> tuple:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(isinstance(d, str) and d
                                                       for d in value):
        raise TypeError(f"dims[{name!r}] must be a dimension name or a sequence of them, "
                        f"got {value!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"dims[{name!r}] names a dimension twice: {tuple(value)}")
    return tuple(value)


def check_labels(dims, coords, params: Mapping[str, tuple]) -> tuple[dict, dict]:
    """Validate ``dims`` (variable -> dimension names) and ``coords`` (dimension -> labels)
    against the parameter shapes; returns them as ``{str: tuple}`` and ``{str: np.ndarray}``.

    ``dims`` may also name variables that are not parameters (deterministics); they are
    checked by :func:`posterior_variables`.

    Examples
    --------
    >>> dims, coords = check_labels({"a": "group"}, {"group": ["north", "south"]},
    ...                             {"a": (2,), "tau": ()})
    >>> dims
    {'a': ('group',)}
    >>> check_labels({"a": "group"}, {"group": ["north"]}, {"a": (2,)})
    Traceback (most recent call last):
    ...
    ValueError: dimension 'group' has length 2 in 'a' but 1 in coords['group']
    """
    if dims is None:
        dims = {}
    if coords is None:
        coords = {}
    if not isinstance(dims, Mapping):
        raise TypeError(f"dims must be a dict of variable name -> dimension names, got "
                        f"{type(dims).__name__}")
    if not isinstance(coords, Mapping):
        raise TypeError(f"coords must be a dict of dimension name -> labels, got "
                        f"{type(coords).__name__}")
    dims = {str(k): _as_dims(v, k) for k, v in dims.items()}
    labels = {}
    for dim, values in coords.items():
        arr = np.asarray(values)
        if not isinstance(dim, str) or arr.ndim != 1:
            raise ValueError(f"coords[{dim!r}] must be a 1-d sequence of labels, got {values!r}")
        labels[dim] = arr
    _check_sizes({k: (None, *shape) for k, shape in params.items()}, dims, labels, 1)
    return dims, labels


def _check_sizes(shapes: Mapping[str, tuple], dims: dict, coords: dict, lead: int) -> None:
    """Every named axis has the length of its labels and of the same axis elsewhere."""
    sizes = {dim: (f"coords[{dim!r}]", len(v)) for dim, v in coords.items()}
    for name, shape in shapes.items():
        if name not in dims:
            continue
        own = shape[lead:]
        if len(dims[name]) != len(own):
            raise ValueError(f"dims[{name!r}] = {dims[name]} names {len(dims[name])} "
                             f"dimension(s) for a variable of shape {tuple(own)}")
        for dim, size in zip(dims[name], own):
            where, known = sizes.setdefault(dim, (f"{name!r}", size))
            if known != size:
                raise ValueError(f"dimension {dim!r} has length {size} in {name!r} but "
                                 f"{known} in {where}")


def posterior_variables(params: dict, lead: tuple, deterministics: Callable | None,
                        dims: dict, coords: dict) -> dict:
    """The posterior group: ``params`` (name -> draws of shape ``lead + shape``, ``lead``
    being ``(chain, draw)``) and the variables ``deterministics(params)`` returns, checked
    against ``lead`` and the labels.

    Examples
    --------
    >>> draws = {"a": np.ones((1, 3, 2)), "tau": np.full((1, 3), 2.0)}
    >>> post = posterior_variables(draws, (1, 3), lambda p: {"s": p["tau"][..., None] * p["a"]},
    ...                            {"a": ("group",), "s": ("group",)}, {})
    >>> post["s"][0, 0]
    array([2., 2.])
    """
    out = dict(params)
    if deterministics is not None:
        # copies: a deterministic that works in place must not change the parameters' draws
        extra = deterministics({k: v.copy() for k, v in params.items()})
        if not isinstance(extra, Mapping):
            raise TypeError(f"deterministics must return a dict of name -> draws, got "
                            f"{type(extra).__name__}")
        for key, value in extra.items():
            if not isinstance(key, str) or not key.isidentifier() or key in params:
                raise ValueError(f"deterministics returned {key!r}: names must be identifiers "
                                 f"other than the parameters {list(params)}")
            value = np.asarray(value, dtype=np.float64)
            if value.shape[:len(lead)] != tuple(lead):
                raise ValueError(f"deterministics returned {key!r} of shape {value.shape}; "
                                 f"its leading axes must be the draws' {tuple(lead)}")
            out[key] = value
    unknown = sorted(set(dims) - set(out))
    if unknown:
        raise ValueError(f"dims names {unknown}, neither a parameter {list(params)} nor a "
                         f"deterministic {sorted(set(out) - set(params))}")
    _check_sizes({k: v.shape for k, v in out.items()}, dims, coords, len(lead))
    return out

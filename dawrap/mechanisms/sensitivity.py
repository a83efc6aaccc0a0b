r"""The sensitivity of a vector statistic of records that lie in a box.

A mechanism's noise is calibrated to the statistic's sensitivity: how far one record can
move the released total. For records in a box :math:`B = [l_1, u_1] \times \dots \times
[l_d, u_d]` and a statistic :math:`t: B \to \mathbb R^k`,

* **replace-one** neighbours (``n`` public, as dawrap's samplers assume: one record
  replaced by another): :math:`\Delta_p = \sup_{x, x' \in B} \|t(x) - t(x')\|_p`, the
  :math:`L_p` diameter of the image :math:`t(B)`;
* **add/remove** neighbours (one record added or removed): :math:`\Delta_p = \sup_{x \in B}
  \|t(x)\|_p`.

Both suprema are attained at vertices of the box when the statistic is *monotone*: there
are signs :math:`d_i` (one per record coordinate) and :math:`e_j` (one per statistic
coordinate) such that every :math:`e_j t_j` is non-decreasing in every :math:`d_i x_i`.
Then with :math:`U` the vertex at the top of that order and :math:`L` the one at the
bottom, :math:`t_j(x)` lies between :math:`t_j(L)` and :math:`t_j(U)` for every
:math:`x \in B`, so :math:`|t_j(x) - t_j(x')| \le |t_j(U) - t_j(L)|` coordinate by
coordinate and :math:`\Delta_p = \|t(U) - t(L)\|_p` for every p. For add/remove the
absolute values :math:`|t_j|` must be monotone in one common order (e.g. a non-negative,
non-decreasing statistic); then :math:`\Delta_p = \max(\|t(U)\|_p, \|t(L)\|_p)`.
:func:`box_sensitivity` takes the maximum over the vertices (exact under these conditions)
after checking them on a grid, and refuses a statistic that the grid shows is not monotone:
there the vertices can miss the supremum. Example: :math:`t(x) = (x, x^2)` on
:math:`[-B, B]` is not monotone; its replace-one L1 sensitivity is :math:`(B + 1/2)^2` for
:math:`B \ge 1/2` (at :math:`x = B`, :math:`x' = -1/2`), more than the vertices' :math:`2B`
and less than the per-coordinate bound :math:`2B + B^2`.
"""
from __future__ import annotations

import itertools

import numpy as np

__all__ = ["box_sensitivity"]

#: Records of more coordinates than this are refused (2**d vertices, points**d grid points).
MAX_RECORD_SIZE = 12
#: At most this many grid points are evaluated for the monotonicity check.
MAX_GRID = 200_000


def _evaluate(statistic, points: np.ndarray, size: int) -> np.ndarray:
    out = np.empty((points.shape[0], size))
    for row, x in zip(out, points):
        statistic(np.ascontiguousarray(x), row)
    if not np.all(np.isfinite(out)):
        raise ValueError("statistic must be finite on the box")
    return out


def _signs(values: np.ndarray, axis: int) -> np.ndarray:
    """``(k,)`` per statistic coordinate: +1 (never decreases along ``axis``), -1 (never
    increases), 0 (constant), or 2 (both: not monotone along that axis)."""
    step = np.diff(values, axis=axis).reshape(-1, values.shape[-1])
    scale = np.abs(values).max(initial=0.0) * 1e-12  # rounding is not a change of direction
    up, down = (step > scale).any(0), (step < -scale).any(0)
    return np.where(up & down, 2, np.where(up, 1, np.where(down, -1, 0)))


def _common_order(signs: np.ndarray, fixed_output: bool) -> bool:
    """Whether signs ``(d, k)`` (entries +1, -1, 0) factor as ``d_i e_j`` wherever non-zero
    (with every ``e_j = +1`` when ``fixed_output``): a two-colouring of the bipartite graph
    whose nodes are the record's and the statistic's coordinates."""
    d, k = signs.shape

    def neighbours(node):
        side, i = node
        if side == "record":
            return [(("stat", j), signs[i, j]) for j in np.flatnonzero(signs[i])]
        return [(("record", r), signs[r, i]) for r in np.flatnonzero(signs[:, i])]

    colour = {("stat", j): 1 for j in range(k)} if fixed_output else {}
    queue = list(colour)
    for start in [("record", i) for i in range(d)] + [("stat", j) for j in range(k)]:
        if start not in colour:
            colour[start] = 1
            queue.append(start)
        while queue:
            node = queue.pop()
            for other, sign in neighbours(node):
                want = colour[node] * sign
                if other not in colour:
                    colour[other] = want
                    queue.append(other)
                elif colour[other] != want:
                    return False
    return True


def box_sensitivity(statistic, size: int, lower, upper, *, norm: int = 1,
                    neighbours: str = "replace", points: int = 9) -> float:
    r"""The exact :math:`L_1` or :math:`L_2` sensitivity of a monotone statistic of records
    in a box (see the module docstring for the conditions and the proof).

    Parameters
    ----------
    statistic : callable
        ``(x_i, out)``: writes the record's statistic (length ``size``) into ``out``; a
        ``numba.njit`` function or plain Python.
    size : int
        Length of the statistic.
    lower, upper : array_like
        The box: one bound per record coordinate (``lower < upper``, finite).
    norm : {1, 2}
        ``1`` for the Laplace and geometric mechanisms, ``2`` for the Gaussian ones.
    neighbours : {"replace", "add/remove"}
        ``"replace"``: one record replaced by another (``n`` fixed and public, as the
        samplers assume); ``"add/remove"``: one record added or removed.
    points : int
        Grid points per record coordinate for the monotonicity check.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When the grid shows that the statistic is not monotone in the required sense (the
        vertices could then miss the supremum), naming the coordinates.

    Examples
    --------
    The clamped value and its square, records in [0, B] with B = 3: the sensitivity is
    B + B^2 under either neighbouring relation.

    >>> import numpy as np
    >>> from dawrap.mechanisms import box_sensitivity
    >>> def value_and_square(x_i, out):
    ...     out[0], out[1] = x_i[0], x_i[0] ** 2
    >>> box_sensitivity(value_and_square, 2, [0.0], [3.0])
    12.0
    >>> box_sensitivity(value_and_square, 2, [0.0], [3.0], neighbours="add/remove")
    12.0
    >>> round(box_sensitivity(value_and_square, 2, [0.0], [3.0], norm=2), 4)   # sqrt(9 + 81)
    9.4868
    """
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 or 2, got {norm!r}")
    if neighbours not in ("replace", "add/remove"):
        raise ValueError(f"neighbours must be 'replace' or 'add/remove', got {neighbours!r}")
    lo = np.atleast_1d(np.asarray(lower, dtype=float))
    hi = np.atleast_1d(np.asarray(upper, dtype=float))
    if lo.ndim != 1 or lo.shape != hi.shape or not (np.all(np.isfinite(lo))
                                                    and np.all(np.isfinite(hi))
                                                    and np.all(lo < hi)):
        raise ValueError(f"lower and upper must be finite bounds of equal length with "
                         f"lower < upper, got {lower!r} and {upper!r}")
    d = lo.shape[0]
    if d > MAX_RECORD_SIZE:
        raise ValueError(f"records of at most {MAX_RECORD_SIZE} coordinates, got {d}")
    if not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    if not isinstance(points, (int, np.integer)) or points < 2:
        raise ValueError(f"points must be an integer >= 2, got {points!r}")
    points = int(max(2, min(points, int(MAX_GRID ** (1.0 / d)))))

    axes = [np.linspace(a, b, points) for a, b in zip(lo, hi)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, d)
    values = _evaluate(statistic, grid, size).reshape(*(points,) * d, size)
    check = np.abs(values) if neighbours == "add/remove" else values
    signs = np.stack([_signs(check, i) for i in range(d)])
    broken = np.argwhere(signs == 2)
    if broken.size:
        i, j = broken[0]
        raise ValueError(f"statistic coordinate {j} is not monotone in record coordinate {i} "
                         f"on the box{' (in absolute value)' * (neighbours == 'add/remove')}: "
                         f"the vertices may miss the supremum; derive the sensitivity by hand")
    if not _common_order(signs, fixed_output=neighbours == "add/remove"):
        raise ValueError("the statistic's coordinates are monotone but not in one common "
                         "order of the record's coordinates: the vertices may miss the "
                         "supremum; derive the sensitivity by hand")

    corners = np.array(list(itertools.product(*zip(lo, hi))))
    t = _evaluate(statistic, corners, size)
    if neighbours == "add/remove":
        return float(np.linalg.norm(t, ord=norm, axis=1).max())
    gaps = t[:, None, :] - t[None, :, :]
    return float(np.linalg.norm(gaps, ord=norm, axis=2).max())

"""Which per-cell memory layout can make the entries path's record update flat to 10^6 cells?

A standalone numba micro-benchmark of the access pattern of the sparse record update of
``benchmarks/tables_scaling.py`` (``dirichlet_multinomial`` with the uniform proposal,
Laplace noise on all K counts; issue 27 item 2), without the engine around it. Per record
update, with ``c`` the record's current cell and ``j`` a uniformly drawn one:

* the Hastings ratio reads ``theta[j]`` and ``theta[c]``;
* the density ratio reads the release, the noise scale and the running total at ``c`` and
  ``j`` (the Laplace term ``-|s - t| / b`` before and after the move);
* an accepted move writes the running total and the model's count at ``c`` and ``j``.

The same arithmetic and the same random numbers in every variant (each returns its
acceptances and a checksum, compared); only where the five per-cell values live changes:

* ``separate``: five K-long arrays (theta, release, scale, total, count): the layout before
  commit 368dcaa, five cache lines per cell touched;
* ``block4``: theta the model's own array, the rest one ``(K, 4)`` row per cell (main
  today: two lines per cell);
* ``block5``: theta as a fifth column, 40-byte rows (a row straddles two lines now and then);
* ``block8``: theta in a ``(K, 8)`` row of 64 bytes aligned to a line: one line per cell;
* ``+pf<d>``: the same with software pipelining: at record ``i``, the rows (and theta) of
  the current cell of record ``i + d`` are prefetched (``llvm.prefetch``, which blocks
  nothing); that cell is known (the record's value), so no random number moves. The
  proposed cell, drawn by the generator during the update, cannot be fetched ahead.

A last pair of rows, a yardstick and not a candidate: ``block4`` / ``block8`` with the
proposed cells drawn before the sweep from another generator and prefetched like the current
ones (what fetching both cells ahead could give; it changes the order of the random numbers,
so the engine's draws would not stay bit-identical).

Reported: ns per update (best of ``--rounds`` interleaved rounds), its ratio to the same
variant at the smallest K, and the ns added over the smallest K (what the engine's update,
whose cost at small K is larger than this loop's, would add).

Run: python benchmarks/cell_layout.py [--n 20000] [--cells 10 100000 1000000]
     [--sweeps 5] [--rounds 7] [--no-hugepages]
"""
from __future__ import annotations

import math
import os
import time

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from _common import Timed, huge_pages, interleaved, parser


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the CPU to bring the cache line of ``array[index]`` (a C-contiguous array of
    any dimension, ``index`` into its flat data) closer; never blocks, never faults."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, ir.IntType(32), ir.IntType(32),
                                               ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        i32 = ir.IntType(32)
        # read (0), high temporal locality (3), data cache (1)
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@numba.njit(inline="always")
def _laplace(s, t, inv_b):
    return -abs(s - t) * inv_b


@numba.njit(nogil=True)
def sweep_separate(rng, x, theta, release, scale, total, count, ahead):
    """Five separate K-long arrays; ``ahead`` > 0 prefetches record ``i + ahead``'s cell."""
    n, k = x.shape[0], theta.shape[0]
    accepted, check = 0, 0.0
    for i in range(n):
        if ahead > 0 and i + ahead < n:
            c2 = x[i + ahead]
            prefetch(theta, c2)
            prefetch(release, c2)
            prefetch(scale, c2)
            prefetch(total, c2)
            prefetch(count, c2)
        c = x[i]
        j = rng.integers(0, k)
        log_alpha = math.log(theta[j]) - math.log(theta[c])
        if j != c:
            log_alpha += (_laplace(release[c], total[c] - 1.0, scale[c])
                          - _laplace(release[c], total[c], scale[c])
                          + _laplace(release[j], total[j] + 1.0, scale[j])
                          - _laplace(release[j], total[j], scale[j]))
        if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
            if j != c:
                total[c] -= 1.0
                total[j] += 1.0
                count[c] -= 1.0
                count[j] += 1.0
            x[i] = j
            accepted += 1
            check += log_alpha
    return accepted, check


# Columns of the interleaved rows: release, scale, total, count (, theta).
RELEASE, SCALE, TOTAL, COUNT, THETA = 0, 1, 2, 3, 4


@numba.njit(inline="always")
def _row_update(rng, x, theta, cells, inside, i, c, j):
    """Record ``i``'s update from its cell ``c`` to the proposed ``j`` on the rows ``cells``
    (theta in column 4 when ``inside``, else the separate ``theta``): whether it was
    accepted, and its log acceptance ratio."""
    if inside:
        log_alpha = math.log(cells[j, THETA]) - math.log(cells[c, THETA])
    else:
        log_alpha = math.log(theta[j]) - math.log(theta[c])
    if j != c:
        log_alpha += (_laplace(cells[c, RELEASE], cells[c, TOTAL] - 1.0, cells[c, SCALE])
                      - _laplace(cells[c, RELEASE], cells[c, TOTAL], cells[c, SCALE])
                      + _laplace(cells[j, RELEASE], cells[j, TOTAL] + 1.0, cells[j, SCALE])
                      - _laplace(cells[j, RELEASE], cells[j, TOTAL], cells[j, SCALE]))
    if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
        if j != c:
            cells[c, TOTAL] -= 1.0
            cells[j, TOTAL] += 1.0
            cells[c, COUNT] -= 1.0
            cells[j, COUNT] += 1.0
        x[i] = j
        return True, log_alpha
    return False, log_alpha


@numba.njit(nogil=True)
def sweep_rows(rng, x, theta, cells, inside, ahead):
    """Rows ``cells[j]`` of release, scale, total, count; theta in column 4 when ``inside``
    (then ``theta`` is not read), else the separate ``theta``."""
    n, k = x.shape[0], cells.shape[0]
    w = cells.shape[1]
    accepted, check = 0, 0.0
    for i in range(n):
        if ahead > 0 and i + ahead < n:
            c2 = x[i + ahead]
            prefetch(cells, c2 * w)
            if (w * 8 * c2) // 64 != (w * 8 * (c2 + 1) - 1) // 64:  # a row across two lines
                prefetch(cells, c2 * w + w - 1)
            if not inside:
                prefetch(theta, c2)
        c = x[i]
        j = rng.integers(0, k)
        moved, log_alpha = _row_update(rng, x, theta, cells, inside, i, c, j)
        if moved:
            accepted += 1
            check += log_alpha
    return accepted, check


@numba.njit(nogil=True)
def sweep_rows_drawn_ahead(rng, x, theta, cells, inside, ahead, proposed):
    """:func:`sweep_rows` with the proposed cells drawn before the sweep (``proposed``, from
    another generator) and prefetched ``ahead`` records early like the current ones: a
    bound on what fetching *both* cells ahead would give. The draws differ from the
    engine's order (not bit-identical), so this is a yardstick, not a candidate."""
    n = x.shape[0]
    w = cells.shape[1]
    accepted, check = 0, 0.0
    for i in range(n):
        if i + ahead < n:
            c2, j2 = x[i + ahead], proposed[i + ahead]
            prefetch(cells, c2 * w)
            prefetch(cells, j2 * w)
            if not inside:
                prefetch(theta, c2)
                prefetch(theta, j2)
        moved, log_alpha = _row_update(rng, x, theta, cells, inside, i, x[i], proposed[i])
        if moved:
            accepted += 1
            check += log_alpha
    return accepted, check


def aligned_rows(k: int, width: int) -> np.ndarray:
    """A zeroed ``(k, width)`` float64 array whose data starts on a 64-byte line."""
    raw = np.zeros(k * width + 8)
    offset = (-raw.ctypes.data % 64) // 8
    return raw[offset:offset + k * width].reshape(k, width)


class Case(Timed):
    """One layout at one K: the data (the same for every layout at that K) and its sweep."""

    def __init__(self, layout: str, ahead: int, k: int, n: int, seed: int = 1,
                 drawn_ahead: bool = False):
        self.layout, self.ahead, self.k, self.n = layout, ahead, k, n
        self.drawn_ahead = drawn_ahead
        rng = np.random.default_rng(seed)
        theta = rng.dirichlet(np.ones(k))
        x = rng.choice(k, size=n, p=theta)
        count = np.bincount(x, minlength=k).astype(float)
        release = count + rng.laplace(0.0, 2.0, k)
        scale = np.full(k, 0.5)  # 1 / b, epsilon = 1, sensitivity 2
        self.x0 = x
        if layout == "separate":
            self.arrays = (theta, release, scale, count.copy(), count.copy())
        else:
            width = {"block4": 4, "block5": 5, "block8": 8}[layout]
            cells = aligned_rows(k, width)
            cells[:, RELEASE], cells[:, SCALE] = release, scale
            cells[:, TOTAL], cells[:, COUNT] = count, count
            if width > 4:
                cells[:, THETA] = theta
            self.arrays = (theta, cells, width > 4)
        self.name = layout + (f"+pf{ahead}" if ahead else "") + (
            " (proposals drawn ahead)" if drawn_ahead else "")
        self.result = None

    def run(self, sweeps: int) -> float:
        """Seconds for ``sweeps`` sweeps from the same start (records and sums reset)."""
        x = self.x0.copy()
        if self.layout == "separate":
            theta, release, scale, total, count = self.arrays
            args = (theta, release, scale, total.copy(), count.copy())
            fn = sweep_separate
        else:
            theta, cells, inside = self.arrays
            args = (theta, _fresh(cells), inside)
            fn = sweep_rows
        rng = np.random.default_rng(7)
        if self.drawn_ahead:
            proposed = np.random.default_rng(8).integers(0, self.k, self.n)
            args = args + (self.ahead, proposed)
            fn = sweep_rows_drawn_ahead
        results = []
        started = time.perf_counter()
        for _ in range(sweeps):
            results.append(fn(rng, x, *args) if self.drawn_ahead
                           else fn(rng, x, *args, self.ahead))
        elapsed = time.perf_counter() - started
        self.result = results
        return elapsed


def _fresh(cells: np.ndarray) -> np.ndarray:
    """A line-aligned copy of ``cells`` (a plain copy may start anywhere on a line)."""
    out = aligned_rows(*cells.shape)
    out[:] = cells
    return out


def main():
    ap = parser(__doc__, n=20_000, cells=[10, 100_000, 1_000_000], sweeps=5, rounds=7)
    ap.add_argument("--ahead", type=int, nargs="+", default=[1, 4],
                    help="prefetch distances (records ahead) of the +pf variants")
    ap.add_argument("--no-hugepages", action="store_true")
    args = ap.parse_args()
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    huge_pages(not args.no_hugepages)
    variants = [(layout, 0) for layout in ("separate", "block4", "block5", "block8")]
    variants += [(layout, d) for d in args.ahead for layout in ("block4", "block8")]
    cases = [Case(layout, d, k, args.n) for k in args.cells for layout, d in variants]
    bounds = [Case(layout, args.ahead[-1], k, args.n, drawn_ahead=True)
              for k in args.cells for layout in ("block4", "block8")]
    cases += bounds
    for case in cases:
        case.run(1)  # compile
    interleaved(cases, args.rounds, args.sweeps)
    same = all(case.result == other.result for case in cases for other in cases
               if case.k == other.k and not case.drawn_ahead and not other.drawn_ahead)
    print(f"n = {args.n:,} records, ns per record update, best of {args.rounds} interleaved "
          f"rounds of {args.sweeps} sweeps; every layout the same acceptances and sums: "
          f"{same}\n")
    base = {case.name: case.best for case in cases if case.k == args.cells[0]}
    print("| layout | " + " | ".join(f"K = {k:,}" for k in args.cells) + " | ratio "
          + " | ratio ".join(f"{k:,}" for k in args.cells[1:]) + " | ns added at "
          f"{args.cells[-1]:,} |")
    print("|---" * (2 * len(args.cells) + 1) + "|")
    for layout, d, drawn in ([(v, d, False) for v, d in variants]
                             + [(v, args.ahead[-1], True) for v in ("block4", "block8")]):
        row = [c for c in cases if (c.layout, c.ahead, c.drawn_ahead) == (layout, d, drawn)]
        name = row[0].name
        print(f"| {name} | " + " | ".join(f"{c.best:.1f}" for c in row) + " | "
              + " | ".join(f"{c.best / base[name]:.2f}" for c in row[1:])
              + f" | {row[-1].best - base[name]:.1f} |")
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()

"""
Census-style counts: a release of many small areas
==================================================

A census-style release end to end: simulate, release with discrete Gaussian noise (zCDP),
sample, summarise.

Records live in small areas (blocks) grouped into tracts; each has one of six categories. The
statistics office publishes the block-by-category and tract-by-category counts, each level
with discrete Gaussian noise of budget rho = 0.5 (the release is 1-zCDP), and the block sizes
(public, as in a census). dawrap's record sampler imputes each record's category, starting
from the release (each block's records drawn to match its noisy counts within its size);
every record touches two released cells, so a record update costs the same for 10 blocks or
10 000 (docs/tables.md). More levels, cross-classified attributes and marginal queries:
dawrap.models.census (this model is its one-level case).

Run: ``python examples/gallery/plot_noisy_blocks.py [--blocks 400] [--per-block 50]``.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import small_area


# %%
# Simulate, release, sample, summarise
# ------------------------------------


def main(blocks: int = 400, per_block: int = 50, categories: int = 6, per_tract: int = 10,
         draws: int = 500, tune: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    # 1. Simulate: block sizes (public), per-block category probabilities, records.
    sizes = rng.poisson(per_block, blocks) + 1
    tracts = np.arange(blocks) // per_tract
    p_true = rng.dirichlet(np.full(categories, 5.0), blocks)
    cats = np.concatenate([rng.choice(categories, size=s, p=p_true[b])
                           for b, s in enumerate(sizes)])
    x = small_area.records(sizes, cats)

    # 2. Release: block and tract counts with discrete Gaussian noise, rho = 0.5 per level.
    mech = small_area.discrete_gaussian(tracts, categories, rho=(0.5, 0.5))
    s_dp = mech.release(x, seed=seed + 1)

    # 3. Sample the posterior: the record sampler, started from the release.
    model = small_area.model(sizes, categories)
    idata = dw.sample(model, mech, s_dp, n=int(sizes.sum()), draws=draws, tune=tune,
                      chains=2, seed=seed + 2, progress=False)

    # 4. Summarise: block 0's category shares, against the truth and the noisy counts.
    p = diagnostics.group(idata, "posterior")["p"].values[:, :, 0, :]
    noisy = np.clip(s_dp[:categories], 0, None) / sizes[0]
    print(f"{len(sizes)} blocks, {sizes.sum()} records, {mech.size} released cells, "
          f"rho = {mech.privacy['rho']:g}")
    print("category  truth  noisy share  posterior mean  90% interval")
    for c in range(categories):
        lo, hi = np.quantile(p[..., c], [0.05, 0.95])
        print(f"{c:8d}  {p_true[0, c]:.3f}  {noisy[c]:11.3f}  {p[..., c].mean():14.3f}  "
              f"[{lo:.3f}, {hi:.3f}]")
    return idata


# %%
# Block 0 of the release
# ----------------------
# The posterior shares of block 0's categories next to the truth and to the noisy counts
# divided by the block's size. (``DAWRAP_DOCS_FAST=1``: the reduced size of the
# documentation build in CI.)
if __name__ == "__main__":
    fast = os.environ.get("DAWRAP_DOCS_FAST") == "1"
    ap = argparse.ArgumentParser(description="A census-style release end to end")
    ap.add_argument("--blocks", type=int, default=40 if fast else 400)
    ap.add_argument("--per-block", type=int, default=50)
    args = ap.parse_args()
    main(args.blocks, args.per_block)

r"""
A county's noisy measurements: block-level estimates with honest intervals
==========================================================================

**Data (simulated, of realistic sizes).** One county of 30 tracts and 600 blocks; block
populations skewed as real ones are (a tenth of the blocks empty, a median of about 25
persons, some of several hundred), about 20 000 persons in all. Each person is classified by
voting age (2) x Hispanic origin (2) x race (7 groups here; the 2020 redistricting data has
63): 28 cells. Cell probabilities vary from tract to tract and block to block around the
county's.

**Release**, in the shape of the 2020 Census noisy measurement files (discrete Gaussian
noise, zCDP): the county's detailed histogram (rho 1), every tract's detailed histogram
(rho 0.5), every block's total (rho 0.5) and its counts by voting age x Hispanic origin
(rho 0.5). Only the county's population is exact (an invariant), as the state populations were
in 2020: block populations are known only through their noisy totals.

**Analysis.** :mod:`dawrap.models.census` with the county's total public, the prior following
county and tracts (each tract's probabilities Dirichlet around the county's), blocks placed
within the county by their shares. The posterior of the confidential block and tract counts
(``keep_stats=True``) is set beside the truth, the noisy measurements and generalised least
squares (GLS), the estimate the Census Bureau's uncertainty product computes (here the GLS
of the block-by-voting-age totals, the quantity every block releases).
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import census

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
TRACTS, BLOCKS = (15, 10) if FAST else (30, 20)
# Long enough for every R-hat below 1.01 and every bulk ESS above 100 a chain, at either size
DRAWS, TUNE = (1000, 1000) if FAST else (2000, 2000)
rng = np.random.default_rng(2020)

# %%
# The confidential population
# ---------------------------
units = TRACTS * BLOCKS
tract_of = np.repeat(np.arange(TRACTS), BLOCKS)
geo = census.Geography({"county": np.zeros(units, int), "tract": tract_of,
                        "block": np.arange(units)},
                       {"voting_age": 2, "hispanic": 2, "race": 7})
sizes = np.where(rng.random(units) < 0.1, 0,
                 np.round(rng.lognormal(np.log(25), 0.9, units))).astype(int)
county_p = rng.dirichlet(np.full(geo.cells, 1.0))
tract_p = rng.dirichlet(60 * county_p, TRACTS)
block_p = np.array([rng.dirichlet(40 * tract_p[t]) for t in tract_of])
counts = rng.multinomial(sizes, block_p)                      # blocks x 28 cells
n = int(sizes.sum())
print(f"{units} blocks in {TRACTS} tracts, {n} persons; block sizes: median "
      f"{np.median(sizes):.0f}, largest {sizes.max()}, {np.mean(sizes == 0):.0%} empty")

# %%
# The release
# -----------
queries = [census.query("county", "detailed", rho=1.0),
           census.query("tract", "detailed", rho=0.5),
           census.query("block", "total", rho=0.5),
           census.query("block", ("voting_age", "hispanic"), rho=0.5)]
mech = census.discrete_gaussian(geo, queries)
s_dp = mech.release(census.records(counts), seed=1)
layout = census.layout_of(mech)
print(f"{mech.size} released cells, rho = {mech.privacy['rho']:g} in all; noise sd "
      f"{', '.join(f'{s:.2f}' for s in mech.sigmas)} for the four queries")
noisy_totals = layout.table(s_dp, 2)[:, 0]
print(f"negative noisy block totals: {np.mean(noisy_totals < 0):.1%} of the blocks")

# %%
# The posterior
# -------------
# hyper_steps=10: five times the default HMC steps for log_alpha per iteration, which one
# county determines weakly (a rare cell's entry mixed slowest with the default 2)
model = census.model(geo, totals=[n], invariant="county", levels=("county", "tract"),
                     hyper_steps=10)
idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=TUNE, chains=4, seed=3,
                  keep_stats=True, progress=False)
t = diagnostics.group(idata, "imputed_statistic")["t"].values.reshape(-1, mech.size)
post = diagnostics.group(idata, "posterior")
hyper = np.concatenate([post["log_alpha"].values.reshape(4, DRAWS, -1),
                        post["log_kappa"].values], axis=2)
worst = max(diagnostics.rhat(hyper[..., j]) for j in range(hyper.shape[2]))
print(f"sampling {idata.attrs['sampling_time']:.0f} s; worst R-hat of the hyperparameters "
      f"{worst:.3f}")

# %%
# Block populations and block counts by voting age x Hispanic origin
# ------------------------------------------------------------------
# 90% intervals against the truth. GLS here: each block's four released cells and its total,
# combined by least squares given the noise variances (block by block: the county and tract
# tables are of other cells), its interval the usual estimate +- 1.645 sd.


def coverage(lo, hi, truth):
    return np.mean((lo <= truth) & (truth <= hi))


true_va = counts.reshape(units, 2, 2, 7).sum(axis=3).reshape(units, 4)
block_va = t[:, layout.offsets[3]:layout.offsets[3] + layout.sizes[3]]
lo, hi = np.quantile(block_va, [0.05, 0.95], axis=0)
var = mech.noise_variance()
v_cell, v_total = var[layout.offsets[3]], var[layout.offsets[2]]
y = layout.table(s_dp, 3)
# GLS of four cells measured directly (variance v_cell) and their sum (variance v_total)
gain = v_cell / (4 * v_cell + v_total)
gls = y + gain * (noisy_totals[:, None] - y.sum(axis=1, keepdims=True))
gls_sd = np.sqrt(v_cell - gain * v_cell)
mass = np.mean((lo <= block_va) & (block_va <= hi))  # the intervals' posterior mass
print(f"coverage of the true block counts by voting age x Hispanic origin: dawrap "
      f"{coverage(lo.reshape(units, 4), hi.reshape(units, 4), true_va):.3f} (its 5%-95% "
      f"intervals of whole counts hold {mass:.3f} of the posterior), GLS "
      f"{coverage(gls - 1.645 * gls_sd, gls + 1.645 * gls_sd, true_va):.3f} (nominal 0.900)")
print(f"mean interval width: dawrap {np.mean(hi - lo):.2f}, GLS {2 * 1.645 * gls_sd:.2f}; "
      f"negative GLS estimates {np.mean(gls < 0):.1%}")
tract_t = t[:, layout.offsets[1]:layout.offsets[1] + layout.sizes[1]]
true_tract = np.array([counts[tract_of == k].sum(axis=0) for k in range(TRACTS)]).ravel()
lo_t, hi_t = np.quantile(tract_t, [0.05, 0.95], axis=0)
print(f"coverage of the true tract counts (28 cells each): {coverage(lo_t, hi_t, true_tract):.3f}")

fig, ax = plt.subplots(figsize=(7, 3.4))
show = np.argsort(sizes)[::-1][:40][::-1]         # the 40 largest blocks, voting-age adults
cell = 2                                          # voting age, not Hispanic
truth = true_va[show, cell]
order = np.argsort(truth)
xs = np.arange(len(show))
ax.vlines(xs, lo.reshape(units, 4)[show[order], cell], hi.reshape(units, 4)[show[order], cell],
          color="C0", lw=3, alpha=0.6, label="dawrap 90% interval")
ax.plot(xs, y[show[order], cell], "x", color="C3", label="noisy measurement")
ax.plot(xs, truth[order], "k.", label="truth")
ax.set(xlabel="block (40 largest, by true count)", ylabel="persons",
       title="Adults, not Hispanic, per block")
ax.legend(loc="upper left")
fig.tight_layout()

# %%
# The block-level intervals are narrower than GLS's, because the posterior knows that counts
# are whole numbers >= 0 and that blocks resemble their tract, and they cover the truth at
# about their nominal rate (the posterior mass a 5%-95% interval of whole counts holds, above
# 90%); GLS's estimates of small counts are often negative. Where a block's release says nothing about a cell (race is released only for
# tracts), the block's count comes from its tract's probabilities: with the prior's levels at
# county and tract (``levels=``), blocks are exchangeable within their tract.

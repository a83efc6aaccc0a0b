"""A synthetic census geography for the census benchmarks: counties of tracts of blocks,
persons cross-classified by voting age x Hispanic origin x race, cell probabilities drawn
from the census model's own hierarchical prior (each unit Dirichlet around its parent's).

``synthetic(records, counties, tracts, blocks, races, ...)`` returns the geography, the
block sizes, the true counts per block and cell, and the true probabilities per level.
"""
from __future__ import annotations

import numpy as np

from dawrap.models import census

__all__ = ["synthetic"]


def synthetic(records: int, counties: int, tracts: int, blocks: int, races: int = 7,
              kappa=(200.0, 50.0, 20.0), seed: int = 24):
    """``counties`` counties of ``tracts`` tracts of ``blocks`` blocks; block sizes
    1 + multinomial; top shares Dirichlet(2) over 2 x 2 x ``races`` cells, then each county,
    tract and block Dirichlet(``kappa[l]`` x its parent's)."""
    rng = np.random.default_rng(seed)
    units = counties * tracts * blocks
    county = np.repeat(np.arange(counties), tracts * blocks)
    tract = np.repeat(np.arange(counties * tracts), blocks)
    geo = census.Geography({"county": county, "tract": tract, "block": np.arange(units)},
                           {"voting_age": 2, "hispanic": 2, "race": races})
    cells = geo.cells
    top = rng.dirichlet(np.full(cells, 2.0))
    p_county = rng.dirichlet(kappa[0] * top, counties)
    p_tract = np.array([rng.dirichlet(kappa[1] * p_county[c]) for c in
                        np.repeat(np.arange(counties), tracts)])
    p_block = np.array([rng.dirichlet(kappa[2] * p_tract[t]) for t in tract])
    sizes = 1 + rng.multinomial(records - units, np.full(units, 1.0 / units))
    counts = rng.multinomial(sizes, p_block)
    return geo, sizes, counts, {"county": p_county, "tract": p_tract, "block": p_block}

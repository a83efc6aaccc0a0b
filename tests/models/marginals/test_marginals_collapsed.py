"""The marginals model's collapsed move (models/marginals/collapsed.py) on its own: with its
fresh draw of theta it samples the exact posterior (enumeration), keeps the running
statistics, and is chosen by ``collapsed_moves`` as documented."""
import numpy as np
import pytest

from dawrap import diagnostics
from dawrap.models import marginals
from dawrap.models.marginals import graphical as _graphical
from dawrap.models.marginals.collapsed import AUTO_MAX_RESIDUAL, collapsed_move
from dawrap.samplers.record import RecordState

#: Monte Carlo standard errors allowed (tests/conftest.py's Z)
Z = 4.0
ALPHA = 0.5
# Small priors (0.5 prior records over each clique) so that the urn's prior part and its
# copies of the other records both matter. The structures: a chain of two cliques, (x0, x1)
# then (x1, x2), the child's residual drawn given its separator; a forest, whose isolated
# attribute is a second root with an empty separator; two cliques sharing a separator of
# two attributes.
STRUCTURES = {
    "chain": ((2, 2, 3), [(0, 1), (1, 2)],
              [[0, 0, 0], [0, 1, 2], [1, 1, 1], [1, 0, 0], [0, 1, 1], [1, 1, 2]]),
    "forest": ((2, 3, 2, 2), [(0, 1), (1, 2), (3,)],
               [[0, 0, 0, 1], [1, 2, 1, 0], [1, 1, 0, 0], [0, 2, 1, 1], [0, 0, 1, 0]]),
    "two-attribute separator": ((2, 2, 2, 2), [(0, 1, 2), (1, 2, 3)],
                                [[0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 1, 1],
                                 [0, 0, 0, 1]]),
}


def _state(model, mech, s_dp, x, rng):
    fns = _graphical.functions(model.structure, ALPHA)
    size = _graphical.layout(model.structure).size
    stats, one = np.zeros(size), np.zeros(size)
    for record in x:
        fns.clique_counts(record, one)
        stats += one
    total = mech.total(x)
    return RecordState(fns.draw_theta(rng, np.zeros(size), x, stats), x, stats, total,
                       mech.log_density(s_dp, total, mech.params), np.zeros(0), np.zeros(0),
                       np.zeros(2, np.int64))


@pytest.mark.slow
@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_the_move_alone_samples_the_exact_posterior_and_keeps_its_statistics(
        structure, check_posterior):
    # The move and its draw of theta given the moved records, run as the whole sampler (the
    # urn's prior part reaches every record, so it is irreducible on its own): theta's draws
    # against enumeration, every clique cell; and the pair (theta, records) through
    # E[theta_j n_j], which a theta drawn from records other than the ones it is kept with
    # would miss.
    levels, tables, x = STRUCTURES[structure]
    x = np.array(x, float)
    model = marginals.model(levels, tables, alpha=ALPHA, centre=None)
    noises = [marginals.Noise.gaussian(0.7), marginals.Noise.laplace(1.0),
              marginals.Noise.gaussian(1.0)][:len(tables)]
    mech = marginals.mechanism(levels, tables, noises)
    s_dp = mech.release(x, seed=3)
    move = collapsed_move(model.structure, ALPHA, rate=1.0).build(mech)
    chains, iterations = 4, 4000
    theta = np.empty((chains, iterations, model.theta_size))
    counts = np.empty((chains, iterations, model.theta_size))
    accepted = []
    for chain in range(chains):
        rng = np.random.default_rng(40 + chain)
        state = _state(model, mech, s_dp, x.copy(), rng)
        for it in range(iterations):
            state, accept, status = move.step(rng, state, s_dp, mech.params, False)
            assert status == 0
            accepted.append(accept)
            theta[chain, it], counts[chain, it] = state.theta, state.stats
        # the running statistics follow the records
        fresh = _state(model, mech, s_dp, state.x, rng)
        assert np.array_equal(state.stats, fresh.stats)
        assert np.allclose(state.total, mech.total(state.x))
        assert state.log_g == pytest.approx(fresh.log_g, abs=1e-9)
    assert 0.05 < np.nanmean(accepted) < 0.95
    exact = marginals.exact_posterior(model, mech, s_dp, len(x))
    n_j = exact._clique_counts                    # (tables, theta_size): each table's counts
    lay = _graphical.layout(model.structure)
    for j in range(model.theta_size):
        law = exact.theta(j)
        check_posterior(theta[..., j], law, probs=())
        # quantiles by the share of draws below the exact one (a quantile's own Monte Carlo
        # error is not reliable where a cell's Beta has a shape far below one and its lower
        # quantiles are near 1e-12); where the mixture's ppf has no precision left (its cdf
        # misses p, below about 1e-14), that quantile is not compared
        for p in (0.05, 0.5, 0.95):
            q = law.ppf(p)
            if abs(float(np.ravel(law.cdf(q))[0]) - p) > 1e-3:
                continue
            below = (theta[..., j] < q).astype(float)
            assert abs(below.mean() - p) < Z * diagnostics.mcse(below, "mean"), (j, p)
        # the joint law: given a table, theta_j ~ Beta(a + n_j, ...) of mean
        # (a + n_j) / (alpha + n), a the clique's concentration
        c = int(np.searchsorted(lay.offset, j, side="right") - 1)
        a = ALPHA / (lay.offset[c + 1] - lay.offset[c])
        expected = exact.weights @ (n_j[:, j] * (a + n_j[:, j]) / (ALPHA + len(x)))
        product = theta[..., j] * counts[..., j]
        assert abs(product.mean() - expected) < Z * diagnostics.mcse(product, "mean"), j


LEVELS, TABLES = STRUCTURES["chain"][:2]


def test_collapsed_moves_auto_and_bad_values():
    assert marginals.model(LEVELS, TABLES).records_move is not None      # on by default
    assert marginals.model(LEVELS, TABLES, collapsed_moves=0).records_move is None
    # a child clique whose residual is too large to scan per step: "auto" runs none
    big = (2, 2, AUTO_MAX_RESIDUAL + 1)
    assert marginals.model(big, TABLES).records_move is None
    assert marginals.model(big, TABLES, collapsed_moves=1).records_move is not None
    for bad in (-1, 101, float("nan"), True, "often"):
        with pytest.raises(ValueError, match="collapsed_moves must be 'auto' or a number"):
            marginals.model(LEVELS, TABLES, collapsed_moves=bad)


def test_the_built_move_says_what_runs():
    # alone, the collapsed move; with ridge moves, both in turn, the ridge moves first
    mech = marginals.gaussian(LEVELS, TABLES, rho=1.0)
    alone = marginals.model(LEVELS, TABLES).records_move.build(mech)
    assert "collapsed" in alone.name and len(alone.parts) == 1
    cycle = [(0, 1), (1, 2), (0, 2)]
    both = marginals.model(LEVELS, cycle).records_move.build(marginals.gaussian(LEVELS, cycle,
                                                                                rho=1.0))
    assert len(both.parts) == 2 and both.name.startswith("marginals ridge moves (marginals.model(..., "
                                                      "ridge_moves=False) turns them off); "
                                                      "marginals collapsed")

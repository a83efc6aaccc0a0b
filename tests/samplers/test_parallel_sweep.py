"""The parallel sweep's pieces (dawrap.samplers.parallel): the shared cells' pieces and
latent variances drawn from their exact conditional laws, the partition's checks, the groups'
generators."""
import numpy as np
import pytest
from scipy import integrate, stats

import dawrap as dw
from dawrap.models import beta_binomial
from dawrap.samplers import parallel
from dawrap.mechanisms.families import Split, of_coordinate
from dawrap.samplers.parallel import Partition, check_partition, draw_pieces, draw_scales


def test_pieces_follow_the_gaussian_conditioned_on_their_sum():
    # e_g iid N(0, sigma^2 / G) given sum_g e_g = c: mean c / G, variance
    # sigma^2 / G (1 - 1 / G), covariance -sigma^2 / G^2, and the pieces add up to s exactly.
    groups, draws, sigma = 3, 40_000, 2.0
    s_dp, params = np.array([7.0]), np.array([1.0 / sigma])
    local_total = np.tile(np.array([[1.0], [4.0], [-2.0]]), (1, draws))  # T = 3, c = 4
    total = np.array([3.0])
    shared = np.zeros(draws, np.int64)  # every column an independent draw for cell 0
    release = np.empty((groups, draws))
    piece_scale = np.full(draws, np.sqrt(groups) * params[0])  # sqrt(G) / sigma
    draw_pieces(np.random.default_rng(5), s_dp, total, shared, piece_scale, local_total,
                release)
    e = release - local_total
    assert np.allclose(release.sum(axis=0), 7.0)
    var, cov = sigma ** 2 / groups * (1 - 1 / groups), -sigma ** 2 / groups ** 2
    mean_error = np.sqrt(var / draws)
    assert np.all(np.abs(e.mean(axis=1) - 4.0 / groups) < 4 * mean_error)
    sample_cov = np.cov(e)
    # the sd of a sample (co)variance of Gaussians is about sqrt(2 / draws) var
    tol = 4 * np.sqrt(2.0 / draws) * var
    assert np.all(np.abs(np.diag(sample_cov) - var) < tol), np.diag(sample_cov)
    off = sample_cov[~np.eye(groups, dtype=bool)]
    assert np.all(np.abs(off - cov) < tol), off


# (b, c): the scale and the residual s - T of a shared cell; c = 0 is the other branch
# (integer data); at c = 1e-15 against b = 2, Generator.wald's form cancels (it returns 0 for
# about one draw in ten there).
LATENT_CASES = [(2.0, 0.0), (2.0, 1e-15), (2.0, 1e-3), (2.0, 0.7), (2.0, 3.0), (2.0, 25.0),
                (0.25, 1.0)]


def sd_cdf(b: float, c: float):
    """The CDF of sqrt(V) under p(V | c) ∝ V^(-1/2) exp(-c^2/2V - V/2b^2), normalised
    numerically: with t = sqrt(V) the density is ∝ exp(-c^2/2t^2 - t^2/2b^2), smooth on
    t > 0 (the change of variable absorbs V^(-1/2)), integrated by the trapezoid rule on a
    fine grid (its mode is at sqrt(|c| b), its width about b)."""
    top = np.sqrt(abs(c) * b) + 15.0 * b
    t = np.unique(np.r_[np.geomspace(1e-12, 1.0, 20_000) * b,
                        np.linspace(0.0, top, 400_001)[1:]])
    density = np.exp(-c * c / (2.0 * t * t) - t * t / (2.0 * b * b))
    cdf = integrate.cumulative_trapezoid(density, t, initial=0.0)
    cdf /= cdf[-1]
    return lambda x: np.interp(x, t, cdf)


def test_latent_variances_follow_their_conditional_law():
    # Every column an independent shared cell: V from draw_scales (V = G / piece_scale^2)
    # against the exact law of V given c, by Kolmogorov-Smirnov on sqrt(V).
    groups, draws = 3, 20_000
    cases = len(LATENT_CASES)
    b = np.array([case[0] for case in LATENT_CASES])
    c = np.array([case[1] for case in LATENT_CASES])
    s_dp, total, inverse_b = 10.0 + c, np.full(cases, 10.0), 1.0 / b
    shared = np.repeat(np.arange(cases), draws)
    piece_scale = np.empty(shared.shape[0])
    draw_scales(np.random.default_rng(11), s_dp, total, inverse_b[shared], shared, groups,
                piece_scale)
    sd = np.sqrt(groups / piece_scale ** 2).reshape(cases, draws)
    for k, (scale, residual) in enumerate(LATENT_CASES):
        assert np.all(np.isfinite(sd[k]) & (sd[k] > 0)), (scale, residual)
        p_value = stats.kstest(sd[k], sd_cdf(scale, residual)).pvalue
        assert p_value > 1e-3, (scale, residual, p_value)
    # the c = 0 branch is V = b^2 chi^2_1: mean b^2 = 4, sd sqrt(2) b^2
    assert abs(np.mean(sd[0] ** 2) - 4.0) < 4 * np.sqrt(2.0 / draws) * 4.0


def test_a_wrong_latent_law_fails_the_check():
    # The reference CDF agrees with numpy's own inverse Gaussian (1/V of mean 1/(b |c|),
    # shape 1/b^2), and the check fails for V drawn with mean and shape swapped, or at its
    # prior mean 2 b^2.
    b, c, draws = 2.0, 3.0, 20_000
    rng = np.random.default_rng(11)
    numpy_draws = 1.0 / np.sqrt(rng.wald(1.0 / (b * c), 1.0 / b ** 2, draws))
    assert stats.kstest(numpy_draws, sd_cdf(b, c)).pvalue > 1e-3
    swapped = 1.0 / np.sqrt(rng.wald(1.0 / b ** 2, 1.0 / (b * c), draws))
    assert stats.kstest(swapped, sd_cdf(b, c)).pvalue < 1e-6
    assert stats.kstest(np.full(draws, np.sqrt(2.0) * b), sd_cdf(b, c)).pvalue < 1e-6


def test_the_noise_family_says_how_shared_cells_are_split():
    count = beta_binomial.count

    def split_of(mech):
        family = of_coordinate(mech.coordinate_log_density)
        return None if family is None else family.split

    assert split_of(dw.Laplace(count, epsilon=0.5)) is Split.LATENT
    assert split_of(dw.Geometric(count, epsilon=0.5)) is Split.LATENT
    assert split_of(dw.Gaussian(count, sigma=1.0)) is Split.PIECES
    assert split_of(dw.DiscreteGaussian(count, sigma=1.0)) is Split.PIECES
    assert of_coordinate(None) is None


def test_the_family_reads_the_shared_cells_scales_from_the_params():
    """The split's 1/b or 1/sigma per shared cell, as the grouped chain hands it to
    draw_scales and first_piece_scale (params[j] for the built-in families; the geometric's
    is epsilon / sensitivity, not 1 / (sensitivity / epsilon))."""
    count, cells = beta_binomial.count, np.array([2, 0])
    for mech in (dw.Laplace(count, epsilon=0.5, size=3), dw.Gaussian(count, 2.0, size=3),
                 dw.Geometric(count, epsilon=0.3, sensitivity=0.7, size=3),
                 dw.DiscreteGaussian(count, 3.0, size=3)):
        inverse = mech.noise.kind.cell_inverse_scale(mech.params, cells)
        assert inverse.tolist() == mech.params[cells].tolist()
    geometric = dw.Geometric(count, epsilon=0.3, sensitivity=0.7)
    assert geometric.noise.kind.cell_inverse_scale(geometric.params, np.array([0]))[0] == 0.3 / 0.7


def test_partition_checks_name_the_argument():
    with pytest.raises(ValueError, match="group 1 holds no record"):
        Partition(records=[0, 2], cells=[0])
    with pytest.raises(ValueError, match="cells must hold groups 0..1 or -1"):
        Partition(records=[0, 1], cells=[0, 2])
    with pytest.raises(ValueError, match="records must be a 1-d array of whole numbers"):
        Partition(records=[0.5, 1], cells=[0])
    part = Partition(records=[0, 1, 1], cells=[0, 1, -1])
    with pytest.raises(ValueError, match=r"partition.records must give one group per record "
                                         r"\(n = 4\)"):
        check_partition(part, 4, 3, 0, split=Split.PIECES, shared_statistic=False, model_nnz=0)
    with pytest.raises(ValueError, match=r"mechanism's statistic \(size = 2\)"):
        check_partition(part, 3, 2, 0, split=Split.PIECES, shared_statistic=False, model_nnz=0)
    with pytest.raises(ValueError, match="shares cell 2 .* Gaussian, discrete Gaussian, "
                                         "Laplace or geometric"):
        check_partition(part, 3, 3, 0, split=None, shared_statistic=False, model_nnz=0)
    with pytest.raises(TypeError, match="split must be a dawrap.mechanisms.families.Split or "
                                        "None, got 'laplace'"):
        check_partition(part, 3, 3, 0, split="laplace", shared_statistic=False, model_nnz=0)
    # Laplace and geometric noise are split exactly (latent variances)
    check_partition(part, 3, 3, 0, split=Split.LATENT, shared_statistic=False, model_nnz=0)
    # without shared cells any noise will do
    check_partition(Partition([0, 1, 1], [0, 1, 1]), 3, 3, 0, split=None,
                    shared_statistic=False, model_nnz=0)
    with pytest.raises(ValueError, match="partition.stats is for a model statistic declared"):
        check_partition(Partition([0, 1, 1], [0, 1, 1], stats=[0, 1]), 3, 3, 2,
                        split=Split.PIECES, shared_statistic=False, model_nnz=0)


def test_merge_units_balances_records_and_keeps_units_whole():
    rng = np.random.default_rng(0)
    unit = np.repeat(np.arange(500), rng.integers(1, 50, 500))
    group_of = parallel.merge_units(unit, 500, max_groups=8)
    sizes = np.bincount(group_of[unit])
    assert sizes.shape[0] == 8 and sizes.min() > 0
    assert sizes.max() < 1.2 * unit.shape[0] / 8  # units are small against a group
    assert np.all(np.diff(group_of) >= 0)  # consecutive units
    assert parallel.merge_units(np.array([0, 0]), 3, 8).tolist() == [0, 0, 0]


def test_group_generators_depend_on_the_chain_seed_only():
    def chain(seed, index):
        return np.random.Generator(np.random.PCG64(
            np.random.SeedSequence(seed).spawn(index + 1)[index]))

    first = [g.random(3) for g in parallel.group_generators(chain(1, 0), 3)]
    again = [g.random(3) for g in parallel.group_generators(chain(1, 0), 3)]
    other = [g.random(3) for g in parallel.group_generators(chain(1, 1), 3)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not any(np.array_equal(a, b) for a, b in zip(first, other))
    assert not np.array_equal(first[0], chain(1, 0).random(3))  # not the chain's own stream

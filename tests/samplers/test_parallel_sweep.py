"""The parallel sweep's pieces (dawrap.samplers.parallel): the shared cells' pieces drawn
from their exact conditional law, the partition's checks, the groups' generators."""
import numpy as np
import pytest

from dawrap.samplers import parallel
from dawrap.samplers.parallel import Partition, check_partition, draw_pieces


def test_pieces_follow_the_gaussian_conditioned_on_their_sum():
    # e_g iid N(0, sigma^2 / G) given sum_g e_g = c: mean c / G, variance
    # sigma^2 / G (1 - 1 / G), covariance -sigma^2 / G^2, and the pieces add up to s exactly.
    groups, draws, sigma = 3, 40_000, 2.0
    s_dp, params = np.array([7.0]), np.array([1.0 / sigma])
    local_total = np.tile(np.array([[1.0], [4.0], [-2.0]]), (1, draws))  # T = 3, c = 4
    total = np.array([3.0])
    shared = np.zeros(draws, np.int64)  # every column an independent draw for cell 0
    release = np.empty((groups, draws))
    draw_pieces(np.random.default_rng(5), s_dp, total, params, shared, local_total, release)
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
        check_partition(part, 4, 3, 0, gaussian=True, shared_statistic=False, model_nnz=0)
    with pytest.raises(ValueError, match=r"mechanism's statistic \(size = 2\)"):
        check_partition(part, 3, 2, 0, gaussian=True, shared_statistic=False, model_nnz=0)
    with pytest.raises(ValueError, match="shares cell 2 .* Gaussian or discrete Gaussian"):
        check_partition(part, 3, 3, 0, gaussian=False, shared_statistic=False, model_nnz=0)
    # without shared cells any noise will do
    check_partition(Partition([0, 1, 1], [0, 1, 1]), 3, 3, 0, gaussian=False,
                    shared_statistic=False, model_nnz=0)
    with pytest.raises(ValueError, match="partition.stats is for a model statistic declared"):
        check_partition(Partition([0, 1, 1], [0, 1, 1], stats=[0, 1]), 3, 3, 2,
                        gaussian=True, shared_statistic=False, model_nnz=0)


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

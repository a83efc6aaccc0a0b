"""The naive-Bayes log-linear model: release layout and sensitivity by brute force, the
near-noiseless limit against the conjugate posterior, and the record sampler against exact
enumeration of the count tables."""
import itertools

import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import naive_bayes


def all_records(I, J):
    return np.array(list(itertools.product(range(I), *(range(j) for j in J))), dtype=float)


def contribution(I, J, record):
    out = np.full(I * sum(J), np.nan)
    naive_bayes.counts(I, J)(record, out)
    return out


@pytest.mark.parametrize("I, J", [(2, [2]), (2, [3, 2]), (3, [2, 3, 2]), (4, [2, 2, 2, 3])])
def test_sensitivity_is_2K_by_brute_force(I, J):
    records = all_records(I, J)
    rows = np.array([contribution(I, J, r) for r in records])
    l1 = np.abs(rows[:, None, :] - rows[None, :, :]).sum(-1)
    K = len(J)
    assert l1.max() == 2 * K == naive_bayes.sensitivity(J)
    assert naive_bayes.laplace(0.5, I, J).sensitivity == 2 * K
    assert naive_bayes.laplace(0.5, I, J).scale == 2 * K / 0.5
    # The bound is attained exactly by the pairs with different classes.
    different_class = records[:, None, 0] != records[None, :, 0]
    assert np.all(l1[different_class] == 2 * K)


def test_release_layout():
    """Cell (k, i, j) sits at I (J_1 + .. + J_{k-1}) + i J_k + j: one count per table."""
    I, J = 3, [2, 4, 3]
    offsets = I * np.concatenate([[0], np.cumsum(J)[:-1]])
    for record in all_records(I, J):
        expected = np.zeros(I * sum(J))
        y = int(record[0])
        for k, jk in enumerate(J):
            expected[offsets[k] + y * jk + int(record[1 + k])] = 1.0
        assert np.array_equal(contribution(I, J, record), expected)


@pytest.mark.slow
def test_records_follow_the_model_and_the_release_counts_them():
    I, J, n = 3, [2, 4], 30000
    model = naive_bayes.model(I, J)
    theta = {"pi": np.array([0.2, 0.5, 0.3]),
             "p1": np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]]),
             "p2": np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1],
                             [0.25, 0.25, 0.25, 0.25]])}
    x = model.simulate(theta, n, seed=0)
    y = x[:, 0].astype(int)
    # Binomial sd of a frequency is at most 0.5 / sqrt(count); 5 sd.
    assert np.allclose(np.bincount(y, minlength=I) / n, theta["pi"], atol=5 * 0.5 / n ** 0.5)
    for k, jk in enumerate(J):
        for i in range(I):
            xs = x[y == i, 1 + k].astype(int)
            assert np.allclose(np.bincount(xs, minlength=jk) / len(xs), theta[f"p{k + 1}"][i],
                               atol=5 * 0.5 / len(xs) ** 0.5)
    # The release totals are the co-occurrence tables, the conjugate counts.
    total = naive_bayes.laplace(1.0, I, J).total(x)
    post = naive_bayes.nonprivate_posterior(x, I, J, alpha=1.0, alpha_feature=1.0)
    assert np.array_equal(post["pi"] - 1.0, np.bincount(y, minlength=I))
    assert np.array_equal(total, np.concatenate([(post["p1"] - 1.0).ravel(),
                                                 (post["p2"] - 1.0).ravel()]))


@pytest.mark.slow
def test_huge_epsilon_recovers_the_nonprivate_conjugate_posterior(check_posterior):
    """At epsilon = 1e6 the release is the table itself: the private posterior is the
    conjugate one. Unequal J_k and non-uniform priors, so a layout or prior mix-up shows."""
    I, J, n = 3, [2, 3, 4], 60
    alpha, alpha_feature = [1.0, 2.0, 3.0], [1.0, np.array([1.0, 2.0, 3.0]), 2.5]
    model = naive_bayes.model(I, J, alpha, alpha_feature)
    mech = naive_bayes.laplace(1e6, I, J)
    x = model.simulate(naive_bayes.draw_parameters(I, J, seed=10), n, seed=11)
    idata = dw.sample(model, mech, mech.release(x, seed=12), n, draws=2000, tune=1000,
                      seed=13, keep_stats=True)
    # The chains start from prior draws; warm-up brings their imputed tables to the release.
    imputed = diagnostics.group(idata, "imputed_statistic")["t"].values
    assert np.array_equal(imputed, np.broadcast_to(mech.total(x), imputed.shape))
    post = diagnostics.group(idata, "posterior")
    for name, conc in naive_bayes.nonprivate_posterior(x, I, J, alpha, alpha_feature).items():
        draws = post[name].values
        assert draws.shape[2:] == conc.shape
        for idx in np.ndindex(conc.shape):
            total = conc[idx[:-1]].sum()
            check_posterior(draws[(slice(None), slice(None)) + idx],
                            stats.beta(conc[idx], total - conc[idx]))


def test_exact_posterior_matches_brute_force_over_datasets():
    """The factorised enumeration in exact_posterior against a sum over every multiset of
    records, weighted by its marginal likelihood (Dirichlet normalisers) and g."""
    from scipy.special import gammaln, logsumexp

    I, J, n = 2, [2, 3], 3
    alpha, alpha_feature = np.array([1.0, 2.5]), [1.5, np.array([[1.0, 2.0, 0.5]])]
    mech = naive_bayes.laplace(1.5, I, J)
    s_dp = np.array([2.4, -0.7, 1.2, 0.3, 0.9, 1.8, -0.2, 0.1, 2.2, 0.4])
    exact = naive_bayes.exact_posterior(mech, s_dp, n, I, J, alpha, alpha_feature)

    def log_beta(a):
        return gammaln(a).sum() - gammaln(a.sum())

    records = all_records(I, J)
    rows = np.array([contribution(I, J, r) for r in records])
    a_feature = np.concatenate([np.broadcast_to(a, (I, j)).ravel()
                                for a, j in zip(alpha_feature, J)])
    log_w, tables = [], []
    for multiset in itertools.combinations_with_replacement(range(len(records)), n):
        u = np.bincount(multiset, minlength=len(records))
        table = u @ rows
        classes = np.bincount(records[list(multiset), 0].astype(int), minlength=I)
        lw = gammaln(n + 1) - gammaln(u + 1).sum()  # orderings of the multiset
        lw += log_beta(alpha + classes) - log_beta(alpha)
        start = 0
        for j in J:
            for i in range(I):
                cells = slice(start + i * j, start + (i + 1) * j)
                lw += log_beta(a_feature[cells] + table[cells]) - log_beta(a_feature[cells])
            start += I * j
        log_w.append(lw + mech.log_g(s_dp, table))
        tables.append(np.concatenate([classes, table]))
    w = np.exp(np.array(log_w) - logsumexp(log_w))
    tables = np.array(tables)
    # E[p | s] = sum_tables w E[p | table]; likewise the second moment.
    conc = np.concatenate([alpha, a_feature]) + tables
    flat = [exact["pi"][i] for i in range(I)]
    totals = [conc[:, :I].sum(1)] * I
    start = I
    for k, j in enumerate(J):
        for i in range(I):
            for jj in range(j):
                flat.append(exact[f"p{k + 1}"][i, jj])
                totals.append(conc[:, start:start + j].sum(1))
            start += j
    for c, (mixture, total) in enumerate(zip(flat, totals)):
        mean = w @ (conc[:, c] / total)
        second = w @ (conc[:, c] * (conc[:, c] + 1) / (total * (total + 1)))
        assert mixture.mean() == pytest.approx(mean, rel=1e-10)
        assert mixture.std() == pytest.approx(np.sqrt(second - mean ** 2), rel=1e-8)


@pytest.mark.slow
def test_record_sampler_is_exact_at_moderate_epsilon(check_posterior, find_discrepancies):
    """Every marginal against the exact mixture over count tables; the same draws are also
    shown to be distinguishable from the posterior under a wrong noise scale (sensitivity K
    instead of 2K) and from the non-private posterior, so this test has power."""
    I, J, n, eps = 2, [2, 3], 8, 2.0
    model, mech = naive_bayes.model(I, J), naive_bayes.laplace(eps, I, J)
    x = model.simulate({"pi": np.array([0.3, 0.7]), "p1": np.array([[0.8, 0.2], [0.3, 0.7]]),
                        "p2": np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])}, n, seed=20)
    s_dp = mech.release(x, seed=21)
    idata = dw.sample(model, mech, s_dp, n, draws=6000, tune=500, seed=22)
    post = diagnostics.group(idata, "posterior")
    exact = naive_bayes.exact_posterior(mech, s_dp, n, I, J)
    wrong_scale = naive_bayes.exact_posterior(
        dw.Laplace(naive_bayes.counts(I, J), eps, sensitivity=len(J), size=mech.size),
        s_dp, n, I, J)
    nonprivate = naive_bayes.nonprivate_posterior(x, I, J)
    caught_wrong = caught_nonprivate = checked = 0
    for name in exact:
        for idx in np.ndindex(exact[name].shape):
            if name == "pi" and idx == (1,):
                continue  # pi_1 = 1 - pi_0
            draws = post[name].values[(slice(None), slice(None)) + idx]
            check_posterior(draws, exact[name][idx])
            checked += 1
            conc = nonprivate[name]
            beta = stats.beta(conc[idx], conc[idx[:-1]].sum() - conc[idx])
            caught_wrong += bool(find_discrepancies(draws, wrong_scale[name][idx]))
            caught_nonprivate += bool(find_discrepancies(draws, beta))
    assert caught_wrong > checked // 2 and caught_nonprivate > checked // 2


@pytest.mark.slow
def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="I .*>= 2"):
        naive_bayes.model(1, [2])
    with pytest.raises(TypeError, match="I "):
        naive_bayes.model(2.0, [2])
    with pytest.raises(TypeError, match="J must be a list of integers"):
        naive_bayes.model(2, "23")
    with pytest.raises(TypeError, match="J must be a list of integers"):
        naive_bayes.model(2, [2, 2.5])
    with pytest.raises(ValueError, match="J must list at least one feature"):
        naive_bayes.model(2, [])
    with pytest.raises(ValueError, match="J must list .* J_k >= 2"):
        naive_bayes.laplace(1.0, 2, [3, 1])
    with pytest.raises(ValueError, match="alpha must be a finite number > 0"):
        naive_bayes.model(2, [2], alpha=0.0)
    with pytest.raises(ValueError, match="alpha must be .* 3 numbers"):
        naive_bayes.model(3, [2], alpha=[1.0, 2.0])
    with pytest.raises(TypeError, match="alpha must be numbers"):
        naive_bayes.model(2, [2], alpha=["a", "b"])
    with pytest.raises(ValueError, match="alpha_feature must be .* one array per feature"):
        naive_bayes.model(2, [2, 3], alpha_feature=[1.0])
    with pytest.raises(ValueError, match=r"alpha_feature\[1\] must broadcast to \(I, J_k\)"):
        naive_bayes.model(2, [2, 3], alpha_feature=[1.0, [1.0, 2.0]])
    with pytest.raises(ValueError, match=r"alpha_feature\[0\] must be numbers > 0"):
        naive_bayes.model(2, [2, 3], alpha_feature=[-1.0, 1.0])
    with pytest.raises(ValueError, match="epsilon"):
        naive_bayes.laplace(0.0, 2, [2])
    with pytest.raises(ValueError, match=r"x\[1\] = .* is not a record"):
        naive_bayes.nonprivate_posterior([[0, 1], [2, 0]], 2, [2])
    with pytest.raises(ValueError, match=r"x must have shape \(n, 1 \+ K\)"):
        naive_bayes.nonprivate_posterior([[0, 1, 1]], 2, [2])
    mech = naive_bayes.laplace(1.0, 2, [2])
    with pytest.raises(TypeError, match="mechanism must add independent noise"):
        naive_bayes.exact_posterior(object(), np.zeros(4), 3, 2, [2])
    with pytest.raises(ValueError, match="mechanism must release I \\* sum\\(J\\) = 6"):
        naive_bayes.exact_posterior(mech, np.zeros(4), 3, 2, [3])
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        naive_bayes.exact_posterior(mech, np.zeros(4), 0, 2, [2])
    # A record the model cannot produce (here 1-based codes) is rejected by the sampler's
    # input checks, and contributes NaN to a release rather than writing out of bounds.
    model = naive_bayes.model(2, [2])
    with pytest.raises(ValueError, match=r"init_x\[1\] .* is not a possible record"):
        dw.sample(model, mech, np.zeros(4), 2, init_x=[[0, 0], [1, 2]], draws=5, tune=0)
    assert np.all(np.isnan(mech.total([[1, 1], [2, 1]])))


def test_a_layout_too_large_for_memory_is_refused_by_name():
    """I = J = 10^5 gave a bare MemoryError; the counts' memory is estimated first."""
    with pytest.raises(ValueError, match=r"I \* sum\(J\) = 10000000000 co-occurrence counts: "
                                         r"about .* GB of memory"):
        naive_bayes.model(I=10 ** 5, J=[10 ** 5])
    with pytest.raises(ValueError, match="GB of memory"):
        naive_bayes.laplace(1.0, I=10 ** 5, J=[10 ** 5])

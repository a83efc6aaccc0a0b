"""dawrap.mechanisms.Quantiles: the selection probabilities are the noisy argmax's exactly,
the releases follow them, and the record sampler's posterior from released quantiles is the
exact one (enumeration)."""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special, stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.mechanisms import Quantiles
from dawrap.reference import Grid, relative_log_g
from dawrap.models import poisson_gamma


def _exact_permute_and_flip(u: np.ndarray, b: float, k: int) -> Fraction:
    """P(k) = a_k int_0^1 prod_{j != k} (1 - a_j v) dv, expanded in elementary symmetric
    polynomials of the a_j, in exact rational arithmetic (the a_j as the floats they are)."""
    a = [Fraction(math.exp(-(v - u.min()) / b)) for v in u]
    others = [a[j] for j in range(len(a)) if j != k]
    e = [Fraction(1)] + [Fraction(0)] * len(others)      # e_r of the others
    for x in others:
        for r in range(len(others), 0, -1):
            e[r] += e[r - 1] * x
    return a[k] * sum((-1) ** r * e[r] / (r + 1) for r in range(len(e)))


def _scores(mech, t, q=0):
    return np.array(mech.scores(t)[q], dtype=float)


def test_the_exponential_selection_is_permute_and_flip_exactly():
    """Scales at which many candidates compete (within 40 scales of the best), so that the
    quadrature rules of several sizes are used, and the largest."""
    rng = np.random.default_rng(4)
    candidates = [2.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 16.0, 18.0, 20.0]
    for trial, scale in enumerate([0.5, 2.0, 6.0, 30.0]):
        x = rng.integers(0, 22, 40).astype(float)
        mech = Quantiles([(1, 2)], candidates, scale=scale)
        t = mech.total(x)
        u = _scores(mech, t)
        competing = int(np.sum((u - u.min()) / scale <= 40))
        assert competing >= (3 if trial == 0 else len(candidates)), (trial, u)
        p = np.exp([mech.log_g([c], t) for c in candidates])
        exact = np.array([float(_exact_permute_and_flip(u, mech.scale[0], k))
                          for k in range(len(candidates))])
        assert np.allclose(p, exact, rtol=1e-11, atol=1e-300), (trial, p, exact)
        assert math.isclose(p.sum(), 1.0, rel_tol=1e-12)


def test_the_selections_are_the_noisy_argmax_of_their_definition():
    """Against the definition, argmax_j (-u_j / b + Z_j), simulated: 400 000 draws each."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 22, 30).astype(float)
    candidates = [2.0, 5.0, 7.0, 11.0, 15.0]
    draws = 400_000
    for noise, sampler in (("exponential", rng.exponential), ("gumbel", rng.gumbel)):
        mech = Quantiles([0.5], candidates, scale=3.0, noise=noise)
        t = mech.total(x)
        u = _scores(mech, t)
        picked = np.argmax(-u / 3.0 + sampler(size=(draws, u.size)), axis=1)
        freq = np.bincount(picked, minlength=u.size) / draws
        p = np.exp([mech.log_g([c], t) for c in candidates])
        se = np.sqrt(p * (1 - p) / draws)
        assert np.all(np.abs(freq - p) < 5 * se + 1e-12), (noise, freq, p)
    gumbel = Quantiles([0.5], candidates, scale=3.0, noise="gumbel")
    soft = np.exp(-_scores(gumbel, gumbel.total(x)) / 3.0)
    assert np.allclose(np.exp([gumbel.log_g([c], gumbel.total(x)) for c in candidates]),
                       soft / soft.sum(), rtol=1e-12)


def test_scores_count_records_below_and_above_each_candidate_with_ties():
    mech = Quantiles([(1, 4)], [2.0, 5.0], scale=1.0)
    x = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 9.0])
    # c = 2: L = 1, G = 3: |3 * 1 - 1 * 3| = 0; c = 5: L = 4, G = 1: |12 - 1| = 11
    assert mech.scores(mech.total(x)) == [[0, 11]]
    capped = Quantiles([(1, 4)], [2.0, 5.0], scale=1.0, size_limit=2)
    assert capped.scores(capped.total(x)) == [[abs(3 * 1 - 2), abs(3 * 2 - 1)]]


def test_releases_follow_the_selection_probabilities(chi_square_p):
    mech = Quantiles([0.25, 0.75], [1.0, 2.0, 3.0, 4.0], scale=[2.0, 4.0])
    x = np.repeat([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [3, 2, 4, 2, 1, 3])
    t = mech.total(x)
    rng = np.random.default_rng(8)
    draws = 20_000
    seen = np.array([mech.release_given_total(rng, t) for _ in range(draws)])
    for q in range(2):
        p = np.array([sum(np.exp(mech.log_g([a, b], t)) for b in mech.candidates[1])
                      if q == 0 else sum(np.exp(mech.log_g([b, a], t))
                                         for b in mech.candidates[0])
                      for a in mech.candidates[q]])
        observed = np.array([np.sum(seen[:, q] == c) for c in mech.candidates[q]])
        assert chi_square_p(observed, p) > 1e-4, (q, observed, draws * p)


def test_what_is_not_a_quantile_release_is_named():
    with pytest.raises(ValueError, match="strictly increasing"):
        Quantiles([0.5], [1.0, 1.0, 2.0], scale=1.0)
    with pytest.raises(ValueError, match=r"alphas\[0\] must be a level in \[0, 1\]"):
        Quantiles([1.5], [1.0, 2.0], scale=1.0)
    with pytest.raises(ValueError, match="scale"):
        Quantiles([0.5], [1.0, 2.0], scale=0.0)
    with pytest.raises(ValueError, match="noise must be one of"):
        Quantiles([0.5], [1.0, 2.0], scale=1.0, noise="laplace")
    with pytest.raises(ValueError, match="one per quantile"):
        Quantiles([0.25, 0.5], [[1.0, 2.0]], scale=1.0)
    mech = Quantiles([0.5], [1.0, 2.0], scale=1.0)
    with pytest.raises(ValueError, match=r"s_dp\[0\] = 1.5 is not one of"):
        mech.check_release([1.5])
    with pytest.raises(ValueError, match="s_dp must have 1 value"):
        mech.check_release([1.0, 2.0])
    model = poisson_gamma.model()
    with pytest.raises(ValueError, match="not the statistic plus noise"):
        dw.sample(model, mech, [1.0], 10, method="naive", draws=10, progress=False)
    with pytest.raises(ValueError, match="not the statistic plus noise|not one"):
        dw.sample(model, mech, [1.0], 10, method="suffstat", draws=10, progress=False)


def _poisson_quantile_posterior(mech, s_dp, n, alpha, beta):
    """The exact posterior of lam: every count of records at 0..4 and above (the cells the
    candidates 0..4 tell apart), weighted by the multinomial and the release's density."""
    cells = 6
    configs = np.array([c for c in itertools.product(range(n + 1), repeat=cells)
                        if sum(c) == n], dtype=float)
    totals = np.zeros((configs.shape[0], mech.size))
    for value in range(5):                    # {value} is cell 2 * value + 1
        totals[:, 2 * value + 1] = configs[:, value]
    totals[:, -1] = configs[:, 5]             # above every candidate
    log_g = relative_log_g(mech, s_dp, totals)
    lam = np.linspace(1e-4, 15.0, 3001)
    pmf = stats.poisson.pmf(np.arange(5)[:, None], lam[None, :])
    probs = np.vstack([pmf, 1.0 - pmf.sum(axis=0)])
    log_multinomial = (special.gammaln(n + 1) - special.gammaln(configs + 1).sum(axis=1)
                       )[:, None] + configs @ np.log(np.maximum(probs, 1e-300))
    log_like = special.logsumexp(log_multinomial + log_g[:, None], axis=0)
    return Grid(lam, stats.gamma.logpdf(lam, alpha, scale=1.0 / beta) + log_like)


@pytest.mark.slow   # compiles the record chain of poisson_gamma with the quantiles' statistic
def test_the_posterior_from_released_quartiles_is_the_exact_one(check_posterior):
    n, alpha, beta = 10, 2.0, 1.0
    mech = Quantiles([0.25, 0.5, 0.75], [0.0, 1.0, 2.0, 3.0, 4.0], scale=[6.0, 4.0, 6.0])
    x = poisson_gamma.model(alpha, beta).simulate({"lam": 2.0}, n=n, seed=3)
    s_dp = mech.release(x, seed=4)
    exact = _poisson_quantile_posterior(mech, s_dp, n, alpha, beta)
    idata = dw.sample(poisson_gamma.model(alpha, beta), mech, s_dp, n, draws=2000, tune=500,
                      chains=4, seed=12, progress=False)
    check_posterior(diagnostics.group(idata, "posterior")["lam"].values, exact)


@pytest.mark.slow   # the chain of the posterior test above (compiled once per process)
@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: resuming is the point here
def test_a_quantiles_chain_resumes_bit_identically(tmp_path, ctrl_c_at):
    """The running totals (the statistic's 31 cells) are longer than the release (3
    candidates): a checkpoint holds them and resumes to the draws of an unbroken run."""
    mech = Quantiles([0.25, 0.5, 0.75], [0.0, 1.0, 2.0, 3.0, 4.0], scale=[6.0, 4.0, 6.0])
    model, s_dp = poisson_gamma.model(2.0, 1.0), [1.0, 2.0, 3.0]
    kw = dict(draws=40, tune=10, chains=1, cores=1, seed=7, progress=False)
    whole = dw.sample(model, mech, s_dp, 10, **kw)
    with ctrl_c_at(20), pytest.warns(UserWarning, match="can be resumed"):
        dw.sample(model, mech, s_dp, 10, checkpoint=tmp_path, checkpoint_every=10, **kw)
    resumed = dw.sample(model, mech, s_dp, 10, resume=tmp_path, **kw)
    assert np.array_equal(diagnostics.group(resumed, "posterior")["lam"].values,
                          diagnostics.group(whole, "posterior")["lam"].values)

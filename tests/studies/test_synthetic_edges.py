"""dawrap.synthetic at the edges (issue 41): the fully synthetic rule where its variance
estimate is not positive or below the real data's (Reiter's adjusted variance and its normal
reference distribution), and bad input to combine, datasets and to_frames refused with an
error that names the argument. Each repro of the issue is a test here."""
import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import dawrap as dw
from dawrap.models import beta_binomial, dirichlet_multinomial

Z975 = stats.norm.ppf(0.975)


def normal_interval(centre, variance, z=Z975):
    return (centre - z * math.sqrt(variance), centre + z * math.sqrt(variance))


# ---- the fully synthetic rule: T_f <= 0, T_f = 0, 0 < T_f < (n_syn / n) u_bar ----------------
# q = [0, 2]: b = 2, (1 + 1/m) b = 3, so T_f = 3 - u_bar.

@pytest.mark.parametrize("ubar", [3.03, 3.0, 2.99], ids=["T<0", "T=0", "0<T<floor"])
def test_fully_synthetic_below_the_floor_is_reiters_variance_with_a_normal_reference(ubar):
    # Issue 41 repro: u = 3 gave interval (nan, nan) with df 0, u = 3.03 gave +-1.2e152 (the
    # df of the rejected T_f); u = 2.99 (T_f = 0.01 > 0) gave +-2.2e150 (nu_f ~ 1e-5).
    out = dw.synthetic.combine([0, 2], [ubar, ubar], "fully_synthetic", kind="predictive",
                               n=100, n_syn=100)
    assert out.variance == pytest.approx(ubar) and out.df == math.inf
    assert out.interval == pytest.approx(normal_interval(1.0, ubar))
    # n_syn / n rescales the within-dataset variance to the real data's n records
    half = dw.synthetic.combine([0, 2], [ubar, ubar], "fully_synthetic", kind="predictive",
                                n=200, n_syn=100)
    assert half.variance == pytest.approx(ubar / 2) and half.df == math.inf
    assert half.interval == pytest.approx(normal_interval(1.0, ubar / 2))


def test_fully_synthetic_above_the_floor_is_rrr_and_its_df_stays_away_from_zero():
    # T_f just above the floor (n_syn / n) u_bar: RRR's own T_f and nu_f, and nu_f is then at
    # least (m - 1) (n_syn / (n + n_syn))^2, here (m - 1) / 4.
    q = np.array([1.3, 0.9, 1.1, 1.6, 0.7, 1.2])
    m, b = q.size, q.var(ddof=1)
    ubar = 0.499 * (1 + 1 / m) * b                 # T_f = 1.002 u_bar: just above the floor
    with pytest.warns(RuntimeWarning, match=r"nu = 1.26 degrees of freedom with m = 6"):
        out = dw.synthetic.combine(q, [ubar] * m, "fully_synthetic", kind="predictive", n=50,
                                   n_syn=50)
    total = (1 + 1 / m) * b - ubar
    df = (m - 1) * (1 - ubar / ((1 + 1 / m) * b)) ** 2
    assert total > ubar and out.variance == pytest.approx(total) and out.df == pytest.approx(df)
    assert out.df > (m - 1) / 4
    half = stats.t.ppf(0.975, df) * math.sqrt(total)
    assert out.interval == pytest.approx((q.mean() - half, q.mean() + half))
    # the floor is continuous: just below it, the floor itself with the normal
    below = dw.synthetic.combine(q, [0.501 * (1 + 1 / m) * b] * m, "fully_synthetic",
                                 kind="predictive", n=50, n_syn=50)
    assert below.variance == pytest.approx(0.501 * (1 + 1 / m) * b) and below.df == math.inf


def test_fully_synthetic_needs_n_and_n_syn():
    q, u = [1.3, 0.9, 1.1, 1.6], [0.01] * 4                  # T_f > 0: still needs them
    with pytest.raises(ValueError, match=r"'fully_synthetic' needs n and n_syn"):
        dw.synthetic.combine(q, u, "fully_synthetic", kind="predictive")
    with pytest.raises(ValueError, match=r"'fully_synthetic' needs n and n_syn on every call.*"
                                         r"\(got n=100, n_syn=None\)"):
        dw.synthetic.combine(q, u, "fully_synthetic", kind="predictive", n=100)
    with pytest.raises(ValueError, match=r"\(got n=None, n_syn=100\)"):
        dw.synthetic.combine(q, u, kind="predictive", n_syn=100)      # the default rule too


# ---- combine: bad n, n_syn, rule, level, estimates -------------------------------------------

@pytest.mark.parametrize("rule", ["fully_synthetic", "as_if_real"])
@pytest.mark.parametrize("name, value, error, message", [
    ("n", -100, ValueError, r"n must be an integer >= 1, got -100"),     # was "math domain error"
    ("n", 0, ValueError, r"n must be an integer >= 1, got 0"),           # was ZeroDivisionError
    ("n_syn", 0, ValueError, r"n_syn must be an integer >= 1, got 0"),   # was a 0-width interval
    ("n_syn", -5, ValueError, r"n_syn must be an integer >= 1, got -5"),
    ("n", 2.5, TypeError, r"n must be an integer >= 1, got 2.5 of type float"),
    ("n_syn", True, TypeError, r"n_syn must be an integer >= 1, got True of type bool"),
])
def test_combine_names_a_bad_size(rule, name, value, error, message):
    sizes = {"n": 100, "n_syn": 100, name: value}
    with pytest.raises(error, match=message):
        dw.synthetic.combine([0, 2], [3, 3], rule, kind="predictive", **sizes)


def test_as_if_real_needs_both_sizes_or_neither():
    # only n was silently ignored (no rescaling)
    with pytest.raises(ValueError, match=r"give both n and n_syn, or neither: got n=10, "
                                         r"n_syn=None"):
        dw.synthetic.combine([0, 2], [3, 3], "as_if_real", n=10)
    assert dw.synthetic.combine([0, 2], [3, 3], "as_if_real").variance == 3.0


def test_combine_names_a_bad_rule_level_or_estimates():
    with pytest.raises(TypeError, match=r"rule must be one of .* got array\(\['posterior'\]"):
        dw.synthetic.combine([0, 2], [3, 3], np.array(["posterior"]))    # was accepted
    with pytest.raises(TypeError, match=r"level must be a real number in \(0, 1\), got '0.9'"):
        dw.synthetic.combine([0, 2], [3, 3], "posterior", level="0.9")
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\), got nan"):
        dw.synthetic.combine([0, 2], [3, 3], "posterior", level=float("nan"))
    with pytest.raises(TypeError, match=r"estimates must be real numbers, got dtype <U1"):
        dw.synthetic.combine(["a", "b"], [3, 3], "posterior")
    with pytest.raises(TypeError, match=r"variances must be real numbers, got dtype object"):
        dw.synthetic.combine([0, 2], [3, object()], "posterior")
    with pytest.raises(ValueError, match=r"variances must be finite and >= 0, got nan at index 1"):
        dw.synthetic.combine([0, 2], [3, None], "posterior")
    with pytest.raises(ValueError, match=r"needs m >= 2 datasets, got 1 \(estimates and "
                                         r"variances of length 1\)"):
        dw.synthetic.combine([0.5], [0.1], "fully_synthetic", kind="predictive", n=10,
                             n_syn=10)
    with pytest.raises(ValueError, match=r"variances must be finite and >= 0, got -3.0 at "
                                         r"index 1"):
        dw.synthetic.combine([0, 2], [3, -3], "posterior")
    with pytest.raises(ValueError, match=r"estimates must be finite, got inf at index 0"):
        dw.synthetic.combine([np.inf, 2], [3, 3], "posterior")


# ---- datasets: m, the model of kind="predictive", fields ------------------------------------

@pytest.fixture(scope="module")
def run():
    model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    result = dw.sample(model, mech, 31.4, 60, draws=200, tune=50, chains=2, seed=1,
                       databases=4, progress=False)
    return model, result


@pytest.mark.parametrize("kind", ["imputed", "predictive"])
def test_datasets_m_is_a_positive_integer_and_the_advice_fits(run, kind):
    model, result = run
    extra = {"model": model} if kind == "predictive" else {}
    # m = 0 advised "databases=0 or more", m = 2.0 "databases=1.0 or more"
    with pytest.raises(ValueError, match=r"^m must be an integer >= 1, got 0$"):
        dw.synthetic.datasets(result, m=0, kind=kind, **extra)
    with pytest.raises(TypeError, match=r"^m must be an integer >= 1, got 2.0 of type float$"):
        dw.synthetic.datasets(result, m=2.0, kind=kind, **extra)
    assert dw.synthetic.datasets(result, m=np.int64(2), kind=kind, **extra).shape[0] == 2


def test_predictive_with_another_model_says_which_model_it_needs(run):
    _, result = run
    # was a bare KeyError "No variable named 'p'" / a ValueError about theta's shape
    with pytest.raises(ValueError, match=r"model does not match the result: its parameter 'p' "
                                         r"has shape \(3,\) but the result's posterior 'p' "
                                         r"has shape \(\).*the dawrap.Model the result sampled"):
        dw.synthetic.datasets(result, m=2, kind="predictive",
                              model=dirichlet_multinomial.model(alpha=[1, 1, 1]))
    from dawrap.models import normal_mean
    with pytest.raises(ValueError, match=r"model does not match the result: the result's "
                                         r"posterior has no parameter 'mu' \(it holds \['p'\]\)"):
        dw.synthetic.datasets(result, m=2, kind="predictive", model=normal_mean.model())
    with pytest.raises(TypeError, match=r"model must be the dawrap.Model the result sampled.*"
                                        r"got a module.*beta_binomial.model\(\)"):
        dw.synthetic.datasets(result, m=2, kind="predictive", model=beta_binomial)


def test_datasets_names_bad_fields_kind_and_result(run):
    _, result = run
    with pytest.raises(TypeError, match=r"result must be a result of dw.sample .* got dict"):
        dw.synthetic.datasets({"posterior": None}, m=2)          # was an AttributeError
    with pytest.raises(TypeError, match=r"fields must be a sequence of names, got 'a'"):
        dw.synthetic.datasets(result, m=2, fields="a")                  # was 1 field 'a'
    with pytest.raises(TypeError, match=r"kind must be 'imputed' or 'predictive'"):
        dw.synthetic.datasets(result, m=2, kind=None)


# ---- to_frames: labels as the marginals docs write levels ------------------------------------

@pytest.fixture
def data():
    values = np.array([[[0.0, 1.5, 3.0], [1.0, 2.5, 4.0]],
                       [[1.0, 0.5, 0.0], [0.0, 1.5, 2.0]]])
    return xr.DataArray(values, dims=("dataset", "record", "field"),
                        coords={"field": ["sex", "weight", "age"]})


def test_to_frames_takes_a_number_of_levels_or_their_labels(data):
    # issue 41 repro: an int (the marginals docs' levels) was "'int' object is not iterable"
    first, second = dw.synthetic.to_frames(data, labels={"age": 5, "sex": ["F", "M"]})
    assert first["age"].tolist() == [3, 4] and second["age"].tolist() == [0, 2]
    assert list(first["age"].cat.categories) == [0, 1, 2, 3, 4]
    assert first["sex"].tolist() == ["F", "M"] and list(first["sex"].cat.categories) == ["F", "M"]
    assert first["weight"].tolist() == [1.5, 2.5]                          # not labelled
    again, _ = dw.synthetic.to_frames(data, labels={"sex": ("F", "M"), "age": np.arange(5)})
    assert again["sex"].tolist() == ["F", "M"] and again["age"].tolist() == [3, 4]
    import pandas as pd
    index, _ = dw.synthetic.to_frames(data, labels={"sex": pd.Index(["F", "M"])})
    assert index["sex"].tolist() == ["F", "M"]


@pytest.mark.parametrize("labels, error, message", [
    ({"age": "abcde"}, TypeError, r"labels\['age'\] must be a number of levels or a list of "
                                  r"labels, got 'abcde'"),
    ({"age": 5.0}, TypeError, r"labels\['age'\] must be a number of levels or a list of "
                              r"labels, got 5.0"),
    ({"age": True}, TypeError, r"labels\['age'\] must be a number of levels"),
    ({"age": {0: "a"}}, TypeError, r"labels\['age'\] must be a number of levels"),
    ({"age": np.arange(6).reshape(2, 3)}, TypeError, r"labels\['age'\] must be a number of "
                                                     r"levels"),
    ({"age": 0}, ValueError, r"labels\['age'\] must give at least 1 level, got 0"),
    ({"age": []}, ValueError, r"labels\['age'\] must give at least 1 level, got 0"),
    ({"sex": ["F", "F"]}, ValueError, r"labels\['sex'\]: the labels repeat"),
    ({"age": 4}, ValueError, r"field 'age' holds 4, which is not a level code of "
                             r"labels\['age'\] \(an integer from 0 to 3\)"),
    ({"weight": 3}, ValueError, r"field 'weight' holds 1.5, which is not a level code"),
    ({"Age": 5}, ValueError, r"labels names fields the data do not have: \['Age'\] \(its "
                             r"fields: \['sex', 'weight', 'age'\]; name them with datasets"),
    (["F", "M"], TypeError, r"labels must be a dict of field name -> number of levels or "
                            r"list of labels, got \['F', 'M'\]"),
])
def test_to_frames_names_bad_labels(data, labels, error, message):
    with pytest.raises(error, match=message):
        dw.synthetic.to_frames(data, labels=labels)


def test_to_frames_refuses_a_negative_code(data):
    # pandas reads code -1 as a missing value: it was a silent NaN
    data = data.copy()
    data.values[1, 0, 0] = -1.0
    with pytest.raises(ValueError, match=r"field 'sex' holds -1, which is not a level code"):
        dw.synthetic.to_frames(data, labels={"sex": ["F", "M"]})

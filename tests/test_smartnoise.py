"""dawrap.smartnoise: what is read from a fitted SmartNoise AIM or MST synthesizer is the
release it made: its tables in Private-PGM's own cell order and encoding, its noise, its
accounting; and a synthesizer that cannot be read is refused, naming the argument."""
import math

import numpy as np
import pytest
from scipy import stats

snsynth = pytest.importorskip("snsynth")
pd = pytest.importorskip("pandas")
mbi = pytest.importorskip("mbi")
from snsynth import Synthesizer  # noqa: E402  (after the skips)
from snsynth.utils import cdp_rho  # noqa: E402

from dawrap import smartnoise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Pandas dataframe inputs are deprecated")

COLUMNS = ["sex", "edu", "inc"]
EPSILON, DELTA = 1.0, 1e-9


def _people(n=2000, seed=5, rare=False):
    """Unequal level frequencies, so that a table read in another cell order is far off."""
    rng = np.random.default_rng(seed)
    edu = rng.choice(["lo", "mid", "hi"], n, p=[0.55, 0.3, 0.15]).astype(object)
    inc = (rng.random(n) < np.where(edu == "hi", 0.7, 0.2)).astype(int)
    sex = rng.choice(["F", "M"], n, p=[0.3, 0.7])
    if rare:  # a level far below MST's 3 sigma: MST merges it before its 2-way tables
        edu[:3] = "none"
    return pd.DataFrame({"sex": sex, "edu": edu, "inc": inc})


@pytest.fixture(scope="module")
def data():
    return _people()


@pytest.fixture(scope="module")
def fitted(data):
    """(synthesizer, what was read) for MST and for AIM, fitted once for the module."""
    np.random.seed(0)  # AIM's and MST's selections draw from numpy's global generator
    out = {}
    for kind, options in [("mst", {}), ("aim", {"rounds": 6})]:
        synth = Synthesizer.create(kind, epsilon=EPSILON, delta=DELTA, **options)
        out[kind] = synth, smartnoise.fit(synth, data, categorical_columns=COLUMNS)
    return out


def _pgm_counts(synth, data, clique):
    """Private-PGM's own true counts of ``clique`` (original names) on SmartNoise's
    encoded data: what each measurement's y is the noisy version of."""
    encoded = np.asarray(synth._transformer.transform(data))
    cards = synth._transformer.cardinality
    names = [f"col{i}" for i in range(len(cards))]
    dataset = mbi.Dataset({c: encoded[:, i] for i, c in enumerate(names)},
                          mbi.Domain(names, cards))
    return np.asarray(dataset.project([names[COLUMNS.index(a)] for a in clique]).datavector())


@pytest.mark.parametrize("kind", ["mst", "aim"])
def test_the_tables_are_private_pgms_in_its_cell_order(fitted, data, kind):
    synth, read = fitted[kind]
    assert read.synthesizer == kind.upper()
    assert read.levels == {"sex": 2, "edu": 3, "inc": 2}
    assert read.n == len(data)
    # codes: SmartNoise's sorted labels, and the records encoded with them read back
    assert read.codes == {"sex": ("F", "M"), "edu": ("hi", "lo", "mid"), "inc": (0, 1)}
    x = read.encode(data)
    for a, name in enumerate(COLUMNS):
        assert [read.codes[name][int(c)] for c in x[:, a]] == data[name].tolist()
    # every measured table: dawrap's true counts (the mechanism's statistic summed over the
    # records) are Private-PGM's projection, cell by cell
    assert len(read.mechanism.tables) == len(read.measurements) >= 3
    tables = read.mechanism.split(read.mechanism.total(x))
    for (clique, _), table in zip(read.measurements, tables):
        assert np.array_equal(table.ravel(), _pgm_counts(synth, data, clique)), clique
    assert read.s_dp.shape == (read.mechanism.size,)
    assert np.all(read.mechanism.noise_variance() == np.repeat(
        [sigma ** 2 for _, sigma in read.measurements], read.mechanism.sizes))


def _chi2(read, data, order="C"):
    """The release's noise in units of its stated sd, squared and summed over the cells,
    with the true counts of each table flattened in ``order``."""
    x = read.encode(data)
    truth = np.concatenate([t.ravel(order=order)
                            for t in read.mechanism.split(read.mechanism.total(x))])
    return float(np.sum((read.s_dp - truth) ** 2 / read.mechanism.noise_variance()))


def test_the_noise_has_the_stated_sd(fitted, data):
    # y minus the true counts, over every cell of both releases: chi-square with one degree
    # of freedom a cell (independent Gaussian noise of the stated sd), two-sided at 1e-6
    reads = [fitted[k][1] for k in ("mst", "aim")]
    cells = sum(r.mechanism.size for r in reads)
    chi2 = sum(_chi2(r, data) for r in reads)
    low, high = stats.chi2.ppf([1e-6, 1 - 1e-6], cells)
    assert low < chi2 < high, (chi2, cells)
    # the check has power: a 2-way table read in the other cell order is far off
    swapped = sum(_chi2(r, data, order="F") for r in reads)
    assert swapped > 10 * high, swapped


def test_the_noise_is_smartnoises_budget(fitted):
    rho = cdp_rho(EPSILON, DELTA)
    # MST: two thirds of rho on the measurements (one third selects the tree), under
    # add/remove-one (1 / 2 sigma^2 a table); mech.privacy is replace-one, twice that
    _, mst = fitted["mst"]
    add_remove = math.fsum(0.5 / sigma ** 2 for _, sigma in mst.measurements)
    assert add_remove == pytest.approx(2 * rho / 3, rel=1e-9)
    assert mst.mechanism.privacy["rho"] == pytest.approx(2 * add_remove, rel=1e-9)
    # MST measures the 1-way tables, then a spanning tree's 2-way tables
    assert [t for t, _ in mst.measurements[:3]] == [("sex",), ("edu",), ("inc",)]
    assert all(len(t) == 2 for t, _ in mst.measurements[3:]) and len(mst.measurements) == 5
    # AIM: its measurements spend at most rho (the rest selects)
    _, aim = fitted["aim"]
    assert math.fsum(0.5 / sigma ** 2 for _, sigma in aim.measurements) <= rho * (1 + 1e-9)


def test_a_synthesizer_that_cannot_be_read_is_refused(data):
    with pytest.raises(TypeError, match=r"synth must be a SmartNoise AIM or MST.*dict"):
        smartnoise.from_synthesizer({})
    with pytest.raises(TypeError, match=r"synth must be a SmartNoise AIM or MST.*MWEM"):
        smartnoise.fit(Synthesizer.create("mwem", epsilon=1.0), data)
    with pytest.raises(ValueError, match=r"synth: this MST synthesizer is not fitted"):
        smartnoise.from_synthesizer(Synthesizer.create("mst", epsilon=1.0))


def test_a_fit_that_was_not_recorded_is_refused(fitted, data):
    synth, _ = fitted["mst"]
    smartnoise.from_synthesizer(synth)  # recorded: readable again
    other = Synthesizer.create("mst", epsilon=1.0)
    other.__dict__.update({k: v for k, v in vars(synth).items() if not k.startswith("_dawrap")})
    with pytest.raises(ValueError, match=r"synth: SmartNoise keeps MST's measurements only "
                                         r"inside fit, and this fit was not recorded"):
        smartnoise.from_synthesizer(other)
    # a record of an earlier fit is not read for a later one
    stale = Synthesizer.create("mst", epsilon=1.0)
    stale.__dict__.update(vars(synth))
    stale.synthesizer = object()
    with pytest.raises(ValueError, match=r"fitted again since"):
        smartnoise.from_synthesizer(stale)


def test_another_smartnoise_version_is_refused(fitted, monkeypatch):
    synth, _ = fitted["aim"]
    monkeypatch.setattr(smartnoise, "_version", lambda: "1.1.0")
    with pytest.raises(ImportError, match=r"smartnoise-synth 1.1.0 is installed; this reader "
                                          r"knows the internals of 1.0.x"):
        smartnoise.from_synthesizer(synth)


def test_the_estimation_module_is_restored_after_a_recording(fitted):
    import snsynth.mst.mst as mst_module
    assert mst_module.estimation is mbi.estimation
    synth = Synthesizer.create("mst", epsilon=1.0)
    with pytest.raises(RuntimeError, match="inside"):
        with smartnoise.recording(synth):
            assert mst_module.estimation is not mbi.estimation
            raise RuntimeError("inside")
    assert mst_module.estimation is mbi.estimation


def test_mst_with_merged_levels_is_refused():
    synth = Synthesizer.create("mst", epsilon=EPSILON, delta=DELTA)
    # one level merged: edu keeps its 4 codes, but "none" is no longer the code it was
    with pytest.raises(ValueError, match=r"synth: MST merged the rare levels of "
                                         r"edu \['none'\] \(each a noisy count below"):
        smartnoise.fit(synth, _people(rare=True), categorical_columns=COLUMNS)


def test_a_binned_continuous_column_reads_its_bins():
    from snsynth.transform import BinTransformer
    rng = np.random.default_rng(2)
    data = pd.DataFrame({"sex": rng.choice(["F", "M"], 3000), "age": rng.uniform(20, 70, 3000)})
    synth = Synthesizer.create("mst", epsilon=3.0, delta=DELTA)
    read = smartnoise.fit(synth, data, categorical_columns=["sex"], continuous_columns=["age"],
                          transformer={"age": BinTransformer(lower=20, upper=70, bins=5)})
    assert read.levels == {"sex": 2, "age": 5}
    assert read.codes["age"] == tuple((20.0 + 10 * b, 30.0 + 10 * b) for b in range(5))
    x = read.encode(data)
    lower = np.array([read.codes["age"][int(c)][0] for c in x[:, 1]])
    assert np.all((lower <= data["age"]) & (data["age"] < lower + 10))
    assert [t for t, _ in read.measurements] == [("sex",), ("age",), ("sex", "age")]
    truth = np.concatenate([t.ravel() for t in read.mechanism.split(read.mechanism.total(x))])
    chi2 = float(np.sum((read.s_dp - truth) ** 2 / read.mechanism.noise_variance()))
    assert chi2 < stats.chi2.ppf(1 - 1e-6, read.mechanism.size)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mst", "aim"])
def test_the_posterior_of_the_read_release_finds_the_one_way_tables(fitted, data, kind):
    import dawrap as dw
    from dawrap.models import marginals
    _, read = fitted[kind]
    model = marginals.model(read.levels, [t for t, _ in read.measurements], alpha=1.0, centre=None)
    result = dw.sample(model, read.mechanism, read.s_dp, read.n, draws=300, tune=100,
                       chains=2, seed=1)
    x = read.encode(data)
    for a, name in enumerate(COLUMNS):
        draws = marginals.marginal(result, model, (name,))
        mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
        truth = np.bincount(x[:, a].astype(int), minlength=read.levels[name]) / read.n
        assert np.all(np.abs(mean - truth) < 4 * sd), (name, mean, sd, truth)


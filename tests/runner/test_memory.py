"""The memory check before a run (dawrap.runner.memory) and what each method says it needs
(Method.memory_needed): the record sampler's databases grow with n, the others' do not."""
import pytest

import dawrap as dw
from dawrap.models import beta_binomial, dirichlet_multinomial
from dawrap.runner import memory
from dawrap.runner.memory import CHAIN_OVERHEAD, MemoryPart, check_memory

MODEL, MECH = beta_binomial.model(), beta_binomial.laplace(0.5)


def test_the_record_sampler_counts_its_databases_and_its_draws():
    model = dirichlet_multinomial.model([1.0] * 3)  # theta_size 3
    mech = dirichlet_multinomial.laplace(1.0, 3)
    databases, draws = dw.Record().memory_needed(model, mech, n=1000, draws=50, chains=4,
                                                 cores=2, keep_stats=True)
    assert databases.nbytes == 8 * (4 + 2) * 1000 * model.record_size
    # theta (3), 5 sample statistics, the kept statistic (3): 11 values, twice.
    assert draws.nbytes == 8 * 2 * 4 * 50 * 11
    assert "chains=4 (+2 running) x n=1000 records" in databases.what


@pytest.mark.parametrize("method", [dw.Suffstat(), dw.Naive(),
                                    dw.NonPrivate(confidential=[[1.0]]),
                                    dw.OPS(confidential=[[1.0]])], ids=lambda m: m.name)
def test_the_other_methods_need_nothing_for_n(method):
    small, = method.memory_needed(MODEL, MECH, n=10, draws=100, chains=2, cores=2,
                                  keep_stats=False)
    huge, = method.memory_needed(MODEL, MECH, n=2 ** 53, draws=100, chains=2, cores=2,
                                 keep_stats=False)
    assert small == huge and small.nbytes == 8 * 2 * 2 * 100 * (MODEL.theta_size + 1)


def test_a_run_above_the_available_memory_is_refused_naming_every_part(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 10 ** 9)
    parts = [MemoryPart(6e8, "the databases"), MemoryPart(4e8, "the draws")]
    check_memory(parts[:1], chains=2)  # 0.6 GB fits
    with pytest.raises(ValueError, match=r"about 1 GB of memory \(0.6 GB for the databases and "
                                         r"0.4 GB for the draws\) but about 1 GB is available: "
                                         r"reduce n, chains or draws; try less$"):
        check_memory(parts, chains=2, advice="; try less")
    # The per-chain overhead alone tips it over.
    check_memory([MemoryPart(10 ** 9 - 4 * CHAIN_OVERHEAD, "x")], chains=4)
    with pytest.raises(ValueError):
        check_memory([MemoryPart(10 ** 9 - 4 * CHAIN_OVERHEAD + 1, "x")], chains=4)


def test_no_refusal_when_the_memory_cannot_be_read(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: None)
    check_memory([MemoryPart(1e30, "everything")], chains=1)


def test_a_cgroup_limit_caps_the_available_memory(monkeypatch, tmp_path):
    """A container's limit minus its usage is what the process can still allocate, however
    much the machine has."""
    real_open = open
    files = {"/proc/meminfo": "MemTotal: 99999999 kB\nMemAvailable: 88888888 kB\n",
             "/sys/fs/cgroup/memory.max": "3000000000\n",
             "/sys/fs/cgroup/memory.current": "1000000000\n"}

    def fake_open(path, *args, **kwargs):
        if str(path) in files:
            target = tmp_path / str(path).replace("/", "_")
            target.write_text(files[str(path)])
            return real_open(target, *args, **kwargs)
        if str(path).startswith(("/sys/fs/cgroup", "/proc")):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    assert memory.available_memory() == 2 * 10 ** 9
    del files["/sys/fs/cgroup/memory.max"]
    assert memory.available_memory() == 88888888 * 1024

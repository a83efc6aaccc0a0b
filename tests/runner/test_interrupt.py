"""Ctrl-C on every path returns the draws so far (or stops cleanly before sampling), never a
crash: a real SIGINT sent to a real process while compiled code runs."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

CHILD = """
import signal, sys, warnings
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in an interactive session
import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial
method, cores, chains = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model, mech = beta_binomial.model(), beta_binomial.laplace(0.5)
print("imported", flush=True)
try:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = dw.sample(model, mech, 6000.0, 20000, method=method, draws=10**7, tune=10,
                          chains=chains, cores=cores, seed=1, progress=True)
    p = diagnostics.group(idata, "posterior")["p"].values
    print("returned", p.shape[0], p.shape[1], flush=True)
    print("warned", any("interrupted" in str(w.message) for w in caught), flush=True)
except KeyboardInterrupt as err:
    print("interrupted", err, flush=True)
"""


def _run_and_interrupt(method: str, cores: int, chains: int, when: str, cache=None):
    """Start the child; send SIGINT after the import (``when="compiling"``) or once the
    progress line shows iterations done (``when="sampling"``). ``cache``: the child's numba
    cache folder (an empty one makes it compile the chain instead of loading it)."""
    # Both variables: DAWRAP_CACHE_DIR, when set in the environment, overrides numba's.
    env = dict(os.environ, **({"NUMBA_CACHE_DIR": str(cache), "DAWRAP_CACHE_DIR": str(cache)}
                              if cache else {}))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, method, str(cores), str(chains)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "imported"
        if when == "sampling":
            # Wait for the progress line (ending in \r) to show iterations done.
            seen, deadline = "", time.time() + 300
            while not re.search(r"(^|\r)[^\r]*: [1-9][0-9]*/", seen):
                assert time.time() < deadline, "no progress within 300 s"
                char = proc.stderr.read(1)
                assert char, f"the child ended before it sampled: {seen[-500:]}"
                seen += char
        else:
            time.sleep(1.0)  # inside probing / numba compilation
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out


@pytest.mark.slow
@pytest.mark.parametrize("method,cores,chains", [("record", 1, 1), ("record", 1, 2),
                                                 ("suffstat", 1, 1)])
def test_ctrl_c_while_sampling_returns_the_draws(method, cores, chains):
    code, out = _run_and_interrupt(method, cores, chains, "sampling")
    assert code == 0, f"the process died with code {code} (-11 is SIGSEGV): {out}"
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert "returned" in lines, out
    n_chains, n_draws = map(int, lines["returned"].split())
    assert n_chains >= 1 and 0 < n_draws < 10**7
    assert lines["warned"] == "True"


@pytest.mark.slow
def test_ctrl_c_while_compiling_stops_cleanly(tmp_path):
    # An empty numba cache: the built-in model's chain would otherwise load in a moment.
    code, out = _run_and_interrupt("record", 1, 1, "compiling", cache=tmp_path)
    assert code == 0, f"the process died with code {code} (-11 is SIGSEGV): {out}"
    assert "interrupted" in out and "no draws" in out, out


def test_ctrl_c_is_honoured_promptly_however_costly_an_iteration(monkeypatch):
    """3000 sweeps per iteration at n = 1000 (3 million record updates, tens of ms an
    iteration): chunks of a fixed number of iterations (2000) kept Ctrl-C waiting more than
    a minute. Chunks sized by time end within about CHUNK_SECONDS."""
    import threading

    import dawrap as dw
    from dawrap.models import beta_binomial
    from dawrap.runner import record as run_record

    started, real, real_finished = threading.Event(), run_record._advance, run_record._finished
    sent, stopped = [], []

    def advance(*args, **kwargs):  # the chain is compiled and running once a call returns
        state = real(*args, **kwargs)
        started.set()
        return state

    def finished(*args, **kwargs):  # the chains have stopped (the output is built next)
        stopped.append(time.perf_counter())
        return real_finished(*args, **kwargs)

    monkeypatch.setattr(run_record, "_advance", advance)
    monkeypatch.setattr(run_record, "_finished", finished)

    def interrupt():
        started.wait(300)
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.warns(UserWarning, match="sampling interrupted"):
        dw.sample(beta_binomial.model(), beta_binomial.laplace(0.5), 300.0, 1000,
                  draws=10**6, tune=0, chains=1, cores=1, sweeps=3000, seed=0,
                  progress=False)
    assert sent and stopped[0] - sent[0] < 2.0


def test_the_draws_do_not_depend_on_the_chunking(monkeypatch, tmp_path):
    """One iteration per compiled call or as many as fit in CHUNK_SECONDS: the same draws,
    for the record sampler (with checkpoints too) and the sufficient-statistic sampler."""
    import numpy as np

    import dawrap as dw
    from dawrap import diagnostics
    from dawrap.models import beta_binomial
    from dawrap.runner import chains

    model, mech = beta_binomial.model(), beta_binomial.laplace(0.5)
    runs = [dict(method="record"), dict(method="record", checkpoint=tmp_path / "a",
                                        checkpoint_every=7),
            dict(method="suffstat")]

    def draws(chunk_seconds, run):
        monkeypatch.setattr(chains, "CHUNK_SECONDS", chunk_seconds)
        if "checkpoint" in run:
            run = dict(run, checkpoint=f"{run['checkpoint']}{chunk_seconds}")
        idata = dw.sample(model, mech, 30.0, 100, draws=300, tune=50, chains=2, cores=1,
                          seed=4, progress=False, **run)
        return diagnostics.group(idata, "posterior")["p"].values

    for run in runs:
        assert np.array_equal(draws(0.0, run), draws(10.0, run)), run

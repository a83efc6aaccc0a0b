"""Long runs lose nothing: atomic checkpoints, resume after SIGKILL, Ctrl-C returns draws."""
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.runner import checkpoint
from dawrap.models import beta_binomial

RUN = """
import sys
import dawrap as dw
from dawrap.models import beta_binomial
folder, resume = sys.argv[1], sys.argv[2] == "resume"
model, mech = beta_binomial.model(2, 3), beta_binomial.laplace(0.5)
kw = dict(draws=400, tune=100, chains=2, cores=1, seed=11)
if resume:
    idata = dw.sample(model, mech, 60_000.0, 200_000, resume=folder, **kw)
else:
    idata = dw.sample(model, mech, 60_000.0, 200_000, checkpoint=folder, checkpoint_every=25,
                      **kw)
import numpy as np
from dawrap import diagnostics
np.save(folder + "/p.npy", diagnostics.group(idata, "posterior")["p"].values)
"""


def _done(folder: Path, chain: int) -> int:
    path = folder / f"chain{chain}.npz"
    if not path.is_file():
        return 0
    try:
        with np.load(path) as data:
            return int(data["done"])
    except Exception:  # being replaced right now
        return 0


@pytest.mark.slow
def test_sigkill_then_resume_is_bit_identical(tmp_path):
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", RUN, str(killed), "start"])
    try:
        deadline = time.time() + 240
        while _done(killed, 0) < 150:  # part way through chain 0's draws
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert _done(killed, 0) < 500 and _done(killed, 1) == 0
    subprocess.run([sys.executable, "-c", RUN, str(killed), "resume"], check=True)
    assert not list(killed.glob(".tmp-*"))  # what the killed run was writing is cleaned
    whole = tmp_path / "whole"
    whole.mkdir()
    subprocess.run([sys.executable, "-c", RUN.replace("checkpoint=folder, ", ""), str(whole),
                    "start"], check=True)
    resumed, reference = np.load(killed / "p.npy"), np.load(whole / "p.npy")
    assert resumed.shape == (2, 400)
    assert np.array_equal(resumed, reference)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_resume_checks_the_settings(tmp_path):
    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    dw.sample(model, mech, 30.0, 100, draws=20, tune=5, chains=1, seed=1, checkpoint=tmp_path,
              checkpoint_every=5)
    with pytest.raises(ValueError, match="made with draws = 20, this call has 30"):
        dw.sample(model, mech, 30.0, 100, draws=30, tune=5, chains=1, seed=1, resume=tmp_path)
    with pytest.raises(ValueError, match="made with s_dp"):
        dw.sample(model, mech, 31.0, 100, draws=20, tune=5, chains=1, seed=1, resume=tmp_path)
    with pytest.raises(ValueError, match="not a checkpoint folder"):
        dw.sample(model, mech, 30.0, 100, draws=20, resume=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="to method='record' only"):
        dw.sample(model, mech, 30.0, 100, method="suffstat", checkpoint=tmp_path)
    # A checkpoint of another format (an older dawrap's) says why it cannot be resumed.
    old = tmp_path / "older"
    old.mkdir()
    with np.load(tmp_path / "chain0.npz") as data:
        saved = dict(data)
    settings = json.loads(str(saved["settings"]))
    saved["settings"] = np.array(json.dumps({**settings, "format": checkpoint.FORMAT - 1}))
    np.savez(old / "chain0.npz", **saved)
    with pytest.raises(ValueError, match=f"format {checkpoint.FORMAT - 1}, this dawrap reads "
                                         f"and writes format {checkpoint.FORMAT} only"):
        dw.sample(model, mech, 30.0, 100, draws=20, tune=5, chains=1, seed=1, resume=old)
    # A finished run resumes to the same draws without sampling again.
    a = dw.sample(model, mech, 30.0, 100, draws=20, tune=5, chains=1, seed=1, resume=tmp_path)
    b = dw.sample(model, mech, 30.0, 100, draws=20, tune=5, chains=1, seed=1)
    assert np.array_equal(diagnostics.group(a, "posterior")["p"].values,
                          diagnostics.group(b, "posterior")["p"].values)


@pytest.mark.slow
def test_keyboard_interrupt_returns_the_draws_so_far(interrupted):
    """Ctrl-C mid-run: the draws so far come back as a valid ArviZ object, with a warning."""
    from dawrap.runner import record as run_record

    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    with interrupted(run_record, "_advance", on_call=3), \
            pytest.warns(UserWarning, match="sampling interrupted: returning the first"):
        idata = dw.sample(model, mech, 300.0, 1_000_000, draws=10, tune=0, chains=2, cores=1,
                          seed=0)
    p = diagnostics.group(idata, "posterior")["p"].values
    assert p.shape[0] == 1 and 1 <= p.shape[1] < 10 and np.all(np.isfinite(p))


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_ctrl_c_with_chains_in_threads_returns_draws(tmp_path):
    """A real SIGINT to this process while two chains run in threads: the main thread tells
    them to stop, they finish their chunk, and the draws so far come back."""
    import threading

    def interrupt_when_running():
        deadline = time.time() + 120
        while _done(tmp_path, 0) < 30 and time.time() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_running, daemon=True).start()
    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    with pytest.warns(UserWarning, match="can be resumed"):
        idata = dw.sample(model, mech, 30_000.0, 100_000, draws=100_000, tune=10, chains=2,
                          cores=2, seed=0, checkpoint=tmp_path, checkpoint_every=10)
    p = diagnostics.group(idata, "posterior")["p"].values
    assert p.shape[0] == 2 and 10 <= p.shape[1] < 100_000 and np.all(np.isfinite(p))


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_resume_of_a_run_with_starting_values(tmp_path):
    """A chain that saved nothing restarts from the user's starts, which must be given again."""
    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    kw = dict(draws=20, tune=5, chains=2, cores=1, seed=3, init_theta=[0.9])
    whole = dw.sample(model, mech, 30.0, 100, **kw)
    # Only chain 0 is checkpointed, as if the run had been killed before chain 1 started.
    dw.sample(model, mech, 30.0, 100, checkpoint=tmp_path, checkpoint_every=5, **kw)
    (tmp_path / "chain1.npz").unlink()
    resumed = dw.sample(model, mech, 30.0, 100, resume=tmp_path, **kw)
    assert np.array_equal(diagnostics.group(resumed, "posterior")["p"].values,
                          diagnostics.group(whole, "posterior")["p"].values)
    with pytest.raises(ValueError, match="made with init"):
        dw.sample(model, mech, 30.0, 100, resume=tmp_path, **{**kw, "init_theta": [0.8]})


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_mechanisms_that_print_alike_are_told_apart(tmp_path):
    from dawrap.models import poisson_gamma

    a = poisson_gamma.laplace_truncated(1.0, 0, 8)
    b = poisson_gamma.laplace_truncated(1.0, 2, 8)
    assert repr(a) == repr(b) and a.fingerprint != b.fingerprint
    model = poisson_gamma.model()
    dw.sample(model, a, 30.0, 20, draws=5, tune=0, chains=1, seed=1, checkpoint=tmp_path,
              init_theta=[1.0])
    with pytest.raises(ValueError, match="made with mechanism"):
        dw.sample(model, b, 30.0, 20, draws=5, tune=0, chains=1, seed=1, resume=tmp_path,
                  init_theta=[1.0])


def test_a_full_disk_at_the_first_checkpoint_claims_no_checkpoint(tmp_path, monkeypatch):
    """Issue 29 item 18: the first save fails, after draws were made: the draws come back,
    and the warning no longer says that a checkpoint (there is none) can be resumed."""
    from dawrap.runner import checkpoint

    def disk_full(file, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.np, "savez", disk_full)
    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    with pytest.warns(UserWarning) as caught:
        idata = dw.sample(model, mech, 30.0, 100, draws=40, tune=0, chains=1, seed=0,
                          checkpoint=tmp_path, checkpoint_every=10, progress=False)
    message = " ".join(str(w.message) for w in caught)
    assert "No space left on device" in message
    assert "no checkpoint was written" in message and "can be resumed once" not in message
    assert diagnostics.group(idata, "posterior")["p"].shape == (1, 10)
    assert not checkpoint.resumable(tmp_path)


def test_an_interruption_before_the_first_checkpoint_claims_none(tmp_path, interrupted):
    from dawrap.runner import record as run_record

    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    with interrupted(run_record, "_advance", on_call=2), \
            pytest.warns(UserWarning, match="no checkpoint was written to .* yet .*nothing can "
                                            "be resumed"):
        dw.sample(model, mech, 600.0, 2000, draws=3000, tune=0, chains=1, seed=0,
                  checkpoint=tmp_path, checkpoint_every=10 ** 6, progress=False)


def test_temporaries_of_a_killed_run_are_removed_when_the_folder_is_next_locked(tmp_path):
    """Issue 29 item 18: ``.tmp-*`` chain files a kill left behind were never removed. Only
    save_chain's temporaries of dead processes, directly in the folder, and only files."""
    from dawrap.runner import checkpoint

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = [f".tmp-{dead.pid}-0123abcd-chain0.npz", f".tmp-{dead.pid}-89abcdef-chain12.npz"]
    kept = [f".tmp-{os.getpid()}-0123abcd-chain1.npz",   # a live process's: being written
            f".tmp-{dead.pid}-0123abcd-results.nc",      # not a chain file
            f".tmp-{dead.pid}-0123ABCD-chain0.npz", "chain0.npz", "notes.txt"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / f".tmp-{dead.pid}-0123abcd-chain3.npz").mkdir()         # a folder
    (tmp_path / f".tmp-{dead.pid}-0123abcd-chain4.npz").symlink_to(tmp_path / "notes.txt")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / stale[0]).write_bytes(b"x")                      # not in the folder
    with checkpoint.lock(tmp_path):
        pass
    left = {p.name for p in tmp_path.iterdir()}
    assert not left & set(stale)
    assert set(kept) <= left and (tmp_path / "sub" / stale[0]).exists()
    assert {f".tmp-{dead.pid}-0123abcd-chain3.npz", f".tmp-{dead.pid}-0123abcd-chain4.npz",
            ".lock"} <= left


@pytest.mark.slow
def test_a_sparse_chain_resumes_bit_identically(tmp_path, ctrl_c_at):
    """The entries path's per-cell block is not saved (it copies the release and the running
    sums) and is rebuilt on resume: the resumed draws are those of an unbroken run, and the
    file holds the state's fields as before the block existed (format 5 files resume)."""
    from dawrap.models import dirichlet_multinomial as dm

    model, mech = dm.model(np.ones(6), proposal="uniform"), dm.laplace(1.0, 6)
    s_dp = np.array([3.2, 0.4, 5.9, 1.1, 0.0, 2.5])
    kw = dict(draws=40, tune=10, chains=1, cores=1, seed=7)
    whole = dw.sample(model, mech, s_dp, 12, **kw)
    with ctrl_c_at(20), pytest.warns(UserWarning, match="can be resumed"):
        dw.sample(model, mech, s_dp, 12, checkpoint=tmp_path, checkpoint_every=10, **kw)
    with np.load(tmp_path / "chain0.npz") as saved:
        assert int(saved["done"]) == 20 and "cells" not in saved.files
    resumed = dw.sample(model, mech, s_dp, 12, resume=tmp_path, **kw)
    assert np.array_equal(diagnostics.group(resumed, "posterior")["p"].values,
                          diagnostics.group(whole, "posterior")["p"].values)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_typed_kernel_and_move_states_resume_bit_identically(tmp_path, ctrl_c_at):
    """An HMC kernel's state and the interweaving move's (NamedTuples of arrays, the move's
    nesting the random walk's) are flattened into the file and rebuilt on resume: interrupted
    during warm-up, while both adapt, the resumed draws are those of an unbroken run."""
    import numba

    from dawrap.models import normal_mean

    @numba.njit
    def logp_and_grad(theta, x):  # N(0.5, 2^2) prior, N(mu, 1) records
        mu, total, n = theta[0], np.sum(x[:, 0]), x.shape[0]
        return (-0.125 * (mu - 0.5) ** 2 + mu * total - 0.5 * n * mu * mu,
                np.array([-0.25 * (mu - 0.5) + total - n * mu]))

    base = normal_mean.model(0.5, 2.0, 1.0)
    model = dw.Model(params={"mu": ()}, record_size=1, draw_record=base.draw_record,
                     draw_theta=dw.kernels.hmc(logp_and_grad, step_size=1.0),
                     draw_prior=base.draw_prior, noncentred=base.noncentred)
    mech = normal_mean.gaussian(3.0)
    kw = dict(draws=20, tune=60, chains=1, cores=1, seed=5, interweave=True)
    whole = dw.sample(model, mech, 40.0, 50, **kw)
    with ctrl_c_at(30), pytest.raises(KeyboardInterrupt, match="warm-up"):
        dw.sample(model, mech, 40.0, 50, checkpoint=tmp_path, checkpoint_every=10, **kw)
    with np.load(tmp_path / "chain0.npz") as saved:
        assert 10 <= int(saved["done"]) < 60  # saved while the kernel and the move adapt
        assert saved["kernel_state"].shape == (8 + 4,)  # HmcState of a 1-d theta, flat
        assert saved["move_state"].shape == (4 + 1 + 2,)  # the move's random walk, flat
    resumed = dw.sample(model, mech, 40.0, 50, resume=tmp_path, **kw)
    assert np.array_equal(diagnostics.group(resumed, "posterior")["mu"].values,
                          diagnostics.group(whole, "posterior")["mu"].values)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_a_run_with_jumps_resumes_bit_identically(tmp_path, ctrl_c_at):
    """The jumps' mixture (interweave.MixtureState: log weights, means, factors) is
    flattened into the file after the move's random walk and rebuilt, typed, on resume:
    interrupted among the kept draws, the resumed draws are those of an unbroken run."""
    from dawrap.models import normal_mean

    model, mech = normal_mean.model(0.0, 1.0, 1.0), normal_mean.gaussian(30.0)
    kw = dict(method="record", interweave=True, jumps=True, draws=40, tune=20, chains=1,
              cores=1, seed=3)
    whole = dw.sample(model, mech, 40.0, 100, **kw)
    assert diagnostics.attrs(whole)["jumps"] == 1
    with ctrl_c_at(40), pytest.warns(UserWarning, match="can be resumed"):
        dw.sample(model, mech, 40.0, 100, checkpoint=tmp_path, checkpoint_every=10, **kw)
    with np.load(tmp_path / "chain0.npz") as saved:
        assert int(saved["done"]) == 40
        flat = saved["move_state"]
    # the random walk of a 1-d theta (4 + 1 + 2 values), then K components of 1 + 1 + 1
    assert flat.shape[0] > 7 and (flat.shape[0] - 7) % 3 == 0
    k = (flat.shape[0] - 7) // 3
    assert np.exp(flat[7:7 + k]).sum() == pytest.approx(1.0)  # the normalised log weights
    from dawrap.runner import modes
    from dawrap.samplers.arrays import flatten_state
    mixture = modes.jump_mixture(modes.landscape(model, mech, np.array([40.0]), 100)).state()
    assert np.array_equal(flat[7:], flatten_state(mixture))  # weights, means, then factors
    resumed = dw.sample(model, mech, 40.0, 100, resume=tmp_path, **kw)
    assert np.array_equal(diagnostics.group(resumed, "posterior")["mu"].values,
                          diagnostics.group(whole, "posterior")["mu"].values)

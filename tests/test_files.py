"""Files: nothing lost, nothing clobbered (issue 18, items 6-9), and fuzzing of the
checkpoint and store readers and of the command line.

* what dawrap writes never replaces a symlink, device, FIFO or folder, nor an existing file
  it did not write (item 6);
* output paths are checked before any sampling; temporary files have unique names and are
  removed on failure; a checkpoint folder or a study store in use by one run is refused to
  another; a checkpoint that cannot be written stops the run and returns the draws (item 7);
* a study store is locked and read back with checks, so no result is written from a store
  with conflicting or missing trials (item 8);
* damaged checkpoints and stores are ValueErrors naming the file (and line) and saying what
  to do (item 9).
"""
import contextlib
import errno
import fcntl
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import dawrap as dw
from dawrap import diagnostics
from dawrap.studies import calibration
from dawrap.runner import checkpoint
from dawrap.studies.calibration import calibrate
from dawrap.cli import main
from dawrap.models import beta_binomial
from dawrap.runner import record as record_runner, suffstat as suffstat_runner
from dawrap.samplers import baselines

#: Where dw.sample's methods hand over to their drivers (patched to keep tests off sampling).
DRIVERS = ((record_runner, "run_record"), (suffstat_runner, "run_suffstat"),
           (baselines, "run_naive"), (baselines, "run_nonprivate"), (baselines, "run_ops"))

MODEL, MECH = beta_binomial.model(), beta_binomial.laplace(1.0)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
#: A tiny study: the naive baseline is a closed-form draw, so trials cost milliseconds.
STUDY = dict(trials=3, seed=1, executor="serial",
             sample_kwargs={"draws": 20, "tune": 0, "chains": 1})
#: A tiny record-level run (one chain, a hundred records).
RUN = dict(draws=40, tune=0, chains=1, cores=1, seed=5)


def study(store, **kw):
    return calibrate(MODEL, MECH, 20, ["naive"], store=store, **{**STUDY, **kw})


def run(**kw):
    return dw.sample(MODEL, MECH, 30.0, 100, **{**RUN, **kw})


def p_draws(idata):
    return diagnostics.group(idata, "posterior")["p"].values


def leftovers(folder: Path) -> list:
    """Temporary files left in ``folder`` (any hidden or .tmp file but the lock file)."""
    return [p.name for p in folder.iterdir()
            if (p.name.startswith(".") or p.name.endswith(".tmp")) and p.name != ".lock"]


@contextlib.contextmanager
def not_sampling():
    """Inside the block, any record-level sampling fails the test: a path problem must be
    reported before the chains run."""
    from dawrap.runner import record as runner

    def refuse(*args, **kwargs):
        raise AssertionError("sampling started before the path was checked")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "run_record", refuse)
        yield


@contextlib.contextmanager
def working_folder(folder: Path):
    """``contextlib.chdir`` (Python >= 3.11 only)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def special(tmp_path: Path, kind: str) -> Path:
    """A path of the given kind that must never be written through or replaced."""
    path = tmp_path / f"special-{kind}"
    if kind == "symlink":
        (tmp_path / "target").write_text("")
        path.symlink_to(tmp_path / "target")
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "device":  # a private /dev/null (never the real one, in case of a bug)
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device file needs root")
    elif kind == "folder":
        path.mkdir()
    return path


def kind(path: Path) -> str:
    mode = os.lstat(path).st_mode
    return {stat.S_IFLNK: "symlink", stat.S_IFIFO: "FIFO", stat.S_IFCHR: "device",
            stat.S_IFDIR: "folder", stat.S_IFREG: "file"}[stat.S_IFMT(mode)]


# ---------------------------------------------------------------------------------------
# 6. Never replace what dawrap did not create
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["symlink", "FIFO", "device", "folder"])
def test_a_store_that_is_not_a_regular_file_is_refused_untouched(tmp_path, what):
    path = special(tmp_path, what)
    with pytest.raises(ValueError, match=f"store: {re.escape(str(path))} is an? "
                                         f"(existing )?{what}"):
        study(path)
    assert kind(path) == what
    if what == "symlink":
        assert (tmp_path / "target").read_text() == ""
    assert not leftovers(tmp_path)


def test_an_existing_empty_store_is_written_in_place_not_replaced(tmp_path):
    store = tmp_path / "study.jsonl"
    store.write_text("")
    os.link(store, tmp_path / "other-name")  # the user's second name for the same file
    inode = store.stat().st_ino
    study(store)
    assert store.stat().st_ino == inode
    assert (tmp_path / "other-name").read_text() == store.read_text()
    assert json.loads(store.read_text().splitlines()[0])["settings"]["n"] == 20


def test_an_unrelated_file_is_not_taken_for_a_store(tmp_path):
    store = tmp_path / "notes.txt"
    store.write_text("my notes\nsecond line\n")
    with pytest.raises(ValueError, match=f"{re.escape(str(store))} line 1 is not a dawrap "
                                         f"study header"):
        study(store)
    assert store.read_text() == "my notes\nsecond line\n"


@pytest.mark.parametrize("what", ["symlink", "FIFO", "device"])
def test_checkpoint_folders_and_files_that_are_not_regular_are_refused(tmp_path, what):
    path = special(tmp_path, what)
    with not_sampling(), pytest.raises(ValueError, match=f"checkpoint: {re.escape(str(path))}"):
        run(checkpoint=path)
    assert kind(path) == what
    # A chain file planted as a symlink in a checkpoint folder is not written through.
    folder = tmp_path / "ck"
    folder.mkdir()
    (folder / "chain0.npz").symlink_to(tmp_path / "target")
    (tmp_path / "target").write_text("")
    with not_sampling(), pytest.raises(ValueError, match="chain0.npz is a symlink"):
        run(checkpoint=folder)
    assert (tmp_path / "target").read_text() == ""


# ---------------------------------------------------------------------------------------
# 7. Checked up front; unique temporary names; locks; a failed write keeps the draws
# ---------------------------------------------------------------------------------------
def test_checkpoint_at_an_existing_file_fails_before_sampling(tmp_path):
    path = tmp_path / "results.txt"
    path.write_text("keep me")
    with not_sampling(), \
            pytest.raises(ValueError, match=f"checkpoint: {re.escape(str(path))} is an "
                                            f"existing file"):
        run(checkpoint=path, checkpoint_every=5)
    assert path.read_text() == "keep me"
    with not_sampling(), pytest.raises(ValueError, match="cannot create the folder"):
        run(checkpoint=path / "below")  # a folder under a file cannot exist


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_a_new_run_does_not_overwrite_a_saved_checkpoint(tmp_path):
    first = p_draws(run(checkpoint=tmp_path, checkpoint_every=20))
    saved = (tmp_path / "chain0.npz").read_bytes()
    with not_sampling(), pytest.raises(ValueError, match="already holds a checkpoint "
                                                         r"\(chain0.npz\).*resume="):
        run(checkpoint=tmp_path, seed=6)
    assert (tmp_path / "chain0.npz").read_bytes() == saved
    # Continuing it is what the folder is for (both arguments naming it is a resume too).
    assert np.array_equal(p_draws(run(checkpoint=tmp_path, resume=tmp_path)), first)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_cli_out_is_checked_before_sampling_and_not_overwritten(tmp_path, capsys,
                                                                monkeypatch):
    argv = ["sample", "beta_binomial", "--epsilon", "1", "--n", "20", "--s-dp", "5",
            "--draws", "10", "--tune", "0", "--chains", "1", "--seed", "1"]
    folder = tmp_path / "a-folder"
    folder.mkdir()
    existing = tmp_path / "old.nc"
    existing.write_text("an earlier result")

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled before --out was checked")

    with monkeypatch.context() as patch:
        patch.setattr(dw, "sample", no_sampling)
        assert main(argv + ["--out", str(folder)]) == 2
        assert f"--out: {folder} is an existing folder" in capsys.readouterr().err
        assert main(argv + ["--out", str(existing)]) == 2
        assert "exists; pass --force to overwrite it" in capsys.readouterr().err
        link = tmp_path / "link.nc"
        link.symlink_to(existing)
        assert main(argv + ["--out", str(link), "--force"]) == 2  # never through a symlink
        assert "is a symlink" in capsys.readouterr().err
    assert existing.read_text() == "an earlier result"
    assert main(argv + ["--out", str(existing), "--force"]) == 0
    assert diagnostics.group(_load(existing), "posterior")["p"].shape == (1, 10)
    assert not leftovers(tmp_path)


def _load(path):
    import arviz as az

    return az.from_netcdf(str(path))


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_a_failed_checkpoint_returns_the_draws_and_leaves_no_temporary_file(tmp_path,
                                                                            monkeypatch):
    """The disk fills up at the second checkpoint: the draws so far come back with a warning
    saying why, no temporary file is left, and the last good checkpoint resumes to the same
    draws as an uninterrupted run."""
    whole = p_draws(run())
    real, calls = np.savez, [0]

    def disk_full(file, **arrays):
        calls[0] += 1
        if calls[0] == 2:
            file.write(b"PK\x03\x04 half a file")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(file, **arrays)

    monkeypatch.setattr(checkpoint.np, "savez", disk_full)
    with pytest.warns(UserWarning, match="checkpoint could not be written .*chain0.npz: No "
                                         "space left on device.*returning the first 20 of 40"):
        cut = p_draws(run(checkpoint=tmp_path, checkpoint_every=10))
    monkeypatch.undo()
    assert np.array_equal(cut, whole[:, :20])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "chain0.npz"]
    assert np.array_equal(p_draws(run(resume=tmp_path)), whole)


def test_a_failed_checkpoint_in_warm_up_is_an_error_naming_it(tmp_path, monkeypatch):
    def disk_full(file, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.np, "savez", disk_full)
    with pytest.raises(OSError, match="checkpoint: could not write .*chain0.npz: No space"):
        run(checkpoint=tmp_path, checkpoint_every=10, tune=20)
    assert not leftovers(tmp_path)


def test_two_writers_of_one_checkpoint_do_not_collide(tmp_path, monkeypatch):
    """Another process saves the same chain file while this one is writing it: each write
    has its own temporary file, so both complete (with one shared name, both died)."""
    from dawrap.samplers import record

    state = record.RecordState(np.array([0.5]), np.zeros((3, 1)), np.zeros(1), np.zeros(1),
                               0.0, np.zeros(0), np.zeros(0), np.zeros(2, np.int64))
    trace = record.Trace(np.zeros((2, 1)), np.zeros((2, len(record.SAMPLE_STATS))),
                         np.zeros((0, 1)))
    rng = np.random.default_rng(0)
    real, nested = np.savez, []

    def meanwhile(file, **arrays):
        if not nested:  # the other writer starts and finishes in the middle of this write
            nested.append(1)
            checkpoint.save_chain(tmp_path, 0, done=2, state=state, rng=rng, trace=trace,
                                  settings={"who": "other"})
        return real(file, **arrays)

    monkeypatch.setattr(checkpoint.np, "savez", meanwhile)
    checkpoint.save_chain(tmp_path, 0, done=1, state=state, rng=rng, trace=trace,
                          settings={"who": "this"})
    monkeypatch.undo()
    with np.load(tmp_path / "chain0.npz") as data:
        assert json.loads(str(data["settings"]))["who"] == "this" and int(data["done"]) == 1
    assert not leftovers(tmp_path)


def test_a_full_disk_while_appending_leaves_no_half_row(tmp_path, monkeypatch):
    """The disk fills up while trial 1 is appended: an OSError naming the store, which keeps
    trial 0 and no half-written row; the study then resumes to the same result."""
    from dawrap.studies import trial_log

    store = tmp_path / "s.jsonl"
    whole = study(tmp_path / "whole.jsonl")
    real = trial_log._write_all

    def disk_full(fd, data):
        if b'"trial": 1' in data:
            real(fd, data[:len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(trial_log, "_write_all", disk_full)
    with pytest.raises(OSError, match=f"trial 1 to the study store {re.escape(str(store))}: "
                                      f"No space left"):
        study(store)
    monkeypatch.undo()
    assert len(_rows(store)) == 1 + 1 and store.read_text().endswith("\n")
    assert np.array_equal(study(store).pit["naive"], whole.pit["naive"])
    assert not leftovers(tmp_path)


def test_atomic_write_replaces_only_when_asked_and_cleans_up(tmp_path, monkeypatch):
    from dawrap import _files

    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(FileExistsError):
        _files.atomic_write(target, lambda tmp: Path(tmp).write_text("new"), "--out",
                            overwrite=False)

    def fails_half_way(tmp):
        Path(tmp).write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        _files.atomic_write(target, fails_half_way, "--out")
    assert target.read_text() == "old" and not leftovers(tmp_path)
    # Without hard links (some network file systems) a new file is still never a replacement
    monkeypatch.setattr(_files.os, "link", lambda *a: (_ for _ in ()).throw(
        PermissionError(errno.EPERM, "Operation not permitted")))
    _files.atomic_write(tmp_path / "new.txt", lambda tmp: Path(tmp).write_text("new"), "--out",
                        overwrite=False)
    assert (tmp_path / "new.txt").read_text() == "new" and not leftovers(tmp_path)


def _hold(path: Path):
    """Hold an exclusive flock on ``path``, as another dawrap process would."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"4242\n")
    return fd


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_a_checkpoint_folder_in_use_is_refused(tmp_path):
    fd = _hold(tmp_path / ".lock")
    try:
        with not_sampling(), \
                pytest.raises(ValueError, match=r"another run \(process 4242\) is using the "
                                                f"checkpoint folder {re.escape(str(tmp_path))}"):
            run(checkpoint=tmp_path)
    finally:
        os.close(fd)
    # The lock of a run that ended (its file is still there) does not block the next run.
    run(checkpoint=tmp_path, checkpoint_every=20)
    assert (tmp_path / "chain0.npz").is_file()


def test_a_study_store_in_use_is_refused_and_nothing_is_recomputed(tmp_path, monkeypatch):
    """A study runs in a thread; a second one on the same store is refused at once instead
    of computing every trial again into the same file."""
    store = tmp_path / "s.jsonl"
    first_may_finish, first_running = threading.Event(), threading.Event()
    real, outcome = calibration.run_trial, {}

    def slow_in_first(study_, t):
        if threading.current_thread().name == "first":
            first_running.set()
            assert first_may_finish.wait(60)
        return real(study_, t)

    monkeypatch.setattr(calibration, "run_trial", slow_in_first)
    first = threading.Thread(target=lambda: outcome.update(cal=study(store)), name="first")
    first.start()
    try:
        assert first_running.wait(60)
        with pytest.raises(ValueError, match="another run is using the study store "
                                             f"{re.escape(str(store))}"):
            study(store)
    finally:
        first_may_finish.set()
        first.join(60)
    assert outcome["cal"].pit["naive"].shape == (3,)
    assert len(store.read_text().splitlines()) == 1 + 3


@pytest.mark.slow
def test_two_calibrate_commands_on_one_out_and_a_killed_one(tmp_path, capsys):
    """Another process holds the study (a real flock): the second command exits 2 with a
    clear error; once that process is killed (SIGKILL), the command runs."""
    out = tmp_path / "study"
    argv = ["calibrate", "beta_binomial", "--epsilon", "1", "--n", "20", "--methods", "naive",
            "--trials", "3", "--draws", "20", "--tune", "0", "--chains", "1",
            "--executor", "serial", "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True)"
         "\ntime.sleep(120)", str(out / "trials.jsonl")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (out / "calibration.nc").unlink()
        assert main(argv) == 2
        assert "another run is using the study store" in capsys.readouterr().err
        assert not (out / "calibration.nc").exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert main(argv) == 0
    assert (out / "calibration.nc").is_file()


# ---------------------------------------------------------------------------------------
# 8. No result from an inconsistent store
# ---------------------------------------------------------------------------------------
def _rows(store: Path) -> list:
    return store.read_text().splitlines()


def test_duplicate_rows_identical_are_read_once_conflicting_are_an_error(tmp_path):
    store = tmp_path / "s.jsonl"
    first = study(store)
    header, *rows = _rows(store)
    store.write_text("\n".join([header, *rows, rows[1]]) + "\n")  # trial 1 twice, same result
    again = study(store)
    assert np.array_equal(again.pit["naive"], first.pit["naive"])
    other = json.loads(rows[1])
    other["naive"]["rank"] += 1
    store.write_text("\n".join([header, *rows, json.dumps(other)]) + "\n")
    with pytest.raises(ValueError, match=f"{re.escape(str(store))} holds two different "
                                         f"results for trial 1, on lines 3 and 5"):
        study(store)


def test_a_store_changed_during_the_study_gives_no_result(tmp_path, monkeypatch):
    """Another writer removes trial 0's row while trial 2 runs: the study does not report
    results the store no longer holds."""
    store = tmp_path / "s.jsonl"
    real = calibration.run_trial

    def meddling(study_, t):
        if t == 2:
            header, trial0, *rest = _rows(store)
            store.write_text("\n".join([header, *rest]) + "\n")
        return real(study_, t)

    monkeypatch.setattr(calibration, "run_trial", meddling)
    with pytest.raises(ValueError, match=f"{re.escape(str(store))} lacks trial 0"):
        study(store)


def test_cli_calibrate_refuses_another_studys_folder_without_force(tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["calibrate", "beta_binomial", "--n", "20", "--methods", "naive", "--trials", "2",
            "--draws", "20", "--tune", "0", "--chains", "1", "--executor", "serial",
            "--out", str(out)]
    assert main(argv + ["--epsilon", "1"]) == 0
    before = (out / "calibration.nc").read_bytes()
    capsys.readouterr()
    assert main(argv + ["--epsilon", "2"]) == 2
    assert "holds a study with other settings" in capsys.readouterr().err
    assert (out / "calibration.nc").read_bytes() == before
    assert main(argv + ["--epsilon", "2", "--force"]) == 0
    header = json.loads(_rows(out / "trials.jsonl")[0])["settings"]
    assert "2.0" in header["mechanism"] and len(_rows(out / "trials.jsonl")) == 1 + 2
    # Results in a folder without a store are some other study's: not overwritten silently
    (out / "trials.jsonl").unlink()
    capsys.readouterr()
    assert main(argv + ["--epsilon", "2"]) == 2
    assert "but no trials.jsonl" in capsys.readouterr().err
    assert not leftovers(out)


# ---------------------------------------------------------------------------------------
# 9. Damaged files: clear errors naming the file and saying what to do
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved_run():
    """A finished one-chain checkpoint (bytes of chain0.npz) and the call's settings."""
    with tempfile.TemporaryDirectory() as folder:
        run(checkpoint=folder, checkpoint_every=10)
        data = (Path(folder) / "chain0.npz").read_bytes()
    with np.load(io.BytesIO(data)) as npz:
        saved = json.loads(str(npz["settings"]))
    saved.pop("format")
    return data, saved


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.parametrize("damage", ["truncated", "empty", "flipped", "not a zip",
                                    "missing key", "wrong shape", "nan"])
def test_a_damaged_checkpoint_names_the_file(tmp_path, saved_run, damage):
    data, saved = saved_run
    path = tmp_path / "chain0.npz"
    if damage == "truncated":
        data = data[:len(data) // 2]
    elif damage == "empty":
        data = b""
    elif damage == "flipped":
        data = bytearray(data)
        data[len(data) // 3] ^= 0x10
    elif damage == "not a zip":
        data = b"hello\n" * 100
    else:
        with np.load(io.BytesIO(data)) as npz:
            arrays = {k: npz[k] for k in npz.files}
        if damage == "missing key":
            del arrays["rng_state"]
        elif damage == "wrong shape":
            arrays["x"] = arrays["x"][:-1]
        else:
            arrays["x"][3] = np.nan
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        data = buffer.getvalue()
    path.write_bytes(data)
    message = f"resume: {re.escape(str(path))} .*delete it"
    with pytest.raises(ValueError, match=message):
        checkpoint.load_chain(tmp_path, 0, saved)
    with pytest.raises(ValueError, match=message):
        run(resume=tmp_path, seed=None)  # the seed is read from the damaged file too


def test_resume_from_an_empty_or_missing_folder_is_an_error(tmp_path):
    with not_sampling():
        with pytest.raises(ValueError, match=f"resume: {re.escape(str(tmp_path))} holds no "
                                             "checkpoint.*written by checkpoint="):
            run(resume=tmp_path, seed=None)
        with pytest.raises(ValueError, match="is not a checkpoint folder"):
            run(resume=tmp_path / "nowhere")
        (tmp_path / "chain7.npz").write_bytes(b"")  # some other run's eighth chain only
        with pytest.raises(ValueError, match="holds no checkpoint of chains 0 to 0"):
            checkpoint.load_chains(tmp_path, 1, {})


@pytest.mark.parametrize("damage, message", [
    pytest.param(lambda h, rows: ["{not json", *rows], "line 1 is not a dawrap study header",
                 id="header not JSON"),
    pytest.param(lambda h, rows: ['["a list"]', *rows], "line 1 is not a dawrap study header",
                 id="header not a header"),
    pytest.param(lambda h, rows: [h, rows[0], rows[1][:-9], rows[2]],
                 "line 3 is not a valid trial", id="row cut in the middle"),
    pytest.param(lambda h, rows: [h, rows[0], '{"trial": 1}', rows[2]],
                 "line 3 is not a valid trial", id="row without results"),
    pytest.param(lambda h, rows: [h, rows[0], rows[1].replace('"trial": 1', '"trial": -1'),
                                  rows[2]], "line 3 is not a valid trial", id="negative trial"),
    pytest.param(lambda h, rows: [h, rows[0], rows[1].replace('"covered": [',
                                                              '"covered": ["yes", '), rows[2]],
                 "line 3 is not a valid trial", id="coverage not true or false"),
])
def test_a_damaged_store_names_the_file_and_line(tmp_path, damage, message):
    store = tmp_path / "s.jsonl"
    study(store)
    header, *rows = _rows(store)
    damaged = "\n".join(damage(header, rows)) + "\n"
    store.write_text(damaged)
    with pytest.raises(ValueError, match=f"store: {re.escape(str(store))} {message}.*delete"):
        study(store)
    assert store.read_text() == damaged  # reported, not "repaired"


def test_a_row_cut_short_at_the_end_is_dropped_and_rerun(tmp_path):
    store = tmp_path / "s.jsonl"
    whole = study(store)
    header, *rows = _rows(store)
    store.write_text("\n".join([header, rows[0], rows[1]]) + "\n" + rows[2][:20])
    again = study(store)
    assert np.array_equal(again.pit["naive"], whole.pit["naive"])
    assert _rows(store) == [header, *rows]  # no torn line left between rows
    assert np.array_equal(study(store).pit["naive"], whole.pit["naive"])


# ---------------------------------------------------------------------------------------
# Fuzzing: the readers and the command line
# ---------------------------------------------------------------------------------------
#: How :func:`damaged` damages a file.
DAMAGE = st.sampled_from(["random", "truncate", "flip"])


def damaged(data: bytes, how, draw) -> bytes:
    """``data`` cut, with bits flipped, or replaced by random bytes."""
    if how == "random":
        return draw(st.binary(max_size=2000))
    if how == "truncate":
        return data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(out) - 1))
        out[i] ^= 1 << draw(st.integers(0, 7))
    return bytes(out)


@contextlib.contextmanager
def damaged_copy(data: bytes, name: str, how, draw):
    """The path of a file ``name`` in a fresh folder, holding ``data`` :func:`damaged`."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(damaged(data, how, draw))
        yield path


def _only_clear_errors(path: Path, call):
    """``call()`` returns, or raises a ValueError whose message names ``path``."""
    try:
        return call()
    except ValueError as err:
        assert str(path) in str(err), err
        return None


@SETTINGS
@given(how=DAMAGE, data=st.data())
def test_fuzz_checkpoint_reader(saved_run, how, data):
    original, saved = saved_run
    with damaged_copy(original, "chain0.npz", how, data.draw) as path:
        folder = str(path.parent)
        out = _only_clear_errors(path, lambda: checkpoint.load_chain(folder, 0, saved))
        _only_clear_errors(path, lambda: checkpoint.saved_seed(folder))
        _only_clear_errors(path, lambda: checkpoint.check_folder(resume=folder))
        if out is not None:  # a harmless flip (e.g. in a timestamp): the run is intact
            with np.load(io.BytesIO(original)) as npz:
                assert np.array_equal(out["x"], npz["x"]) and out["done"] == npz["done"]


@pytest.fixture(scope="module")
def saved_store():
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "s.jsonl"
        cal = study(store)
        return store.read_bytes(), cal


@SETTINGS
@given(how=DAMAGE, data=st.data())
def test_fuzz_store_reader(saved_store, how, data):
    original, whole = saved_store
    with damaged_copy(original, "s.jsonl", how, data.draw) as store:
        cal = _only_clear_errors(store, lambda: study(store))
        if cal is not None:
            assert all(np.all((u >= 0) & (u <= 1)) for u in cal.pit.values())
            if how == "truncate":  # rows lost at the end are run again, to the same result
                assert np.array_equal(cal.pit["naive"], whole.pit["naive"])


#: Options with values that often make sense, so that many lists get past the parser.
OPTIONS = {"--n": ["3", "20", "0", "-1", "x"], "--epsilon": ["1", "0.5", "0", "-1", "nan"],
           "--s-dp": ["5", "1 2", "nan", "abc"], "--release": ["rel.txt", "nosuch", "."],
           "--draws": ["5", "0"], "--tune": ["0", "2", "-1"], "--chains": ["1", "2", "0"],
           "--seed": ["0", "1", "-1"], "--cores": ["1", "0"],
           "--method": ["record", "suffstat", "naive", "ops", "x"],
           "--methods": ["naive", "record,naive", "suffstat:printed", ",", "x"],
           "--trials": ["2", "0", "-1"], "--mechanism": ["laplace", "geometric", "x"],
           "--model-arg": ["a=1", "a=0", "alpha=[1,1,1]", "a", "b=nan"],
           "--mechanism-arg": ["categories=3", "lower=0", "x=1", "="],
           "--checkpoint": ["ck", "out.nc", "rel.txt"], "--out": ["out", "out.nc", ".", "rel.txt"],
           "--parameter": ["p", "q"], "--index": ["0", "1", "-1"],
           "--executor": ["serial", "threads", "cluster"], "--workers": ["1", "0"]}
COMMON = ("--n", "--epsilon", "--draws", "--tune", "--chains", "--seed", "--out",
          "--mechanism", "--model-arg", "--mechanism-arg")
ONLY = {"sample": ("--s-dp", "--release", "--cores", "--method", "--checkpoint"),
        "calibrate": ("--methods", "--trials", "--parameter", "--index", "--executor",
                      "--workers")}


def _command_line(command: str):
    """A list of options that mostly belong to ``command`` (mostly past the parser)."""
    options = sorted(COMMON + ONLY[command])
    pairs = st.lists(st.sampled_from(options).flatmap(
        lambda option: st.tuples(st.just(option), st.sampled_from(OPTIONS[option]))),
        max_size=6)
    base = [("--n", "20"), ("--epsilon", "1")] + ([("--s-dp", "5")] if command == "sample"
                                                  else [("--trials", "2")])
    return st.builds(
        lambda model, pairs, flags: [command, model] + [t for p in base + pairs for t in p]
        + flags,
        st.sampled_from(["beta_binomial"] * 4 + ["poisson_gamma", "dirichlet_multinomial",
                                                 "normal_mean", "gamma_exponential"]),
        pairs, st.lists(st.sampled_from(["--force", "--resume", "--progress",
                                         "--no-progress"]), max_size=2))


plausible_argv = st.one_of(_command_line("sample"), _command_line("calibrate"))

#: Tokens a hurried or hostile user might type.
TOKENS = ["sample", "calibrate", "models", "demo", "beta_binomial", "poisson_gamma",
          "dirichlet_multinomial", "nosuch", "--n", "--epsilon", "--s-dp", "--release",
          "--draws", "--tune", "--chains", "--seed", "--cores", "--method", "--methods",
          "--trials", "--mechanism", "--model-arg", "--mechanism-arg", "--checkpoint",
          "--resume", "--out", "--force", "--executor", "--workers", "--parameter", "--index",
          "--progress", "--no-progress", "--help", "-h", "-", "--", "", "0", "1", "2", "3",
          "-1", "0.5", "1e400", "nan", "inf", "-inf", "abc", "[1,2]", "a=1", "a=", "=1",
          "alpha=[1,1,1]", "categories=3", "x", "out", "out.nc", "sub/dir/out.nc", ".", "..",
          "rel.txt", "record", "suffstat", "naive", "record,naive", "ops", ",", "serial",
          "threads", "p", "laplace", "geometric", "gaussian", "truncated", "\x00", "é"]


@pytest.fixture(scope="module")
def cli_without_sampling():
    """The command line with every sampler, the demo and calibration trials replaced by
    instant stand-ins, so only argument handling and file writing run."""
    from dawrap import cli, sampling
    from dawrap.samplers.output import Output

    def fake(model, *args, draws, **kwargs):
        rngs = args[-1]
        theta = np.full((len(rngs), draws, model.theta_size), 0.5)
        stats = np.random.default_rng(0).random((len(rngs), draws))
        return Output(theta + 0.01 * stats[..., None], {"accept_rate": stats}, None)

    def trials(function, args, indices, executor=None, on_result=None, workers=None):
        for t in indices:
            on_result(t, {"trial": t, "theta": 0.5, **{m: {
                "rank": 1, "thinned": 3, "ess": 3.0, "pit": 0.4, "quantile": 0.4,
                "covered": [True] * len(args[0].levels)} for m in args[0].methods}})

    with pytest.MonkeyPatch.context() as patch:
        for module, name in DRIVERS:
            patch.setattr(module, name, fake)
        patch.setattr(calibration, "run_tasks", trials)
        patch.setattr(cli, "_demo", lambda args: 0)
        patch.setattr(cli, "plots", lambda out, plots: None)
        yield


@pytest.mark.slow
@settings(SETTINGS, max_examples=150)
@example(argv=["sample", "beta_binomial", "--n", "3", "--epsilon", "1", "--s-dp", "1",
               "--out", "."], release="")
@example(argv=["calibrate", "beta_binomial", "--n", "3", "--epsilon", "1", "--trials", "2",
               "--out", ".."], release="")
@example(argv=["sample", "beta_binomial", "--n", "2", "--epsilon", "1", "--release",
               "rel.txt"], release="[[1]]")
@given(argv=st.one_of(st.lists(st.sampled_from(TOKENS), max_size=14), plausible_argv),
       release=st.one_of(st.text(max_size=30), st.sampled_from(["3", "[3]", "3, 4", "NaN"])))
def test_fuzz_command_line(cli_without_sampling, argv, release):
    """Any argument list: exit 0, or exit 2 with a usage message or an error naming the
    problem; never a traceback."""
    with tempfile.TemporaryDirectory() as root, working_folder(_inside(root)), \
            contextlib.redirect_stderr(io.StringIO()) as err, \
            contextlib.redirect_stdout(io.StringIO()):
        Path("rel.txt").write_text(release)
        try:
            code = main(list(argv))
        except SystemExit as done:  # argparse: --help (0) or a usage error (2)
            code = done.code
        event(f"exit {code}")
        assert code in (0, 2), (code, err.getvalue())
        if code == 2:
            assert "usage:" in err.getvalue() or "error:" in err.getvalue(), err.getvalue()


def _inside(root: str) -> Path:
    """A working folder two levels inside ``root``, so that ".." stays inside it."""
    folder = Path(root) / "a" / "b"
    folder.mkdir(parents=True)
    return folder

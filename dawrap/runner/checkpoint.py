"""Checkpoints of record-level chains: long runs lose no work.

A checkpoint is a folder with one ``chain<c>.npz`` per chain: the complete sampler state
(theta, the imputed database, the running sums, the cached log density, the theta
kernel's and the extra move's states), the chain's
``numpy.random.Generator`` state, the draws so far, the number of iterations done, and the
settings the run was started with. Each file is written to a unique temporary name, flushed
to disk and renamed over the old one, so a run killed at any moment (even by SIGKILL) leaves
the previous complete checkpoint. Resuming restores everything, so the draws are
bit-identical to an uninterrupted run with the same seed.

The folder is checked before any sampling (:func:`check_folder`: a real, writable folder; for
``resume``, one holding a checkpoint) and locked while a run uses it (:func:`lock`), so two
runs never write one folder. A file that cannot be read back (truncated, corrupt, not a
checkpoint) is a ValueError naming it and saying what to do, never a raw ``BadZipFile``.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import zipfile
from pathlib import Path

import numpy as np

from ..samplers.arrays import flatten_state
from ..samplers.record import RecordState, Trace, sample_stats
from .fingerprint import FORCE_VARIABLE, UNVERIFIABLE
from .._files import Lock, as_path, atomic_write, ensure_folder, is_held, kind_of, refuse_special

__all__ = ["save_chain", "load_chain", "load_chains", "saved_seed", "check_folder", "lock",
           "remove_stale_temporaries", "resumable", "CheckpointWriteError", "FORMAT",
           "SAVED_STATE"]

#: 5: the settings hold the run's fingerprint (dawrap.runner.fingerprint).
#: 6: the trace's sample stats in one array, ``trace_stats`` (record.Trace, the run loop's
#: outputs), and a plain Python draw_theta's kernel state holds its theta (record.given_theta).
#: 7: the interweaving move's jump mixture is a typed state (interweave.MixtureState: log
#: weights, means, factors in turn), no longer one packed array led by its count.
FORMAT = 7

#: The lock file inside a checkpoint folder (see :class:`dawrap._files.Lock`).
LOCK_NAME = ".lock"
_BUSY = ("wait for it to finish, or give this run another checkpoint folder (a run that "
         "died releases the folder by itself)")
#: The sampler state's fields a checkpoint holds: all but the entries path's per-cell block,
#: which copies the release and the running sums (the runner rebuilds it with
#: ``chain.arrange``), so files written before the block existed resume as they are, and the
#: clock, which the run loop sets before every iteration (``record.schedule``).
SAVED_STATE = tuple(k for k in RecordState._fields if k not in ("cells", "clock"))
#: What a chain's file must hold: the sampler state's fields (written from and read back into
#: the NamedTuple, so its field list lives in one place), the run's bookkeeping, and the
#: ``trace_*`` arrays.
_KEYS = (*SAVED_STATE, "done", "rng_state", "settings")
_TRACE = Trace._fields


class CheckpointWriteError(OSError):
    """A chain's checkpoint could not be written (full disk, folder removed, ...). The chain
    stops and its draws so far are returned with a warning, as after Ctrl-C."""


def _path(directory, chain: int) -> Path:
    return Path(directory) / f"chain{chain}.npz"


def _chain_files(folder: Path) -> list:
    return sorted(p for p in folder.glob("chain*.npz") if p.name[5:-4].isdigit())


def check_folder(checkpoint=None, resume=None) -> None:
    """Check ``dw.sample``'s ``checkpoint`` and ``resume`` folders before anything runs.

    ``resume`` must be a folder written by ``checkpoint=`` (holding ``chain<c>.npz`` files);
    the folder that will be written (``checkpoint``, else ``resume``) is created if missing
    and must be a real folder (not a file, symlink or device) in which files can be created,
    and no other run may be using it. A fresh run (``checkpoint`` without ``resume`` of the
    same folder) may not overwrite a checkpoint already there. Raises ValueError (TypeError
    for a non-path) naming the argument.
    """
    if resume is not None:
        folder = as_path(resume, "resume")
        kind = refuse_special(folder, "resume", "folder")
        if kind is None:
            raise ValueError(f"resume: {folder} is not a checkpoint folder (it does not "
                             f"exist); resume from a folder written by checkpoint=")
        if not _chain_files(folder):
            raise ValueError(f"resume: {folder} holds no checkpoint (no chain<c>.npz files); "
                             f"resume from a folder written by checkpoint= (a run stopped "
                             f"before its first checkpoint saved nothing: start it again "
                             f"with checkpoint=)")
    target, argument = (checkpoint, "checkpoint") if checkpoint is not None \
        else (resume, "resume")
    if target is None:
        return
    folder = ensure_folder(target, argument)
    chain_files = _chain_files(folder)
    for path in chain_files:  # never written through: see dawrap._files
        refuse_special(path, argument, "file")
    if checkpoint is not None and chain_files and (
            resume is None or not os.path.samefile(folder, resume)):
        # A fresh run would overwrite another run's saved work, chain by chain
        names = ", ".join(p.name for p in chain_files)
        raise ValueError(f"checkpoint: {folder} already holds a checkpoint ({names}); a new "
                         f"run would overwrite it. Continue it with resume= (the command "
                         f"line: --resume), or delete those files or choose another folder "
                         f"to start afresh")
    refuse_special(folder / LOCK_NAME, argument, "file")
    is_held(folder / LOCK_NAME, f"checkpoint folder {folder}", _BUSY)


@contextlib.contextmanager
def lock(folder):
    """Hold ``folder``'s lock while a run writes it (nothing for ``None``); a second run gets
    a ValueError saying the folder is in use. Once it is held, the temporary files a killed
    run left there are removed (:func:`remove_stale_temporaries`)."""
    if folder is None:
        yield
        return
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)  # usually done by check_folder already
    with Lock(folder / LOCK_NAME, f"checkpoint folder {folder}", _BUSY):
        remove_stale_temporaries(folder)
        yield


#: The temporary name :func:`save_chain` writes a chain's file under before renaming it
#: (:func:`dawrap._files.temporary_name`): ``.tmp-<process id>-<8 hex digits>-chain<c>.npz``.
_TEMPORARY = re.compile(r"\.tmp-(\d+)-[0-9a-f]{8}-chain\d+\.npz")


def remove_stale_temporaries(folder) -> list:
    """Remove the chain files a killed run was writing when it died, and return their names.

    Only under the folder's lock (the caller holds it: no other run is writing the folder,
    since :func:`save_chain` is only called under it), only files directly in ``folder``
    named as :func:`save_chain`'s temporaries, only regular files, and only those of a
    process that no longer exists (a live one's, even this process's, are left alone)."""
    removed = []
    for path in Path(folder).iterdir():
        match = _TEMPORARY.fullmatch(path.name)
        if match is None or kind_of(path) != "file" or _alive(int(match.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path.name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):  # another user's, or not a pid here
        return True
    return True


def resumable(folder) -> bool:
    """Whether ``folder`` holds a checkpoint that ``resume=`` can continue (a chain file)."""
    return folder is not None and kind_of(folder) == "folder" and bool(
        _chain_files(Path(folder)))


def save_chain(directory, chain: int, *, done: int, state, rng, trace, settings: dict,
               group_states: list | None = None) -> None:
    """Atomically write chain ``chain``'s state after ``done`` iterations (and, for the
    within-chain parallel sweep, its groups' generators' ``group_states``).

    Raises :class:`CheckpointWriteError` naming the file when it cannot be written; the
    previous checkpoint is then intact and no temporary file is left behind."""
    directory = Path(directory)
    final = _path(directory, chain)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **{k: _saved(getattr(state, k)) for k in SAVED_STATE},
                     done=np.int64(done),
                     rng_state=np.array(json.dumps(rng.bit_generator.state)),
                     settings=np.array(json.dumps({**settings, "format": FORMAT})),
                     **{f"trace_{k}": v for k, v in trace._asdict().items()},
                     **({} if group_states is None else
                        {"group_rng_states": np.array(json.dumps(group_states))}))

    try:
        directory.mkdir(parents=True, exist_ok=True)  # removed while the run was going?
        atomic_write(final, write, "checkpoint")
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        failure = CheckpointWriteError(f"could not write {final}: {reason}")
        failure.errno = getattr(err, "errno", None)  # e.g. ENOSPC, for callers that ask
        raise failure from err


def _saved(value) -> np.ndarray:
    """A state field as the file holds it: a kernel's or move's state (a NamedTuple of
    arrays) flattened, anything else as an array."""
    return flatten_state(value) if isinstance(value, tuple) else np.asarray(value)


def _unreadable(path: Path, err: BaseException) -> ValueError:
    what = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return ValueError(f"resume: {path} is not a readable dawrap checkpoint ({what}); it is "
                      f"truncated or corrupt: delete it to restart that chain from the "
                      f"beginning (its draws stay the same), or delete the folder to start "
                      f"afresh")


def _contents(path: Path) -> dict:
    """Every array of checkpoint file ``path``, checksums verified, with ``settings`` and
    ``rng_state`` decoded; a ValueError naming the file if it is not a complete checkpoint."""
    try:
        if kind_of(path) != "file":
            raise ValueError(f"{kind_of(path) or 'nothing'} where a file was expected")
        with zipfile.ZipFile(path) as archive:
            # CRC of every member first, so a flipped bit is never parsed as an array shape
            bad = archive.testzip()
            if bad is not None:
                raise ValueError(f"{bad} fails its checksum")
            names = {name.removesuffix(".npy") for name in archive.namelist()}
        missing = [k for k in (*_KEYS, *(f"trace_{t}" for t in _TRACE)) if k not in names]
        if missing:
            raise KeyError(f"no {', '.join(missing)}")
        with np.load(path, allow_pickle=False) as data:
            out = {k: data[k] for k in data.files}
        out["settings"] = json.loads(str(out["settings"]))
        out["rng_state"] = json.loads(str(out["rng_state"]))
        if not isinstance(out["settings"], dict) or not isinstance(out["rng_state"], dict):
            raise TypeError("settings and rng_state must be JSON objects")
        np.random.PCG64().state = out["rng_state"]  # a valid generator state?
        if "group_rng_states" in out:  # the parallel sweep's groups (dawrap.runner.parallel)
            out["group_rng_states"] = json.loads(str(out["group_rng_states"]))
            for state in out["group_rng_states"]:
                np.random.PCG64().state = state
        out["done"], out["log_g"] = int(out["done"]), float(out["log_g"])
    except Exception as err:  # noqa: BLE001 - anything unreadable is one clear error
        raise _unreadable(path, err) from err
    return out


def _check_shapes(path: Path, data: dict, settings: dict) -> None:
    """The arrays must fit the run (a file can pass its checksums and still be another
    run's, or a hand-edited one); NaN state would hang the compiled conjugate draws."""
    n, theta_size, record_size = (settings.get(k) for k in ("n", "theta_size", "record_size"))
    draws, tune = settings.get("draws"), settings.get("tune")
    size = settings.get("stat_size", len(settings.get("s_dp", ())))
    kept = draws if settings.get("keep_stats") else 0
    expected = {"theta": (theta_size,), "x": (n, record_size), "total": (size,),
                "trace_theta": (draws, theta_size), "trace_total": (kept, size),
                "trace_stats": (draws, len(sample_stats(
                    tuple(settings.get("kernel_stats", ("theta_accept",))))))}
    for key in ("stats", "kernel_state", "move_state"):
        expected[key] = (data[key].shape[0],) if data[key].ndim == 1 else ("a vector",)
    for key, shape in expected.items():
        array = data[key]
        if None in shape:
            continue
        if array.shape != shape or array.dtype != np.float64:
            raise ValueError(f"resume: {path} holds {key} of shape {array.shape} and type "
                             f"{array.dtype}, this run needs shape {shape} of float64; the "
                             f"file is damaged or from another run: delete it to restart "
                             f"that chain from the beginning")
    for key in ("theta", "x", "stats", "total"):
        if not np.all(np.isfinite(data[key])):
            raise ValueError(f"resume: {path} holds non-finite values in {key}; the file is "
                             f"damaged: delete it to restart that chain from the beginning")
    if not np.isfinite(data["log_g"]) or not 0 <= data["done"] <= tune + draws:
        raise ValueError(f"resume: {path} holds log_g = {data['log_g']} after "
                         f"{data['done']} of {tune + draws} iterations, which no run "
                         f"writes; the file is damaged: delete it to restart that chain")


def saved_seed(directory) -> int | None:
    """The root seed a checkpointed run was started with (None if nothing is saved)."""
    for path in _chain_files(Path(directory)):
        seed = _contents(path)["settings"].get("seed")
        try:
            return int(seed)
        except (TypeError, ValueError):
            raise ValueError(f"resume: {path} holds no valid seed ({seed!r}); the file is "
                             f"damaged: delete it, or pass seed= as when the run began") \
                from None
    return None


def load_chain(directory, chain: int, settings: dict) -> dict | None:
    """Read chain ``chain``'s checkpoint, checking it was made with the same ``settings``;
    ``None`` if that chain saved nothing yet (it then starts afresh from its seed)."""
    path = _path(directory, chain)
    if kind_of(directory) != "folder":
        raise ValueError(f"resume: {directory} is not a checkpoint folder")
    if kind_of(path) is None:
        return None
    out = _contents(path)
    saved = out.pop("settings")
    if saved.get("format") != FORMAT:
        raise ValueError(f"resume: {path} has checkpoint format {saved.get('format')}, "
                         f"this dawrap reads and writes format {FORMAT} only (the layout of "
                         f"what a chain saves changed): resume it with the dawrap version "
                         f"that wrote it, or start the run again without resume")
    for key, value in settings.items():
        if key != "code" and saved.get(key) != value:
            raise ValueError(f"resume: the checkpoint at {path} was made with {key} = "
                             f"{saved.get(key)!r}, this call has {value!r}")
    if settings.get("code") is not None:
        _check_fingerprint(path, saved.get("code"), settings["code"])
    _check_shapes(path, out, settings)
    return out


def _check_fingerprint(path: Path, saved, current: dict) -> None:
    """The run's fingerprint (:func:`dawrap.runner.fingerprint.run_fingerprint`) must match
    the checkpoint's, part by part; a part that could not be fingerprinted on either side
    is refused unless the environment variable ``DAWRAP_RESUME_UNVERIFIED`` is 1."""
    if not isinstance(saved, dict):
        raise ValueError(f"resume: {path} holds no fingerprint of the model and mechanism "
                         f"that wrote it; delete it to restart that chain from the beginning")
    unsure = lambda v: not isinstance(v, str) or v.startswith(UNVERIFIABLE)  # noqa: E731
    keys = sorted(set(saved) | set(current))
    differ = [k for k in keys if saved.get(k) != current.get(k)
              and not (k in saved and k in current and (unsure(saved[k]) or unsure(current[k])))]
    if differ:
        raise ValueError(f"resume: the checkpoint at {path} was written by another model or "
                         f"mechanism: {_parts(differ)} differ (their code, or a value they use: "
                         f"a prior's hyperparameters, an array, a closure's value). Resuming "
                         f"would return that run's draws as this one's posterior: resume with "
                         f"the model and mechanism that wrote it, or start this run in another "
                         f"checkpoint folder")
    unverified = [k for k in keys if unsure(saved.get(k)) or unsure(current.get(k))]
    if unverified and os.environ.get(FORCE_VARIABLE) != "1":
        reasons = "; ".join(dict.fromkeys(
            (current[k] if unsure(current.get(k)) else saved[k]).removeprefix(UNVERIFIABLE)
            for k in unverified))
        raise ValueError(f"resume: cannot check that {_parts(unverified)} of this run are "
                         f"those that wrote the checkpoint at {path} ({reasons}: no digest of "
                         f"such a value). Resuming under another model would return its draws "
                         f"as this one's posterior; if you are sure they are the same, set the "
                         f"environment variable {FORCE_VARIABLE}=1 and resume again")


def _parts(keys: list) -> str:
    """``["model.draw_prior"]`` as ``"the model's draw_prior"``."""
    return ", ".join(f"the {k.partition('.')[0]}'s {k.partition('.')[2]}" for k in keys)


def load_chains(directory, chains: int, settings: dict) -> list:
    """:func:`load_chain` for chains ``0 .. chains - 1``; a ValueError if none of them saved
    anything (resuming nothing would silently start a new run)."""
    resumed = [load_chain(directory, c, settings) for c in range(chains)]
    if all(r is None for r in resumed):
        found = ", ".join(p.name for p in _chain_files(Path(directory))) or "no chain files"
        raise ValueError(f"resume: {directory} holds no checkpoint of chains 0 to "
                         f"{chains - 1} ({found}); resume from a folder written by "
                         f"checkpoint= with the same chains")
    return resumed

"""Checkpoints of record-level chains: long runs lose no work.

A checkpoint is a folder with one ``chain<c>.npz`` per chain: the complete sampler state
(theta, the imputed database, the running sums, the cached log density, the theta
kernel's and the extra move's states), the chain's
``numpy.random.Generator`` state, the draws so far, the number of iterations done, and the
settings the run was started with. Each file is written to a temporary name, flushed to disk
and renamed over the old one, so a run killed at any moment (even by SIGKILL) leaves the
previous complete checkpoint. Resuming restores everything, so the draws are bit-identical to
an uninterrupted run with the same seed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

__all__ = ["save_chain", "load_chain", "saved_seed", "FORMAT"]

FORMAT = 4


def _path(directory, chain: int) -> Path:
    return Path(directory) / f"chain{chain}.npz"


def save_chain(directory, chain: int, *, done: int, state, rng, trace, settings: dict) -> None:
    """Atomically write chain ``chain``'s state after ``done`` iterations."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = _path(directory, chain)
    tmp = final.with_name(final.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, theta=state.theta, x=state.x, stats=state.stats, total=state.total,
                 log_g=np.float64(state.log_g), kernel_state=state.kernel_state,
                 move_state=state.move_state,
                 done=np.int64(done),
                 rng_state=np.array(json.dumps(rng.bit_generator.state)),
                 settings=np.array(json.dumps({**settings, "format": FORMAT})),
                 **{f"trace_{k}": v for k, v in trace._asdict().items()})
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)


def saved_seed(directory) -> int | None:
    """The root seed a checkpointed run was started with (None if nothing is saved)."""
    for path in sorted(Path(directory).glob("chain*.npz")):
        with np.load(path) as data:
            return int(json.loads(str(data["settings"]))["seed"])
    return None


def load_chain(directory, chain: int, settings: dict) -> dict | None:
    """Read chain ``chain``'s checkpoint, checking it was made with the same ``settings``;
    ``None`` if that chain saved nothing yet (it then starts afresh from its seed)."""
    path = _path(directory, chain)
    if not Path(directory).is_dir():
        raise ValueError(f"resume: {directory} is not a checkpoint folder")
    if not path.is_file():
        return None
    with np.load(path) as data:
        saved = json.loads(str(data["settings"]))
        if saved.get("format") != FORMAT:
            raise ValueError(f"resume: {path} has checkpoint format {saved.get('format')}, "
                             f"this dawrap writes {FORMAT}")
        for key, value in settings.items():
            if saved.get(key) != value:
                raise ValueError(f"resume: the checkpoint at {path} was made with {key} = "
                                 f"{saved.get(key)!r}, this call has {value!r}")
        out = {k: data[k].copy() for k in data.files if k not in ("settings", "rng_state")}
        out["rng_state"] = json.loads(str(data["rng_state"]))
    out["done"] = int(out["done"])
    out["log_g"] = float(out["log_g"])
    return out

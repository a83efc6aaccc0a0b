"""A study's completed trials, kept in a JSON-lines file so a stopped study loses at most the
trials in progress: the first line holds the settings, each later line one trial."""
from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["load", "append"]


def load(store, settings: dict) -> dict:
    """Completed trials in ``store`` by trial index (creating it with a settings header)."""
    path = Path(store)
    if not path.exists() or path.stat().st_size == 0:
        # The header is written to a temporary file and renamed: a store either has its
        # settings line or does not exist.
        tmp = path.with_name(path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        append(tmp, {"settings": settings})
        os.replace(tmp, path)
        return {}
    text = path.read_text()
    if not text.endswith("\n"):
        with open(path, "a") as f:  # end a line cut short, so new rows start clean
            f.write("\n")
    lines = text.splitlines()
    header = json.loads(lines[0])
    if header.get("settings") != settings:
        raise ValueError(f"store {path} holds a study with other settings: "
                         f"{header.get('settings')}; use a new file for this one")
    done = {}
    for line in lines[1:]:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short when the study was stopped
            continue
        done[int(row["trial"])] = row
    return done


def append(path, row: dict) -> None:
    """Append one row and force it to disk."""
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())

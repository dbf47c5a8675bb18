"""``OUT/manifest.jsonl``: one JSON record per finished input, appended by the driver; what a re-run skips."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from posetracker.batch.plan import MANIFEST, BatchSettings


def read_manifest(out_dir: str | Path) -> dict[str, dict[str, Any]]:
    """{input path: its last record} of ``OUT/manifest.jsonl`` (a cut-off last line is ignored)."""
    path = Path(out_dir) / MANIFEST
    last: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            last[rec.get("input", "")] = rec
    return last


def is_done(rec: dict[str, Any] | None, sha256: str, model: str, settings: BatchSettings) -> bool:
    """The record says this input is processed already, as it is now, and its outputs are still there."""
    return bool(rec and rec.get("status") == "done" and rec.get("sha256") == sha256 and rec.get("model") == model
                and rec.get("settings") == settings.key() and all(Path(p).exists() for p in rec.get("outputs", [])))


def append_record(out_dir: Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one line, synced to disk (a killed driver leaves whole lines)."""
    with open(out_dir / MANIFEST, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())

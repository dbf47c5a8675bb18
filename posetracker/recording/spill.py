"""PoseSpill: every pose of a long session kept on disk, not in memory (what the app exports).

The app keeps each pose it receives so that Export can write the whole session.
Held as PoseFrames that grows ~4 MB a minute; here each pose is appended to an
anonymous temporary file as one binary record, and only the count stays in
memory, so memory is flat however long the session runs. ``frames()`` reads the
records back, in frame order; a frame index stored again (after a seek, or a
replay) replaces the earlier pose of that index.

Record: header ``<q d i i i i B`` = (index, timestamp, P people, K joints,
image width, image height, has world), then keypoints (P, K, 3) float32,
confidence (P, K) float32, scores (P,) float32, track_ids (P,) int64 and, if
present, world (P, K, 3) float32, all little-endian.
"""

from __future__ import annotations

import struct
import tempfile

import numpy as np

from posetracker.types import PoseFrame

_HEADER = struct.Struct("<qdiiiiB")


class PoseSpill:
    """Append-only pose store in a temporary file (removed when closed or garbage-collected)."""

    def __init__(self, folder: str | None = None):
        self._file = tempfile.TemporaryFile(prefix="posetracker-poses-", dir=folder)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def put(self, pose: PoseFrame) -> None:
        p, k = pose.keypoints.shape[:2]
        parts = [_HEADER.pack(int(pose.index), float(pose.timestamp), p, k, *map(int, pose.image_size),
                              pose.world is not None)]
        arrays = [(pose.keypoints, "<f4"), (pose.confidence, "<f4"), (pose.scores, "<f4"), (pose.track_ids, "<i8")]
        if pose.world is not None:
            arrays.append((pose.world, "<f4"))
        parts += [np.ascontiguousarray(a, dtype=dt).tobytes() for a, dt in arrays]
        self._file.seek(0, 2)
        self._file.write(b"".join(parts))
        self._count += 1

    def frames(self) -> list[PoseFrame]:
        """Every stored pose, one per frame index (the latest stored), in index order."""
        self._file.flush()
        self._file.seek(0)
        data = self._file.read()
        latest: dict[int, PoseFrame] = {}
        at = 0
        while at < len(data):
            index, t, p, k, w, h, has_world = _HEADER.unpack_from(data, at)
            at += _HEADER.size

            def take(shape: tuple[int, ...], dtype: str) -> np.ndarray:
                nonlocal at
                n = int(np.prod(shape)) * np.dtype(dtype).itemsize
                out = np.frombuffer(data, dtype, count=int(np.prod(shape)), offset=at).reshape(shape)
                at += n
                return out.astype(dtype[1:])

            kp, conf = take((p, k, 3), "<f4"), take((p, k), "<f4")
            scores, ids = take((p,), "<f4"), take((p,), "<i8")
            world = take((p, k, 3), "<f4") if has_world else None
            latest[index] = PoseFrame(index, t, kp, conf, scores, ids, (w, h), world)
        return [latest[i] for i in sorted(latest)]

    def clear(self) -> None:
        self._file.seek(0)
        self._file.truncate()
        self._count = 0

    def close(self) -> None:
        self._file.close()

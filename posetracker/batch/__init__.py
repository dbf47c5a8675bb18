"""Whole archives: every video of some files, folders and glob patterns, processed on Ray, resumable.

    from posetracker.batch import BatchSettings, run_batch
    summary = run_batch(["archive/", "extra/*.mp4"], "out/", BatchSettings(formats=("csv", "bvh")))

Each input video is tracked as ``posetracker process`` would (same :class:`posetracker.session.SessionConfig`)
and its outputs written under the output folder, mirroring the input tree: ``archive/a/walk.mp4`` ->
``out/a/walk.poses.csv`` (``.poses.json``, ``.poses.bvh`` / ``.poses_person<ID>.bvh``, ...), each file written
atomically. Every task takes one CPU and runs torch on one thread.

- A video up to ``BatchSettings.chunk_s`` long (default 300 s), or any video in live mode, is one Ray task,
  :func:`process_file`.
- A longer one (offline; its header must state its frame count) is split into :class:`Chunk` s of about
  ``chunk_s``. Each chunk is a :func:`track_chunk` task that seeks to its start less ``chunk_overlap_s``
  (default 2 s) and tracks on to its end plus as much again, on its own (ids from 0). A
  :func:`finish_chunks` task, started by Ray once they are done, joins them (``tracking.join.join_parts``):
  each frame comes from the chunk whose own part holds it, tracks are matched in the overlaps (mean OKS,
  Hungarian) so a person keeps one id and no id names two people, left/right sides are made to agree, and bone
  lengths are set over the whole video. It then writes the outputs as for a video in one piece. Poses equal a
  one-piece run's in the first chunk away from its end and differ by ~1e-4 px elsewhere (the network's state
  starts afresh at each chunk), except where a per-frame decision goes the other way on such a near-tie (the
  tracker swapping back a close left/right pair, a joint at a confidence cut-off): then a joint moves by a few
  pixels over a smoothing window. The default overlap spans the smoothing window (0.35 s), the tracker's
  confirmation (3 frames) and, at 30 fps or more, the far-depth blend's 60-frame history (a shorter overlap
  moves far people's depth).

``OUT/manifest.jsonl`` gets one JSON line per finished input (chunked or not), appended by the driver as results
arrive: ``input`` (path), ``rel`` (its place in the output tree), ``size``, ``sha256`` (content),
``model`` (sha256 of the weights file), ``settings`` (hash of :class:`BatchSettings`), ``status``
(``done`` / ``failed``), ``frames``, ``chunks``, ``seconds`` (its tasks' time, summed), ``outputs``, ``error``,
``time``. A re-run skips an input whose last entry is ``done`` with the same content, model and settings and
whose outputs are all there; it redoes failed, changed and missing ones. Killing the driver loses at most the
inputs in flight; a worker that dies is retried by Ray (``max_retries``). One bad file never stops the batch:
it is recorded with its error (a failed chunk fails its input, with the chunk's error), and :func:`run_batch`'s
summary counts it. ``cancel`` (a callable polled by the driver) stops a batch early: what finished is in the
manifest, the rest is done by a re-run.

Progress: ``progress`` is called with each input's record as it arrives; ``frame_progress`` with the frames
tracked so far, which the tasks report to a :class:`FrameCounter` actor every ``REPORT_S`` (per frame, not
per chunk), polled by the driver.

Ray runs locally by default (``ray.init`` with ``workers`` CPUs) or joins a cluster at ``address``
(``ray://HOST:PORT`` or ``RAY_ADDRESS``); nothing else changes. Ray is the ``batch`` extra
(``pip install "posetracker[batch]"``).
"""


from posetracker.batch.driver import BatchSummary, FrameProgress, Progress, run_batch
from posetracker.batch.manifest import is_done, read_manifest
from posetracker.batch.plan import (MANIFEST, VIDEO_SUFFIXES, WHOLE, BatchError, BatchInput, BatchSettings, Chunk,
                                    collect_inputs, file_sha256, model_hash, output_paths, plan_chunks, video_length)
from posetracker.batch.tasks import REPORT_S, FrameCounter, finish_chunks, process_file, track_chunk

__all__ = ["MANIFEST", "REPORT_S", "VIDEO_SUFFIXES", "WHOLE", "BatchError", "BatchInput", "BatchSettings", "BatchSummary",
           "Chunk", "FrameCounter", "FrameProgress", "Progress", "collect_inputs", "file_sha256", "finish_chunks",
           "is_done", "model_hash", "output_paths", "plan_chunks", "process_file", "read_manifest", "run_batch",
           "track_chunk", "video_length"]

"""The 8-bit companion of a top-down crop model (``posetracker train int8-calibrate-crops``; the graph:
``posetracker.model.still_int8``, the file's format: ``posetracker.model.int8``).

1. A live session of the config's skeleton (float crop graph) runs over every ``step``-th frame of
   [``first``, ``end``) of the config's labelled video, which must all be TRAINING frames of the config
   (checked against its held-out split); the batches of crops its crop model reads (every animal x every live
   turn, (N, 3, S, S) float32 0..255) are recorded.
2. The percentiles (``int8_calibration.PERCENTILE``) of the activations of the body's quantised nodes over those
   batches are their ranges (``int8.calibrate`` on the float still graph).
3. Fidelity: the float and 8-bit still graphs on the same batches (the heatmaps' mean / max abs difference and
   how often a joint's peak cell moves), written in the companion's note with the frames used.
4. With ``qat_steps``: before 3, the body fine-tuned for those ranges on the same crops (``int8_qat``'s
   simulation and distillation, :func:`tuned_body`); the companion holds it (``body.*``).
5. The companion: the ranges, the crop model's own FPN, the tuned body (if any).
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from posetracker.model import int8
from posetracker.model.runtime import _session
from posetracker.model.still_int8 import PREFIXES, calibrate_still, quantised_still_path
from posetracker.train.int8_calibration import PERCENTILE


def crop_batches(config: str | Path, weights: str | Path, first: int, end: int, step: int) -> tuple[list[np.ndarray], list[int]]:
    """The crop model's batches (N, 3, S, S) float32 0..255 of a live float session on every ``step``-th frame
    of [first, end) of ``config``'s labelled video, and the frame indices; ValueError when one of those frames
    is held out by the config."""
    from posetracker.session import NetworkSettings, PeopleSettings, SessionConfig, TrackingSession
    from posetracker.train.detector_run import load_training
    from posetracker.train.features import FrameSelection, iter_frames

    _, spec, train, held_out, _ = load_training(config)
    video = next(it.video for it in train if it.video is not None)
    first_held = min((it.frame_idx for it in held_out if it.video == video and it.frame_idx is not None), default=None)
    if first_held is not None and end > first_held:
        raise ValueError(f"frames from {first_held} of {video} are held out by {config}: calibrate before them")
    session = TrackingSession.open(spec, Path(weights), SessionConfig(
        mode="live", network=NetworkSettings(threads=1, int8=False), people=PeopleSettings(known_count=2)))
    still = session.crop_model.still if session.crop_model is not None else None
    if still is None:
        raise ValueError(f"{config}: no crop model read through a still graph")
    batches, frames, real = [], [], still.session.run

    def record(names, feed):
        batches.append(feed["images"].copy())
        return real(names, feed)

    still.session.run = record
    try:
        for frame in iter_frames(video, FrameSelection(step=1, max_frames=end)):
            if frame.index >= first and (frame.index - first) % step == 0:
                session.step(frame)
                frames.append(frame.index)
    finally:
        still.session.run = real
    return batches, frames


def still_fidelity(float_path: Path, q_path: Path, batches: list[np.ndarray]) -> dict[str, float]:
    """The float and 8-bit still graphs on ``batches``: heatmaps' mean and max abs difference, and the share of
    (crop, joint) whose peak cell moves where the float peak is over 0.3."""
    f, q = _session(float_path, 1), _session(q_path, 1)
    mean, worst, moved, peaks = [], 0.0, 0, 0
    for x in batches:
        a, b = f.run(["heatmaps"], {"images": x})[0], q.run(["heatmaps"], {"images": x})[0]  # (N, K, h, w)
        d = np.abs(a - b)
        mean.append(float(d.mean()))
        worst = max(worst, float(d.max()))
        flat_a, flat_b = a.reshape(*a.shape[:2], -1), b.reshape(*b.shape[:2], -1)
        sure = flat_a.max(-1) > 0.3
        moved += int((sure & (flat_a.argmax(-1) != flat_b.argmax(-1))).sum())
        peaks += int(sure.sum())
    return {"heatmaps_mean": float(np.mean(mean)), "heatmaps_max": worst, "peak_moved": moved / max(1, peaks),
            "peaks": peaks}


def tuned_body(net, float_path: Path, ranges: dict[str, list[float]], batches: list[np.ndarray], steps: int,
               lr: float, batch: int, seed: int, log: Callable[[str], None],
               keep_float: tuple[str, ...] = int8.KEEP_FLOAT) -> tuple[dict, dict]:
    """``net``'s body fine-tuned for 8 bits on the crops of ``batches`` (``int8_qat.fine_tune_body``: the
    convolutions the graph at ``float_path`` quantises simulated with ``ranges``, features distilled towards
    the float body's) -> (its state dict, the note's ``qat`` entry)."""
    import onnx
    import torch

    from posetracker.model.live_graph import torch_parts
    from posetracker.train.int8_qat import fine_tune_body, plain_state, simulate

    torch.manual_seed(seed)
    graph = onnx.load(str(float_path)).graph
    conv_inputs = {n.name: n.input[0] for n in graph.node if n.op_type == "Conv" and n.name.startswith(int8.BODY)}
    fpn = torch_parts(net)[0].fpn.state_dict()
    student, teacher = int8.with_fpn(net, fpn), int8.with_fpn(net, fpn)
    n = simulate(student.backbone.body, conv_inputs, ranges, keep_float)
    log(f"{n} of {len(conv_inputs)} body convolutions simulated in 8 bits")
    x = torch.from_numpy(np.concatenate(batches))  # (N, 3, S, S)
    before, after = fine_tune_body(student, teacher, x, steps, lr, batch, random.Random(seed), log)
    return plain_state(student.backbone.body), {"steps": steps, "lr": lr, "batch": batch, "crops": len(x), "seed": seed,
                                                 "simulated_feature_error": {"before": before, "after": after}}


def make_crop_companion(config: str | Path, weights: str | Path, out: str | Path, first: int = 0, end: int = 800,
                        step: int = 10, qat_steps: int = 0, lr: float = 5e-6, batch: int = 8, seed: int = 0,
                        keep_float: tuple[str, ...] = int8.KEEP_FLOAT, log: Callable[[str], None] = print) -> dict:
    """Calibrate the crop model of ``config``'s skeleton (beside ``weights``, the centre model) on crops of its
    training frames (the body's nodes named by ``keep_float`` left in float), with ``qat_steps`` its body fine-tuned for 8 bits on the same crops (:func:`tuned_body`),
    and write the companion at ``out``; returns its note."""
    log("recording crops")
    batches, frames = crop_batches(config, weights, first, end, step)
    from posetracker.session import SessionConfig, TrackingSession
    from posetracker.train.detector_run import load_training

    session = TrackingSession.open(load_training(config)[1], Path(weights), SessionConfig(mode="offline"))
    net = session.crop_model.net
    log(f"{len(frames)} frames (from {frames[0]} to {frames[-1]}), {sum(len(b) for b in batches)} crops: calibrating")
    with tempfile.TemporaryDirectory(prefix="int8-crops-") as tmp:
        float_path = Path(tmp) / "float.onnx"
        ranges = calibrate_still(net, batches, PERCENTILE, float_path, keep_float)
        body, qat = tuned_body(net, float_path, ranges, batches, qat_steps, lr, batch, seed, log, keep_float) \
            if qat_steps \
            else (None, None)
        companion = Path(tmp) / "c.int8.safetensors"
        from posetracker.model.live_graph import torch_parts

        fpn = torch_parts(net)[0].fpn
        int8.write_companion(companion, fpn, net, ranges, keep_float, "", PREFIXES, body=body)
        q_path = quantised_still_path(net, companion)
        assert q_path is not None
        fid = still_fidelity(float_path, q_path, batches)
    note = {"frames": [frames[0], frames[-1], step], "crops": sum(len(b) for b in batches), "percentile": PERCENTILE,
            "fidelity_train": fid, **({"qat": qat} if qat else {})}
    log(f"{len(ranges)} ranges; fidelity on the calibration crops: {json.dumps(fid)}")
    int8.write_companion(Path(out), fpn, net, ranges, keep_float, json.dumps(note), PREFIXES, body=body)
    return note

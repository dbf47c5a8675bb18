"""Pseudo-labels for the precision stage's own network (``posetracker train crop-labels``, issue #47).

Over unlabelled frames (videos sampled sparsely, still photos) the product's own pipeline finds the people
(the bottom-up network alone, one read of the whole frame, as ``train.labellers.PipelineTeacher``), and each
person's crop is cut as the precision stage cuts it (``refiners.crop``: its boxes, ``crop_around_box`` with
``expand`` 1.25, 256 x 256). Then the teachers read the person:

- MoveNet Thunder (the shipped crop weights) on the crop, on its horizontal flip (x mirrored back, left/right
  joints swapped back: ``FLIP``) and on two more crops of the same box centre at other scales (``SCALES``);
- BlazePose GHUM heavy (``train.teachers.blazepose``) on the same box, its 33 landmarks mapped to COCO-17
  (``train.teachers.mapping.BLAZEPOSE_TO_HUMAN18``).

A reading sees a joint when its score is at least ``thunder_seen`` (Thunder) or ``blaze_seen`` (BlazePose's
visibility). A joint is kept (:func:`agree`) where at least ``min_agree`` seen readings, BlazePose among them,
lie within ``tol`` box sides of the seen readings' median; its label is their mean. Weights (:func:`joint_weights`):
1 per kept joint, times ``back`` for a back view and ``side`` for a side view (the torso's facing from the kept
shoulders and hips), times ``missed`` where some reading did not see the joint or stood apart (occlusion, the
hard cases) and times ``small`` for people whose box is under ``small_px`` pixels (their crops are upsampled).

Per source file one cache entry (``<cache>/crop-labels/<key>``, key = file hash + settings + teacher weights):
``.feats.npy`` (2N, 24, 64, 64) float16: Thunder's frozen backbone features of each crop and then of its
flip, and ``.npz`` with ``labels`` (2N, 17, 2) (y, x) normalised to the crop as Thunder's decode gives them,
``weights`` (2N, 17), ``centre`` (2N, 2) the frozen centre head's chosen cell (row, col), ``side`` (2N,) source
px of the crop window, ``facing`` (2N,) 0 unknown, 1 front, 2 side, 3 back. Rows N.. are the flips of rows ..N.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from posetracker.model.thunder import COCO17, FLIP, crop_around_box, to_source
from posetracker.train.cache import (
    combine_key,
    entry_path,
    file_hash,
    load_npz,
    save_npy,
    save_npz,
)

SCALES = (1.05, 1.5)  # the extra readings' crop expands (the product's 1.25 between)
FACINGS = ("unknown", "front", "side", "back")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
Log = Callable[[str], None]


@dataclass(frozen=True)
class LabelSettings:
    """How frames are sampled, when teachers agree and how joints are weighted (see the module docstring)."""

    every: int = 8  # video: every n-th frame
    max_frames: int = 40  # video: at most this many frames per clip
    min_score: float = 0.2  # people the pipeline finds with at least this score
    min_side: float = 32.0  # px: smaller boxes are skipped
    tol: float = 0.05  # box sides
    min_agree: int = 3
    thunder_seen: float = 0.2
    blaze_seen: float = 0.5
    back: float = 2.0
    side: float = 1.5
    missed: float = 1.5
    small: float = 1.5
    small_px: float = 128.0


def flip_x(x: np.ndarray, size: int) -> np.ndarray:
    """Normalised crop x of a mirrored crop's reading -> the unmirrored crop's (pixel centres: u -> S-1-u)."""
    return (size - 1) / size - x


def thunder_readings(net, weight: np.ndarray, rgb: np.ndarray, box: np.ndarray, expand: float = 1.25
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int]]:
    """Thunder on a person's crop, its flip and the two ``SCALES``, as one batch.

    net: ThunderNet; weight: its centre prior (G, G); rgb (H, W, 3) uint8; box (4,) x1 y1 x2 y2 px.
    Returns feats (2, C, G, G) float16 (the crop's and the flipped crop's backbone features), readings
    (4, 17, 3) x px, y px, score in the source (crop, flip unmirrored, scales), centres (2, 2) the chosen
    centre cell (row, col) of the crop and of the flip, and the crop window (x0, y0, S) in source px.
    """
    from posetracker.model.thunder import decode_thunder

    size = net.input_size
    crop, (x0, y0, side) = crop_around_box(rgb, box, size=size, expand=expand)
    cuts = [(crop, (x0, y0, side)), (np.ascontiguousarray(crop[:, ::-1]), (x0, y0, side))]
    cuts += [crop_around_box(rgb, box, size=size, expand=e) for e in SCALES]
    x = torch.from_numpy(np.stack([c for c, _ in cuts])).permute(0, 3, 1, 2).float()
    with torch.no_grad():
        feats = net.backbone(x)
        heads = {k: h(feats).permute(0, 2, 3, 1).numpy() for k, h in net.heads.items()}
    out = np.zeros((4, 17, 3), np.float64)
    centres = np.zeros((2, 2), np.int64)
    for i, (_, window) in enumerate(cuts):
        kp = decode_thunder(heads["centre"][i], heads["heatmap"][i], heads["regress"][i], heads["offset"][i], weight)
        out[i] = to_source(kp, window, size, mirrored=i == 1)
        if i < 2:
            c = 1.0 / (1.0 + np.exp(-heads["centre"][i][..., 0])) * weight
            centres[i] = divmod(int(np.argmax(c)), weight.shape[0])
    return feats[:2].numpy().astype(np.float16), out, centres, (x0, y0, side)


def blaze_reading(person) -> np.ndarray:
    """A BlazePosePerson -> (17, 3) x px, y px, visibility in COCO-17 order."""
    from posetracker.train.teachers.mapping import BLAZEPOSE_TO_HUMAN18

    idx = [BLAZEPOSE_TO_HUMAN18[n] for n in COCO17]
    return np.concatenate([person.landmarks[idx, :2], person.landmarks[idx, 3:4]], axis=1).astype(np.float64)


def agree(readings: np.ndarray, seen: np.ndarray, side: float, s: LabelSettings, blaze: int = -1
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """readings (T, 17, 2) px, seen (T, 17) bool, side: box side px; ``blaze``: BlazePose's row.
    Returns label (17, 2) px (nan where not kept), kept (17,) bool, missed (17,) bool: kept joints that some
    reading did not see or read elsewhere."""
    t, k = seen.shape
    label = np.full((k, 2), np.nan)
    kept, missed = np.zeros(k, bool), np.zeros(k, bool)
    for j in range(k):
        rows = np.flatnonzero(seen[:, j] & np.isfinite(readings[:, j]).all(1))
        if len(rows) < s.min_agree:
            continue
        med = np.median(readings[rows, j], axis=0)
        near = rows[np.linalg.norm(readings[rows, j] - med, axis=1) <= s.tol * side]
        if len(near) >= s.min_agree and (blaze % t) in near:
            label[j], kept[j], missed[j] = readings[near, j].mean(axis=0), True, len(near) < t
    return label, kept, missed


def facing(label: np.ndarray, kept: np.ndarray) -> int:
    """Index into ``FACINGS`` from the kept shoulders and hips of a COCO-17 label (17, 2) px (y down): the
    torso's left-right direction crossed with its up direction, over the torso's length squared."""
    need = [5, 6, 11, 12]
    if not kept[need].all():
        return 0
    lr = label[5] - label[6]  # right shoulder -> left shoulder
    up = (label[5] + label[6] - label[11] - label[12]) / 2
    length2 = float(up @ up)
    if length2 < 1.0:
        return 0
    s = float(up[0] * lr[1] - up[1] * lr[0]) / length2
    return 1 if s > 0.25 else 3 if s < -0.25 else 2


def joint_weights(kept: np.ndarray, missed: np.ndarray, face: int, side_px: float, s: LabelSettings) -> np.ndarray:
    """(17,) training weight per joint (0 where not kept; see the module docstring)."""
    w = kept.astype(np.float64)
    w *= {3: s.back, 2: s.side}.get(face, 1.0)
    w *= np.where(missed, s.missed, 1.0)
    return w * (s.small if side_px < s.small_px else 1.0)


class CropLabeller:
    """The pipeline's people -> the teachers' agreed labels and Thunder's frozen features per crop."""

    def __init__(self, net, refiner, blaze, settings: LabelSettings = LabelSettings(), threads: int = 1):
        from posetracker.train.labellers import PipelineTeacher

        self.finder = PipelineTeacher(net, score_threshold=settings.min_score, threads=threads, with_depth=False)
        self.refiner, self.blaze, self.s = refiner, blaze, settings
        self.weight = refiner.centre_weight.numpy()
        self.size = refiner.net.input_size

    def label_frame(self, rgb: np.ndarray) -> list[dict[str, np.ndarray]]:
        """(H, W, 3) uint8 RGB -> one record per labelled person (rows for the crop and its flip)."""
        pose = self.finder.session.process_image(rgb)
        if pose.num_people == 0:
            return []
        xy, conf = pose.keypoints[..., :2].astype(np.float64), pose.confidence.astype(np.float64)
        boxes = self.refiner.boxes(xy, conf)
        ok = [p for p in range(len(boxes)) if np.isfinite(boxes[p]).all()
              and max(boxes[p, 2] - boxes[p, 0], boxes[p, 3] - boxes[p, 1]) >= self.s.min_side]
        if not ok:
            return []
        found = self.blaze.predict_crops(rgb, boxes[ok], keep_absent=True)
        out = []
        for p, bp in zip(ok, found):
            feats, th, centres, window = thunder_readings(self.refiner.net, self.weight, rgb, boxes[p], self.refiner.expand)
            j = self.refiner.joints
            if not self.refiner.agrees(xy[p, j], conf[p, j], th[0, :, :2], th[0, :, 2]):
                continue  # the crop's reading is someone else
            b = blaze_reading(bp)
            readings = np.concatenate([th[:, :, :2], b[None, :, :2]])  # (5, 17, 2)
            seen = np.concatenate([th[:, :, 2] >= self.s.thunder_seen, (b[None, :, 2] >= self.s.blaze_seen)
                                   & (bp.presence >= 0.5)])
            box_side = window[2] / self.refiner.expand
            label, kept, missed = agree(readings, seen, box_side, self.s)
            if not kept.any():
                continue
            face = facing(label, kept)
            w = joint_weights(kept, missed, face, box_side, self.s)
            out.append({"feats": feats, "label_px": label, "weights": w, "centre": centres, "window": window,
                        "facing": face})
        return out


def crop_rows(records: list[dict], size: int) -> dict[str, np.ndarray]:
    """Records of :meth:`CropLabeller.label_frame` -> an entry's arrays but the features (crop rows first,
    then their flips; see the module docstring)."""
    n = len(records)
    labels = np.zeros((2 * n, 17, 2), np.float32)
    weights = np.zeros((2 * n, 17), np.float32)
    for i, r in enumerate(records):
        x0, y0, side = r["window"]
        y, x = (r["label_px"][:, 1] - y0) / side, (r["label_px"][:, 0] - x0) / side
        labels[i] = np.nan_to_num(np.stack([y, x], 1))
        weights[i] = r["weights"]
        labels[n + i] = labels[i][FLIP]
        labels[n + i, :, 1] = flip_x(labels[i][FLIP][:, 1], size)
        weights[n + i] = r["weights"][FLIP]
    return {"labels": labels, "weights": weights,
            "centre": np.concatenate([np.stack([r["centre"][0] for r in records]),
                                      np.stack([r["centre"][1] for r in records])]).astype(np.int64),
            "side": np.tile(np.array([r["window"][2] for r in records], np.float32), 2),
            "facing": np.tile(np.array([r["facing"] for r in records], np.int64), 2)}


def source_frames(path: Path, s: LabelSettings) -> Iterator[np.ndarray]:
    """(H, W, 3) uint8 RGB frames of a source: a still photo once; a video every ``s.every``-th frame, or
    sparser so that at most ``s.max_frames`` spread over the whole clip."""
    if path.suffix.lower() in IMAGE_SUFFIXES:
        import cv2

        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            raise FileNotFoundError(f"cannot read {path}")
        yield np.ascontiguousarray(bgr[..., ::-1])
        return
    from posetracker.capture import VideoFileSource
    from posetracker.train.features import FrameSelection, iter_frames

    with VideoFileSource(path) as src:
        count = src.frame_count or 0
    step = max(s.every, -(-count // s.max_frames))
    for frame in iter_frames(path, FrameSelection(step=step, max_frames=s.max_frames)):
        yield frame.image


@dataclass
class CropEntry:
    """One source's labelled crops: feats (2N, C, G, G) float16 (memory-mapped), labels (2N, 17, 2) (y, x)
    normalised, weights (2N, 17), centre (2N, 2) cell (row, col), side (2N,) px, facing (2N,); source: its path."""

    source: str
    feats: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    centre: np.ndarray
    side: np.ndarray
    facing: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def entry_key(path: Path, labeller: CropLabeller, teachers: str) -> str:
    """Cache key: the file's bytes, the settings, the crop weights and the teachers' names."""
    from posetracker.model.weights import weights_key

    return combine_key("crop-labels-v1", file_hash(path), asdict(labeller.s), weights_key(labeller.refiner.net),
                       labeller.finder.name, teachers)


def load_entry(key: str, source: str) -> CropEntry | None:
    meta = load_npz(entry_path("crop-labels", key, ".npz"))
    feats = entry_path("crop-labels", key, ".feats.npy")
    if meta is None or not feats.exists():
        return None
    return CropEntry(source, np.load(feats, mmap_mode="r"), meta["labels"], meta["weights"], meta["centre"],
                     meta["side"], meta["facing"])


def label_source(path: Path, labeller: CropLabeller, teachers: str, log: Log = print) -> CropEntry | None:
    """A source's cached entry, made on a miss; None when no person there was labelled."""
    key = entry_key(path, labeller, teachers)
    hit = load_entry(key, str(path))
    if hit is not None:
        return hit
    records: list[dict] = []
    frames = 0
    for rgb in source_frames(path, labeller.s):
        records += labeller.label_frame(rgb)
        frames += 1
    log(f"  {path.name}: {frames} frames, {len(records)} people labelled")
    if not records:
        save_npz(entry_path("crop-labels", key, ".npz"), labels=np.zeros((0, 17, 2), np.float32))
        return None
    rows = crop_rows(records, labeller.size)
    feats = np.concatenate([np.stack([r["feats"][0] for r in records]), np.stack([r["feats"][1] for r in records])])
    save_npy(entry_path("crop-labels", key, ".feats.npy"), feats)
    save_npz(entry_path("crop-labels", key, ".npz"), **rows)
    return load_entry(key, str(path))


def find_sources(paths: list[str]) -> list[Path]:
    """Video and photo files: given directly or found under folders (sorted; SOURCE.md and labels skipped)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.suffix.lower() in IMAGE_SUFFIXES + (".mp4", ".mkv", ".gif",
                                                                                         ".avi", ".mov"))
        elif p.exists():
            out.append(p)
        else:
            raise FileNotFoundError(f"source not found: {p}")
    return out


def summary(entries: list[CropEntry]) -> dict[str, float]:
    """Counts over entries (crop rows only, not flips): crops, kept joints, facing shares, weight mean."""
    n = sum(len(e) // 2 for e in entries)
    if not n:
        return {"crops": 0}
    w = np.concatenate([e.weights[: len(e) // 2] for e in entries])
    face = np.concatenate([e.facing[: len(e) // 2] for e in entries])
    out = {"crops": n, "kept_joint_share": float((w > 0).mean()), "mean_weight_kept": float(w[w > 0].mean())}
    out.update({f"facing_{name}": float((face == i).mean()) for i, name in enumerate(FACINGS)})
    return out

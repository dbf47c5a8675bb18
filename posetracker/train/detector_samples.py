"""Samples for training a skeleton's detector heads and its refiners (:mod:`.detector`).

Two sources give the same :class:`LabelledSamples`:

- :func:`prepare_samples`, hand-labelled images (animal modes, any skeleton):
  a ``normalized*.json`` set whose keypoint names are the skeleton's joint
  names (the body centre may be virtual). The set is split by item order: the
  last ``val_fraction`` of its items is held out (for a set cut from one video
  this is a contiguous stretch of it, never frames interleaved with training
  frames).
- :func:`teacher_samples`, teacher-labelled clips (the human model's
  refiners): the human labelled sets under ../shared are evaluation sets (a
  few images each), so the human refiners learn from the distillation clips'
  cached teacher labels instead: every ``clip_every``-th labelled frame of
  each *training* clip of a distill config (held-out clips never), at most
  ``clip_max`` per clip, with the joints the teacher saw (``visible``); hidden
  joints are left unlabelled.

Each training item becomes ``variants`` augmented copies: one affine warp from
the source image straight into the 256 x 256 network input (the letterbox,
then a rotation and scale about the input's centre, and a horizontal flip that
swaps left/right joints by the skeleton's mirror pairs), colour jitter on top and,
if asked (``defocus``), one animal blurred and brightened as if off the focal plane.
Held-out items are only letterboxed, as the product does.

Which warps a training item gives (``samples``): "auto", the whole frame, and for a top-down skeleton
(``top_down: {crop_px}``) also crops around each labelled instance with every instance's points (one
network for both scales); "frames", the whole frame only (a top-down mode's centre model); "centred",
only the crops, each with the points of the instance it is centred on (the crop model of SLEAP's
centred-instance split: the other animals in a crop are background, so the model learns to read the
centred one; ``points`` then has P = 1). The frozen
MobileNetV2 body's outputs (the FPN's inputs, so the FPN can be trained) of
every prepared input are computed once and cached under ``<cache>/features``
(key: the json's hash, the augmentation, the backbone).

Arrays of a :class:`LabelledSamples` (M samples, P = most instances in one item):

- ``taps``   {"c2": (M, 40, 64, 64), "c3": (M, 48, 32, 32), "c4": (M, 96, 16, 16),
  "c5": (M, 1280, 8, 8)} float16, the MobileNetV2 outputs at strides 4-32
- ``images`` (M, 256, 256, 3) uint8 network inputs (method B looks at them)
- ``points`` (M, P, K, 2) float32 input pixels, nan = not labelled / no instance
- ``labelled`` (M, K) bool or None: the joints a sample's source set labels at all (an extra set,
  :func:`extra_samples`, may lack some: their heatmaps carry no loss there); None = every joint

Extra sets (a config's ``extra_data``): further labelled sets of the same kind of footage whose keypoint
names differ (``names``: skeleton joint -> the set's name; null: another point there, dropped) and which
may lack joints; their items train (they are other recordings, never the held-out stretch), every ``every``-th
item, ``variants`` copies each (default: the augmentation's), except the ``held_out`` segments ([[first, end),
...] of frame indices, item indices for stills) and ``gap`` frames either side of each: those are scored instead
(:func:`extra_held_out`, ``posetracker train held-out-eval --extra-held-out``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

import cv2
import numpy as np
import torch

from posetracker.decoding.top_down import upright_turn
from posetracker.evaluation.datasets import (
    FrameCache, LabelledItem, item_points, joint_columns, load_labelled_set, read_image,
)
from posetracker.model.network import PoseNet
from posetracker.model.preprocess import INPUT_SIZE, letterbox
from posetracker.skeletons import SkeletonSpec
from posetracker.train.cache import combine_key, entry_path, file_hash, load_npz, save_npz
from posetracker.train.still_augment import AugmentConfig, augment_input  # AugmentConfig: imported from here too


TAPS = ("c2", "c3", "c4", "c5")
SAMPLE_KINDS = ("auto", "frames", "centred")  # which warps a training item gives (module docstring)


@dataclass
class LabelledSamples:
    taps: dict[str, np.ndarray]
    images: np.ndarray
    points: np.ndarray
    labelled: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.points.shape[0])


def join_samples(parts: list[LabelledSamples]) -> LabelledSamples:
    """Several sample sets as one (P: the widest; ``labelled`` kept where any part has it)."""
    if len(parts) == 1:
        return parts[0]
    width = max(p.points.shape[1] for p in parts)
    points = [np.concatenate([p.points, np.full((len(p), width - p.points.shape[1], *p.points.shape[2:]), np.nan,
                                                np.float32)], 1) for p in parts]
    k = parts[0].points.shape[2]
    labelled = None if all(p.labelled is None for p in parts) else np.concatenate(
        [np.ones((len(p), k), bool) if p.labelled is None else p.labelled for p in parts])
    return LabelledSamples({t: np.concatenate([p.taps[t] for p in parts]) for t in TAPS},
                           np.concatenate([p.images for p in parts]), np.concatenate(points), labelled)


def split_items(items: list, val_fraction: float) -> tuple[list, list]:
    """(train, held out): the last ``val_fraction`` of the items (at least one) is held out."""
    n_val = max(1, int(round(len(items) * val_fraction))) if val_fraction > 0 else 0
    return items[: len(items) - n_val], items[len(items) - n_val :]


def warp_matrix(size: tuple[int, int], rng: np.random.Generator | None, aug: AugmentConfig) -> tuple[np.ndarray, bool]:
    """(2, 3) affine source px -> input px (letterbox, then rotate/scale/flip about the centre), flipped."""
    w, h = size
    s = INPUT_SIZE / max(w, h)
    lb = np.array([[s, 0, 0], [0, s, 0], [0, 0, 1]], np.float64)
    if rng is None:
        return lb[:2], False
    c = INPUT_SIZE / 2.0
    angle = rng.uniform(-aug.rotate_deg, aug.rotate_deg)
    scale = rng.uniform(*aug.scale)
    # centre the letterboxed image, then rotate / scale about the input centre
    shift = np.array([[1, 0, c - w * s / 2], [0, 1, c - h * s / 2], [0, 0, 1]])
    rot = np.vstack([cv2.getRotationMatrix2D((c, c), angle, scale), [0, 0, 1]])
    m = rot @ shift @ lb
    flipped = bool(aug.flip and rng.random() < 0.5)
    if flipped:
        m = np.array([[-1, 0, INPUT_SIZE], [0, 1, 0], [0, 0, 1]]) @ m
    return m[:2], flipped


def crop_matrix(centre: np.ndarray, crop_px: float, rng: np.random.Generator | None,
                aug: AugmentConfig, upright: float = 0.0) -> tuple[np.ndarray, bool]:
    """(2, 3) affine source px -> input px of a top-down crop: the ``crop_px`` square around ``centre`` (2,)
    scaled to the input (:mod:`posetracker.decoding.top_down`), turned ``upright`` degrees (an aligned crop
    model's: the animal upright, ``top_down.upright_turn``), then (``rng``) rotated / scaled about the
    input's centre, the centre shifted by up to ``aug.crop_shift`` of the crop on each axis (the whole-frame
    pass finds it only roughly), and flipped (about the upright axis)."""
    c = INPUT_SIZE / 2.0
    s = INPUT_SIZE / crop_px
    cx, cy = float(centre[0]), float(centre[1])
    if rng is not None:
        shift = aug.crop_shift
        cx, cy = cx + rng.uniform(-shift, shift) * crop_px, cy + rng.uniform(-shift, shift) * crop_px
    to_input = np.array([[s, 0, c - cx * s], [0, s, c - cy * s], [0, 0, 1]], np.float64)
    if rng is None:
        return (np.vstack([cv2.getRotationMatrix2D((c, c), upright, 1.0), [0, 0, 1]]) @ to_input)[:2], False
    rot = np.vstack([cv2.getRotationMatrix2D((c, c), upright + rng.uniform(-aug.rotate_deg, aug.rotate_deg),
                                             rng.uniform(*aug.scale)), [0, 0, 1]])
    m = rot @ to_input
    flipped = bool(aug.flip and rng.random() < 0.5)
    if flipped:
        m = np.array([[-1, 0, INPUT_SIZE], [0, 1, 0], [0, 0, 1]]) @ m
    return m[:2], flipped


def instance_centres(pts: np.ndarray, root: int) -> np.ndarray:
    """(P, K, 2) source px (nan = unlabelled) -> (P, 2) each instance's root, else its labelled joints' box
    centre (nan for an instance with no labelled joint)."""
    out = np.full((len(pts), 2), np.nan)
    for i, p in enumerate(pts):
        ok = np.isfinite(p).all(-1)
        if np.isfinite(p[root]).all():
            out[i] = p[root]
        elif ok.any():
            out[i] = (p[ok].min(0) + p[ok].max(0)) / 2
    return out


def defocus(img: np.ndarray, pts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Input (S, S, 3) uint8 with one of its labelled instances ``pts`` (P, K, 2) input px drawn out of focus:
    inside a soft disc around that instance (its points' spread plus a margin) the image is blurred (Gaussian,
    sigma 1-4 % of the instance's span) and brightened (x1.0-1.6), as an animal off the focal plane and nearer
    the light looks (the second fly of SLEAP's two-fly clip after frame 1000). Unchanged when none is labelled."""
    whole = [p[np.isfinite(p).all(-1)] for p in pts]
    whole = [p for p in whole if len(p)]
    if not whole:
        return img
    p = whole[int(rng.integers(len(whole)))]
    centre = p.mean(0)
    radius = float(np.linalg.norm(p - centre, axis=-1).max()) + 6.0
    yy, xx = np.mgrid[: img.shape[0], : img.shape[1]].astype(np.float32)
    d = np.hypot(xx - centre[0], yy - centre[1])
    mask = np.clip((radius + 4.0 - d) / 8.0, 0.0, 1.0)[..., None]  # 1 inside, 8 px feather
    sigma = max(0.5, 2 * radius * rng.uniform(0.01, 0.04))
    blurred = cv2.GaussianBlur(img, (0, 0), sigma).astype(np.float32) * rng.uniform(1.0, 1.6)
    return np.clip(img * (1 - mask) + blurred * mask, 0, 255).astype(np.uint8)


def warp_sample(rgb: np.ndarray, pts: np.ndarray, m: np.ndarray, flipped: bool, spec: SkeletonSpec,
                rng: np.random.Generator | None, colour: float, letterboxed: bool = False,
                defocus_chance: float = 0.0, aug: AugmentConfig | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Image (H, W, 3) and points (P, K, 2) source px -> input (256, 256, 3) and points (P, K, 2) input px,
    by the affine ``m`` (``letterboxed``: the product's own letterbox, which ``m`` then equals); with chance
    ``defocus_chance`` one instance out of focus (:func:`defocus`), then colour jitter and ``aug``'s
    background and photometric steps (:func:`posetracker.train.still_augment.augment_input`) when ``rng`` is given."""
    out = pts @ m[:, :2].T + m[:, 2]
    if letterboxed:
        img, _ = letterbox(rgb, INPUT_SIZE)
    else:
        img = cv2.warpAffine(rgb, m, (INPUT_SIZE, INPUT_SIZE), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))
        if rng is not None and defocus_chance > 0 and rng.random() < defocus_chance:
            img = defocus(img, out, rng)
        if rng is not None:
            img = augment_input(img, out, rng, colour, aug)
    if flipped:
        out = out[:, list(spec.mirror_index)]
    return img, out


def prepare_samples(path: str, items: list[LabelledItem], cols: np.ndarray, spec: SkeletonSpec, net: PoseNet,
                    aug: AugmentConfig | None, seed: int, tag: str,
                    progress: Callable[[int, int], None] | None = None, samples: str = "auto") -> LabelledSamples:
    """Warped inputs, their points and cached first features of labelled items (``aug`` None: plain letterbox;
    ``samples``: see the module docstring)."""

    def pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        cache = FrameCache()
        try:
            for item in items:
                yield read_image(item, cache), item_points(item, cols)
        finally:
            cache.close()

    key = combine_key("labelled-v1", file_hash(path), tag, len(items), seed)
    most = max(len(it.instances) for it in items)
    return warp_and_extract(pairs(), len(items), most, key, spec, net, aug, seed, progress, samples)


def sample_warps(rgb: np.ndarray, pts: np.ndarray, spec: SkeletonSpec, aug: AugmentConfig | None,
                 rng: np.random.Generator, samples: str = "auto") -> list[tuple[np.ndarray, bool, np.ndarray, bool]]:
    """The warps of one training item: [(affine (2, 3) source px -> input px, flipped, the points it carries
    (P', K, 2) source px, letterboxed)], ``variants`` (one when ``aug`` is None) per whole frame and per crop
    around each labelled instance of ``pts`` (P, K, 2) source px, as ``samples`` asks (module docstring)."""
    if samples not in SAMPLE_KINDS:
        raise ValueError(f"samples: expected one of {list(SAMPLE_KINDS)}, got {samples!r}")
    variants, r = (1, None) if aug is None else (aug.variants, rng)
    a = aug or AugmentConfig()
    out = []
    if samples != "centred":
        out += [(*warp_matrix((rgb.shape[1], rgb.shape[0]), r, a), pts, aug is None) for _ in range(variants)]
    if samples == "frames" or not spec.top_down:
        if samples == "centred":
            raise ValueError(f"samples: centred needs a top-down skeleton (top_down: {{crop_px}}); {spec.name} is not")
        return out
    for i, centre in enumerate(instance_centres(pts, spec.root)):
        if np.isfinite(centre).all():
            carried = pts[i : i + 1] if samples == "centred" else pts
            up = upright_turn(pts[i], spec.crop_align)
            out += [(*crop_matrix(centre, spec.top_down["crop_px"], r, a, up), carried, False) for _ in range(variants)]
    return out


def warp_and_extract(pairs: Iterable[tuple[np.ndarray, np.ndarray]], n: int, most: int, key: str, spec: SkeletonSpec,
                     net: PoseNet, aug: AugmentConfig | None, seed: int,
                     progress: Callable[[int, int], None] | None = None, samples: str = "auto") -> LabelledSamples:
    """(RGB (H, W, 3), points (P, K, 2) source px) pairs -> cached :class:`LabelledSamples`
    (``variants`` warped copies each, or one letterboxed copy when ``aug`` is None; for a top-down skeleton
    also that many crops around each labelled instance, :func:`crop_matrix`; ``samples``: which of them,
    see :func:`sample_warps`; "centred" gives P = 1)."""
    from posetracker.model.weights import weights_key

    crops = None if samples == "frames" or not spec.top_down else \
        {"crop_px": spec.top_down["crop_px"], **({"align": True} if spec.crop_align else {})}
    key = combine_key(key, "taps", 1 if aug is None else aug.variants, None if aug is None else aug.key(),
                      weights_key(net.backbone), spec.name, crops, *([samples] if samples == "centred" else []))
    hit = load_npz(entry_path("features", key, ".npz"))
    if hit is not None:
        return LabelledSamples({t: hit[t] for t in TAPS}, hit["images"], hit["points"])
    rng = np.random.default_rng(seed)
    images, points = [], []
    width = 1 if samples == "centred" else most
    for i, (rgb, pts) in enumerate(pairs):
        for m, flipped, carried, boxed in sample_warps(rgb, pts[:most], spec, aug, rng, samples):
            img, p = warp_sample(rgb, carried, m, flipped, spec, None if aug is None else rng,
                                 0.0 if aug is None else aug.colour, letterboxed=boxed,
                                 defocus_chance=0.0 if aug is None else aug.defocus, aug=aug)
            padded = np.full((width, spec.num_joints, 2), np.nan, np.float32)
            padded[: len(p)] = p
            images.append(img)
            points.append(padded)
        if progress:
            progress(i + 1, n)
    taps = body_taps(net, images)
    save_npz(entry_path("features", key, ".npz"), images=np.stack(images), points=np.stack(points), **taps)
    return LabelledSamples(taps, np.stack(images), np.stack(points))


@torch.no_grad()
def body_taps(net: PoseNet, images: list[np.ndarray], batch: int = 16) -> dict[str, np.ndarray]:
    """(M, 256, 256, 3) uint8 inputs -> the frozen MobileNetV2 body's outputs (see the module docstring)."""
    from posetracker.model.backbone import INPUT_SCALE, INPUT_SHIFT
    from posetracker.model.preprocess import to_tensor

    out: dict[str, list[np.ndarray]] = {t: [] for t in TAPS}
    body = net.backbone.body.eval()
    for i in range(0, len(images), batch):
        x = to_tensor(np.stack(images[i : i + batch])) * INPUT_SCALE + INPUT_SHIFT
        for t, v in body(x).items():
            out[t].append(v.numpy().astype(np.float16))
    return {t: np.concatenate(v) for t, v in out.items()}


def load_split(path: str, spec: SkeletonSpec, val_fraction: float) -> tuple[list[LabelledItem], list[LabelledItem], np.ndarray]:
    """(train items, held-out items, joint columns) of one labelled set."""
    ls = load_labelled_set(path)
    cols = joint_columns(ls.keypoint_names, spec)
    train, val = split_items(list(ls.items), val_fraction)
    return train, val, cols


def extra_columns(keypoint_names: list[str], names: dict[str, str], spec: SkeletonSpec, path: str) -> np.ndarray:
    """(K,) column of each skeleton joint in an extra set (by ``names``: joint -> the set's name, else the joint's
    own name; a null name drops the joint), -1 where the set lacks it."""
    unknown = sorted(set(names) - set(spec.joint_names)) + sorted(v for v in names.values() if v not in [None, *keypoint_names])
    if unknown:
        raise ValueError(f"extra_data {path}: names not in the skeleton / the set: {unknown}")
    cols = np.array([keypoint_names.index(names.get(j, j)) if names.get(j, j) in keypoint_names else -1
                     for j in spec.joint_names])
    if (cols < 0).all():
        raise ValueError(f"extra_data {path}: none of the skeleton's joints is in the set")
    return cols


def segment_flags(items: list[LabelledItem], segments, gap: int = 0) -> np.ndarray:
    """(N,) bool: the items whose frame index (item index for stills) lies in a segment [first, end) widened
    by ``gap`` each side."""
    idx = [i if it.frame_idx is None else it.frame_idx for i, it in enumerate(items)]
    return np.array([any(a - gap <= f < b + gap for a, b in segments) for f in idx], bool)


def extra_samples(path: str, names: dict[str, str], every: int, spec: SkeletonSpec, net: PoseNet,
                  aug: AugmentConfig | None, seed: int, progress: Callable[[int, int], None] | None = None,
                  samples: str = "auto", held_out=(), gap: int = 0, variants: int | None = None) -> LabelledSamples:
    """The samples of an extra labelled set (module docstring): every ``every``-th of its items outside the
    ``held_out`` segments and their ``gap``, ``variants`` copies each; its keypoints found by
    :func:`extra_columns`; joints it lacks are unlabelled and marked so in ``labelled``."""
    ls = load_labelled_set(path)
    cols = extra_columns(list(ls.keypoint_names), names, spec, path)
    items = list(ls.items)
    items = [it for it, out in zip(items, segment_flags(items, held_out, gap)) if not out][:: max(1, every)]
    if aug is not None and variants:
        aug = replace(aug, variants=int(variants))
    tag = f"extra-{every}" + (f"-out{[list(x) for x in held_out]}-{gap}" if held_out else "") \
        + "".join(f"-no-{j}" for j in names if names[j] is None)
    out = prepare_samples(path, items, cols, spec, net, aug, seed, tag, progress, samples)
    labelled = np.broadcast_to(cols >= 0, (len(out), len(cols))).copy()
    return LabelledSamples(out.taps, out.images, out.points, labelled)


def extra_held_out(path: str, names: dict[str, str], held_out, spec: SkeletonSpec,
                   count: int | None = None) -> tuple[list[LabelledItem], np.ndarray]:
    """(items, joint columns) of an extra set's ``held_out`` segments; with ``count`` only those with exactly
    that many labelled instances (a frame labelled with another number cannot be scored with a known count)."""
    ls = load_labelled_set(path)
    cols = extra_columns(list(ls.keypoint_names), names, spec, path)
    items = [it for it, inside in zip(ls.items, segment_flags(list(ls.items), held_out)) if inside]
    return [it for it in items if count is None or len(it.instances) == count], cols


def teacher_samples(config_path: str, spec: SkeletonSpec, net: PoseNet, aug: AugmentConfig, seed: int,
                    every: int, most_per_clip: int, log: Callable[[str], None],
                    progress: Callable[[int, int], None] | None = None) -> LabelledSamples:
    from posetracker.train.clips import list_clips, split_clips
    from posetracker.train.config import load_config
    from posetracker.train.features import iter_frames
    from posetracker.train.clip_labels import cached_clip_labels
    from posetracker.train.prepare import make_teacher, selection_for

    cfg = load_config(config_path)
    clips, _ = split_clips(list_clips(cfg.data_path, cfg.min_frames), list(cfg.val),
                           None if cfg.train is None else list(cfg.train), list(cfg.exclude))
    teacher = make_teacher(cfg)
    chosen: list[tuple[str, object, list[int]]] = []
    for rel in clips:
        path = cfg.data_path / rel
        sel = selection_for(path, cfg)
        labels = cached_clip_labels(teacher, path, spec, sel.key(), lambda: iter_frames(path, sel))
        rows = [t for t in range(0, labels.num_frames, every) if labels.present()[t].any()][:most_per_clip]
        chosen.append((rel, (path, sel, labels), rows))
    n = sum(len(r) for _, _, r in chosen)
    most = max(int(c[1][2].present().sum(1).max()) for c in chosen)
    log(f"teacher samples: {n} frames from {len(chosen)} training clips (held out: {list(cfg.val)})")

    def pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for _, (path, sel, labels), rows in chosen:
            want = set(rows)
            for t, frame in enumerate(iter_frames(path, sel)):
                if t in want:
                    xy = np.where(labels.visible[t][..., None], labels.xy[t], np.nan)
                    present = np.isfinite(xy).all(-1).any(-1)
                    yield frame.image, xy[present]

    key = combine_key("teacher-samples-v1", [file_hash(c[1][0]) for c in chosen], teacher.name, every, most_per_clip,
                      seed)
    return warp_and_extract(pairs(), n, most, key, spec, net, aug, seed, progress)

"""Training windows: T consecutive frames of cached features + the targets the heads should output.

One :class:`ClipEntry` pairs a clip variant's cached first features with its
(augmented, smoothed) labels; :class:`WindowDataset` cuts every entry into
windows of ``window`` frames (hop ``hop``) and encodes each frame's labels
with ``posetracker.decoding.encode.encode_targets`` (the decoder's own
inverse). Labels are in source pixels; the letterbox
scale of each frame takes them to input pixels.

A sample (all float32 tensors):

- ``feats`` (T, C, h, w): first features
- ``heatmaps`` (T, K, h, w), ``offsets`` (T, 2K, h, w), ``vectors`` (T, 2E, h, w),
  ``depth`` (T, 1+E, h, w), and a ``<name>_weight`` of the same shape each.

:func:`sample_temporal_mode` draws how the temporal block runs on a batch:
bidirectional over the window (file mode) or causal with a random
look-ahead (live mode), so that one set of weights serves both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils.data import Dataset

from posetracker.decoding.encode import encode_targets
from posetracker.skeletons import SkeletonSpec
from posetracker.train.clip_labels import ClipLabels
from posetracker.train.features import ClipFeatures

TARGET_KEYS = ("heatmaps", "offsets", "vectors", "depth")


@dataclass
class ClipEntry:
    """A clip variant ready for training: features (T frames) and labels for the same T frames."""

    name: str
    feats: ClipFeatures
    labels: ClipLabels

    def __post_init__(self) -> None:
        if len(self.feats) != self.labels.num_frames:
            raise ValueError(f"{self.name}: {len(self.feats)} feature frames but {self.labels.num_frames} labelled frames")


@dataclass(frozen=True)
class EncodeOptions:
    """Arguments of ``encode_targets`` used for training."""

    sigma: float = 1.0
    sigma_scale: float = 0.0
    radius: float = 2.0
    offset_radius: float = 1.5
    stride: int = 4
    cell_origin: str = "corner"  # "corner": MoveNet's heads (cell i spans [i, i+1)); "centre": encode_targets' own
    ignore_radius: float = 2.0  # cells around known-but-not-visible joints left out of the heatmap loss


def encode_frame(labels: ClipLabels, t: int, scale: float, spec: SkeletonSpec, out_size: tuple[int, int],
                 opts: EncodeOptions = EncodeOptions()) -> dict[str, np.ndarray]:
    """Targets of frame ``t`` (see ``encode_targets``); labels scaled from source to input pixels.

    ``cell_origin="corner"`` follows the pretrained MoveNet heads, measured on real clips: a joint at
    u cells peaks in cell floor(u) with offset u - floor(u) in [0, 1) (mean 0.5), while
    ``encode_targets`` peaks at round(u) with offset in [-0.5, 0.5]. Both decode to u, but training
    frozen heads towards the other convention would force a half-cell shift of every map. So the
    maps are drawn half a cell up-left and the offsets get the half cell back.
    """
    xy, vis, depth = labels.frame_people(t)
    shift = 0.5 * opts.stride if opts.cell_origin == "corner" else 0.0
    out = encode_targets(xy * scale - shift, spec, visible=vis, depth=depth, out_size=out_size, stride=opts.stride,
                         sigma=opts.sigma, sigma_scale=opts.sigma_scale,
                         radius=opts.radius, offset_radius=opts.offset_radius)
    if shift:
        out["offsets"] = np.where(out["offsets_weight"] > 0, out["offsets"] + 0.5, 0.0).astype(np.float32)
    _ignore_unsure_joints(out["heatmaps_weight"], (xy * scale - shift) / opts.stride, vis, opts.ignore_radius)
    return out


MAX_TRACKS = 4  # people per window with coordinate targets


def window_joints(entry: ClipEntry, start: int, window: int, stride: int, origin: tuple[int, int],
                  size: tuple[int, int], margin: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Coordinate targets of the window's best-labelled tracks (same track = same slot in every frame).

    Returns joints (T, M, K, 2) in cells of the (cropped) map and joints_ok (T, M, K) float: visible
    and at least ``margin`` cells inside the map.
    """
    lab = entry.labels
    sl = slice(start, start + window)
    xy = lab.xy[sl].astype(np.float64) * entry.feats.scales[sl, None, None, None] / stride - np.asarray(origin)
    inside = ((xy >= margin) & (xy <= np.asarray(size) - 1 - margin)).all(-1)
    ok = lab.visible[sl] & inside & np.isfinite(xy).all(-1)
    best = np.argsort(-ok.sum((0, 2)), kind="stable")[:MAX_TRACKS]
    k = xy.shape[2]
    joints = np.zeros((window, MAX_TRACKS, k, 2), np.float32)
    mask = np.zeros((window, MAX_TRACKS, k), np.float32)
    joints[:, :len(best)] = np.nan_to_num(xy[:, best])
    mask[:, :len(best)] = ok[:, best]
    return joints, mask


def _ignore_unsure_joints(weight: np.ndarray, u: np.ndarray, vis: np.ndarray, radius: float) -> None:
    """Zero the heatmap weight (K, h, w) around joints with a position but no visibility (P, K, 2 cells):
    the teacher is unsure there, so neither a peak nor background is taught."""
    if radius <= 0:
        return
    h, w = weight.shape[1:]
    yy, xx = np.mgrid[:h, :w]
    for p, j in zip(*np.nonzero(~vis & np.isfinite(u).all(-1))):
        weight[j][(xx - u[p, j, 0]) ** 2 + (yy - u[p, j, 1]) ** 2 <= radius**2] = 0.0


@dataclass
class WindowDataset(Dataset):
    """Windows of ``window`` consecutive frames over every entry, every ``hop`` frames."""

    entries: list[ClipEntry]
    spec: SkeletonSpec
    window: int = 8
    hop: int = 4
    opts: EncodeOptions = field(default_factory=EncodeOptions)
    crop: int | None = None  # cells: cut a crop x crop window around a person (even offsets), None = whole map
    jitter: bool = True  # random crop placement (False: centred on the first person, for validation)

    def __post_init__(self) -> None:
        self.index: list[tuple[int, int]] = []
        for e, entry in enumerate(self.entries):
            n = len(entry.feats)
            self.index += [(e, s) for s in range(0, n - self.window + 1, self.hop)]

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        e, start = self.index[i]
        entry = self.entries[e]
        feats = np.asarray(entry.feats.feats[start:start + self.window], np.float32)
        out_size = (int(feats.shape[-2]), int(feats.shape[-1]))
        frames = [encode_frame(entry.labels, t, float(entry.feats.scales[t]), self.spec, out_size, self.opts)
                  for t in range(start, start + self.window)]
        sample = {"feats": feats, **{k: np.stack([f[k] for f in frames]) for k in frames[0]}}
        y0 = x0 = 0
        if self.crop is not None and self.crop < min(out_size):
            y0, x0 = self._crop_origin(entry, start, out_size, i)
            sample = {k: v[..., y0:y0 + self.crop, x0:x0 + self.crop] for k, v in sample.items()}
        h, w = sample["feats"].shape[-2:]
        sample["joints"], sample["joints_ok"] = window_joints(entry, start, self.window, self.opts.stride,
                                                              (x0, y0), (w, h))
        return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sample.items()}

    def _crop_origin(self, entry: ClipEntry, start: int, out_size: tuple[int, int], i: int) -> tuple[int, int]:
        """Top-left cell (even) of the crop: around a person of the window's middle frame, else random."""
        rng = np.random.default_rng(None if self.jitter else i)
        t = start + self.window // 2
        xy, _, _ = entry.labels.frame_people(t)
        centre = np.array(out_size[::-1], np.float64) / 2
        if len(xy):
            pts = xy[int(rng.integers(len(xy)))] * entry.feats.scales[t] / self.opts.stride
            pts = pts[np.isfinite(pts).all(1)]
            centre = pts.mean(0) if len(pts) else centre
        if self.jitter:
            centre = centre + rng.uniform(-self.crop / 4, self.crop / 4, 2)
        h, w = out_size
        x0 = int(np.clip(centre[0] - self.crop / 2, 0, w - self.crop)) // 2 * 2
        y0 = int(np.clip(centre[1] - self.crop / 2, 0, h - self.crop)) // 2 * 2
        return y0, x0


SINGLE = -1  # temporal mode: every frame alone (a still image, ``TrackingSession.process_image``)


def sample_temporal_mode(rng: np.random.Generator, p_bidirectional: float = 0.5,
                         lookaheads: tuple[int, ...] = (0, 1, 2)) -> int | None:
    """None = bidirectional over the window; L >= 0 = causal with look-ahead L."""
    if rng.random() < p_bidirectional:
        return None
    return int(rng.choice(lookaheads))


def run_temporal(temporal: torch.nn.Module, feats: torch.Tensor, lookahead: int | None) -> torch.Tensor:
    """Target features (N, T, C, h, w) exactly as the session computes them.

    lookahead None: one bidirectional pass over the window (offline mode).
    lookahead L: live mode, frame by frame as ``CausalStream``: the forward state is carried,
    the backward GRU sees frames t..t+L (fewer at the end of the window, as ``flush`` does).
    lookahead SINGLE: each frame on its own (still images).
    """
    if lookahead is None:
        return temporal(feats)[0]
    if lookahead == SINGLE:
        n, t = feats.shape[:2]
        return temporal(feats.flatten(0, 1)[:, None])[0].reshape(feats.shape)
    outs, h = [], None
    for t in range(feats.shape[1]):
        target, h = temporal(feats[:, t:t + lookahead + 1], h, emit=1)
        outs.append(target)
    return torch.cat(outs, 1)

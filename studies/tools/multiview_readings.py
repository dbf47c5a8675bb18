"""The posetracker command line with the precision stage's readings of each crop changed (studies/metres.md,
"Test-time readings of the 2-D"); study code, not a product path.

    python studies/tools/multiview_readings.py --readings flip process VIDEO --calibration C --out OUT.json

--readings:
  one          the product (Thunder on the crop)
  flip         the crop and its mirror image, the points averaged where within 0.1 box sides (the product's
               ``CropRefiner(readings="flip")``)
  flip+scales  and crops of 1.05x and 1.5x the box (``readings="flip+scales"``)
  heads-flip   the crop and its mirror, the mirror's heads turned back (maps mirrored, left / right channels
               exchanged, x offsets mirrored) and averaged with the crop's before the one decode (heatmap and
               centre as probabilities, offsets and regressions as they are)
  384          the crop read at 384 x 384 instead of 256 x 256 (Thunder is fully convolutional: a 96 x 96 grid,
               its centre prior from the graph's formula, 1 / (distance to the middle + 1.8); torch, not ONNX)
  256+384      both, the points averaged where within 0.1 box sides
  blend        one reading, then each COCO-17 joint the confidence-weighted mean of the bottom-up network's and
               Thunder's points where they lie within 0.1 box sides (else Thunder's); confidences Thunder's
Everything else runs as ``posetracker`` does.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

import posetracker.refiners.crop as crop
from posetracker.model.thunder import FLIP, crop_around_box, decode_thunder, to_source

CHOICES = ("one", "flip", "flip+scales", "heads-flip", "blend", "384", "256+384")


def unmirror(heads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A mirrored crop's raw heads (G, G, C) each -> the heads of the crop itself: columns reversed, each joint's
    channels from its mirror joint, x offsets mirrored (a cell's x = (col + offset) / G and the crop's x maps to
    (S - 1) / S - x: offset -> 3/4 - offset, with G = S / 4), x regressions negated. Decoding them gives
    ``to_source(..., mirrored=True)`` of the mirrored crop's own decode (exactly where one person's centre stands
    out: the graph's centre prior, centred at G / 2, is half a cell off the mirror's middle, (G - 1) / 2)."""
    g = heads["heatmap"].shape[0]
    off = heads["offset"][:, ::-1].reshape(g, g, 17, 2)[:, :, FLIP].copy()
    off[..., 1] = 0.75 - off[..., 1]
    reg = heads["regress"][:, ::-1].reshape(g, g, 17, 2)[:, :, FLIP].copy()
    reg[..., 1] = -reg[..., 1]
    return {"centre": heads["centre"][:, ::-1], "heatmap": heads["heatmap"][:, ::-1][..., FLIP],
            "offset": off.reshape(g, g, 34), "regress": reg.reshape(g, g, 34)}


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def averaged_heads(a: dict[str, np.ndarray], mirrored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The crop's heads and its mirror's (turned back by :func:`unmirror`) averaged (module docstring)."""
    m = unmirror(mirrored)
    out = {k: 0.5 * (a[k] + m[k]) for k in ("offset", "regress")}
    out.update({k: _logit(0.5 * (_sigmoid(a[k]) + _sigmoid(m[k]))) for k in ("centre", "heatmap")})
    return out


def _refine_heads_flip(self, xy, confidence, rgb, boxes, chosen, keep_below=0.0) -> None:
    """CropRefiner._refine with the heads of the crop and its mirror averaged before the decode."""
    t0 = time.perf_counter()
    size = self.net.input_size
    cuts = [crop_around_box(rgb, boxes[p], size=size, expand=self.expand) for p in chosen]
    images = [c for c, _ in cuts] + [np.ascontiguousarray(c[:, ::-1]) for c, _ in cuts]
    batch = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float()  # (2P, 3, S, S)
    runner = self.__dict__.get("_runner", self.net)
    heads = {k: v.permute(0, 2, 3, 1).numpy() for k, v in runner(batch).items()}  # (2P, G, G, C) each
    weight, n = self.centre_weight.numpy(), len(chosen)
    reads = []
    for i in range(n):
        h = averaged_heads({k: v[i] for k, v in heads.items()}, {k: v[n + i] for k, v in heads.items()})
        reads.append(to_source(decode_thunder(h["centre"], h["heatmap"], h["regress"], h["offset"], weight),
                               cuts[i][1], size))
    _take(self, xy, confidence, chosen, reads, keep_below, t0)


def _take(self, xy, confidence, chosen, reads, keep_below, t0) -> None:
    """CropRefiner._refine's last step: each chosen person's crop reading (K', 3) of ``reads`` replaces its joints
    where it agrees with them (``xy`` (P, K, 2), ``confidence`` (P, K) changed in place)."""
    self.last_disagreed = 0
    for p, kp in zip(chosen, reads):
        if not self.agrees(xy[p, self.joints], confidence[p, self.joints], kp[:, :2], kp[:, 2]):
            self.last_disagreed += 1
            continue
        take = ~((kp[:, 2] < keep_below) & (confidence[p, self.joints] > kp[:, 2]))
        xy[p, self.joints[take]] = kp[take, :2]
        confidence[p, self.joints[take]] = kp[take, 2]
    self.ms_per_crop = 0.8 * self.ms_per_crop + 0.2 * (time.perf_counter() - t0) * 1000 / len(chosen)


def centre_prior(grid: int) -> np.ndarray:
    """(G, G) Thunder's centre prior for a G x G grid (model.thunder step 1; equals the graph's Const at 64)."""
    i = np.arange(grid, dtype=np.float32)
    return (1 / (np.sqrt((i[:, None] - grid / 2) ** 2 + (i[None, :] - grid / 2) ** 2) + 1.8)).astype(np.float32)


def _refine_sizes(self, xy, confidence, rgb, boxes, chosen, keep_below=0.0, sizes=(384,)) -> None:
    """CropRefiner._refine with each crop read at the input ``sizes`` (the first's reading averaged with the
    others' within ``apart`` box sides)."""
    t0 = time.perf_counter()
    reads = []
    for size in sizes:
        cuts = [crop_around_box(rgb, boxes[p], size=size, expand=self.expand) for p in chosen]
        batch = torch.from_numpy(np.stack([c for c, _ in cuts])).permute(0, 3, 1, 2).float()
        runner = self.__dict__.get("_runner", self.net) if size == self.net.input_size else self.net
        heads = {k: v.permute(0, 2, 3, 1).numpy() for k, v in runner(batch).items()}
        weight = centre_prior(size // 4)
        reads.append([to_source(decode_thunder(heads["centre"][i], heads["heatmap"][i], heads["regress"][i],
                                               heads["offset"][i], weight), cuts[i][1], size) for i in range(len(chosen))])
    merged = [crop._agreeing_mean(reads[0][i], [r[i] for r in reads[1:]], self.apart * crop._side(boxes[p]))
              for i, p in enumerate(chosen)]
    _take(self, xy, confidence, chosen, merged, keep_below, t0)


_refine_frame = crop.CropRefiner.refine_frame


def _blend_frame(self, xy, confidence, rgb, budget_ms=None):
    """CropRefiner.refine_frame, then offline each COCO-17 joint blended with the bottom-up reading (docstring)."""
    new_xy, new_conf = _refine_frame(self, xy, confidence, rgb, budget_ms)
    if budget_ms is not None:
        return new_xy, new_conf
    boxes, j = self.boxes(xy, confidence), self.joints
    for p in range(len(xy)):
        if not np.isfinite(boxes[p]).all():
            continue
        a, b, ca, cb = xy[p, j], new_xy[p, j], confidence[p, j], new_conf[p, j]
        near = (np.linalg.norm(a - b, axis=1) <= self.apart * crop._side(boxes[p])) & np.isfinite(a).all(1)
        w = (ca / np.maximum(ca + cb, 1e-6))[:, None]
        new_xy[p, j] = np.where(near[:, None], w * a + (1 - w) * b, b)
    return new_xy, new_conf


def install(readings: str) -> None:
    """Make every CropRefiner built from now on read as ``readings`` says."""
    if readings not in CHOICES:
        raise SystemExit(f"--readings: one of {', '.join(CHOICES)}")
    init = crop.CropRefiner.__init__

    def patched(self, *a, **k):
        k.setdefault("readings", "flip" if readings == "heads-flip" else readings if readings in crop.READINGS else "one")
        init(self, *a, **k)

    crop.CropRefiner.__init__ = patched
    if readings == "heads-flip":
        crop.CropRefiner._refine = _refine_heads_flip
    if readings == "blend":
        crop.CropRefiner.refine_frame = _blend_frame
    if readings in ("384", "256+384"):
        sizes = tuple(int(x) for x in readings.split("+"))
        crop.CropRefiner._refine = lambda self, *a, **k: _refine_sizes(self, *a, **k, sizes=sizes)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--readings":
        raise SystemExit(__doc__)
    install(argv[1])
    from posetracker.cli import main as cli

    return cli(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

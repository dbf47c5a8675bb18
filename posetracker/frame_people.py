"""The people of one frame, from the network's outputs to an untracked PoseFrame: the per-frame part of a
``TrackingSession`` (``posetracker.session``), as the mixin :class:`FramePeople` it inherits.

    outputs of one frame -> [the whole frame decoded: ``TrackingSession._decode``, maps- and people-stage refiners]
          -> [still images: the same for overlapping tiles of the frame, their new (small) people added]
          -> [top-down skeletons: each person read again from a crop of the full-resolution frame]
          -> [refiners, frame stage: the precision stage on crops of the source frame]
          -> one skeleton per person, its probability -> DepthEstimator.estimate: joint depths and world

The tiles and the top-down crops are read as stills (:meth:`FramePeople._still_people`: the network without
temporal state, one batch) or by the skeleton's own crop model. This module imports nothing of
``posetracker.session``: the mixin uses the session's attributes (``net``, ``spec``, ``config``, ``refiners``,
``decoder`` through ``_decode``, ``depth``, ``sigmas``, ``crop_model``, ``crop_turns``, ``times``, ``_bottom_up``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from posetracker.cpu_threads import torch_threads as _threads
from posetracker.decoding import DecodedPeople
from posetracker.decoding.duplicates import distinct_people
from posetracker.decoding.person_scores import calibrated, pose_scores
from posetracker.decoding.tiles import add_tile_people, shift_people
from posetracker.decoding.top_down import read_crops
from posetracker.model.preprocess import INPUT_SIZE, letterbox, to_tensor
from posetracker.stages import Pending
from posetracker.types import PoseFrame


class FramePeople:
    """One frame's people (:meth:`_people`) and the still reading of tiles and crops, for ``TrackingSession``."""

    def _people(self, out: dict[str, torch.Tensor], meta: Pending, budget_ms: float | None = None,
                tracked: bool = True) -> PoseFrame:
        """Outputs of one frame ((1, 1, C, h, w) each) -> untracked PoseFrame in source pixels.
        budget_ms: time for the frame stage (live); None: it refines every person (offline, still images).
        tracked: the frame goes on to ``TrackingSession._track`` (it keeps the bottom-up joints for linking)."""
        t0 = time.perf_counter()
        people = shift_people(self._decode({k: v[:, 0] for k, v in out.items()}, meta.image), meta.box.scale)
        if meta.frame is not None and meta.tiles > 1:
            people = add_tile_people(people, meta.frame, meta.tiles, self._read_tile, meta.box.scale, self.sigmas,
                                     self.config.people.max_people)
        if meta.frame is not None and self.spec.top_down:
            crop_px = self.spec.top_down["crop_px"]
            read = people
            people = read_crops(read, meta.frame, self.spec.root, crop_px, self._crop_people,
                                keep=self.config.people.known_count, turns=self.crop_turns)
            if tracked:  # a known number of animals, one not read: searched where the last frame had it
                missing = with_missing(people, getattr(self, "_last_roots", None), self.config.people.known_count,
                                       self.spec.root, crop_px)
                if missing.num_people > people.num_people:
                    people = read_crops(DecodedPeople.concat([read, missing.take(np.arange(people.num_people,
                                                                                           missing.num_people))]),
                                        meta.frame, self.spec.root, crop_px, self._crop_people,
                                        keep=self.config.people.known_count, turns=self.crop_turns)
                    people = people.take(np.flatnonzero(people.confidence.max(axis=1, initial=0.0) > 0))
        xy = people_xy = people.keypoints.astype(np.float64)
        confidence = before = people.confidence
        if meta.frame is not None and self.refiners.needs_frame:
            with _threads(self.config.network.threads):
                xy, confidence = self.refiners.refine_frame(xy, confidence, meta.frame, budget_ms)
        # the final pose's score; then one skeleton per person: two that the refiners put on one body are one
        final = replace(people, keypoints=xy, confidence=confidence, scores=pose_scores(confidence, self.spec.root))
        keep = distinct_people(final, self.sigmas)
        probability = calibrated(final.scores[keep], self.spec.score_calibration)
        # a still (or untracked frames): the unlikely people go; video keeps them for the tracker, which judges
        # a person over time (a clearly visible person the precision stage reads badly in one frame stays)
        if self.spec.score_calibration is not None and not (tracked and self.config.people.track):
            keep, probability = keep[probability >= self.config.people.min_person_probability], \
                probability[probability >= self.config.people.min_person_probability]
        people, xy, confidence = final.take(keep), xy[keep], confidence[keep]
        if self.spec.top_down and tracked:
            self._last_roots = people.keypoints[:, self.spec.root].astype(np.float64)  # (P, 2) px: with_missing
        if meta.frame is not None and self.refiners.needs_frame and tracked and self.config.people.track:
            # (P, K, 2) px, (P, K): the bottom-up joints, what _track links by
            self._bottom_up[meta.index] = (people_xy[keep], before[keep])
        w, h = meta.box.source_size
        read_xy = people_xy[keep] if meta.frame is not None and self.refiners.needs_frame else None
        depth, world = self.depth.estimate(xy, confidence, people.depth_reads, (w, h), read_xy)
        pose = PoseFrame(
            index=meta.index, timestamp=meta.timestamp,
            keypoints=np.concatenate([xy, depth[..., None]], -1).astype(np.float32),
            confidence=confidence.astype(np.float32), scores=probability,
            track_ids=np.full(people.num_people, -1, np.int64), image_size=(w, h),
            world=world,
        )
        self.times.decode_ms = (time.perf_counter() - t0) * 1000
        return pose

    def _still_people(self, images: np.ndarray) -> list[DecodedPeople]:
        """(N, h, w, 3) uint8 network inputs -> each one's people in input pixels, read as stills (no temporal
        state; one batch): the tiles' and the top-down crops' reading."""
        with torch.inference_mode(), _threads(self.config.network.threads):
            x = to_tensor(images)
            out = self.net(x[:, None])
            return [self._decode({k: v[i : i + 1, 0] for k, v in out.items()}, x[i : i + 1] if self.refiners.needs_image
                                 else None) for i in range(len(x))]

    def _crop_people(self, images: np.ndarray) -> list[DecodedPeople]:
        """(N, h, w, 3) uint8 top-down crops -> each one's people in input pixels: the crop model's reading
        when the skeleton names one, else this network's (:meth:`_still_people`)."""
        if self.crop_model is None:
            return self._still_people(images)
        with _threads(self.config.network.threads):
            return self.crop_model(images)

    def _read_tile(self, rgb: np.ndarray) -> tuple[DecodedPeople, float]:
        img, box = letterbox(rgb, INPUT_SIZE, fit=self.config.network.fit_input and not self.refiners.needs_image)
        return self._still_people(img[None])[0], box.scale


def with_missing(people: DecodedPeople, last_roots: np.ndarray | None, known_count: int | None, root: int,
                 crop_px: float) -> DecodedPeople:
    """``people`` (P, K) of a top-down frame plus, where a known number of animals has fewer readings, a place
    holder for each of the last frame's animals (``last_roots`` (Q, 2) px) with no reading within a quarter crop
    of it: all joints at its last root, confidence 0, so ``read_crops`` reads a crop there (an animal the
    whole-frame decoder missed, e.g. a fly walking fast); a place holder no crop finds an animal in keeps
    confidence 0 and is dropped by the caller."""
    if not known_count or last_roots is None or people.num_people >= known_count or not len(last_roots):
        return people
    now = people.keypoints[:, root].astype(np.float64)  # (P, 2)
    far = [r for r in last_roots if np.isfinite(r).all()
           and (not len(now) or np.nanmin(np.linalg.norm(now - r, axis=1)) > crop_px / 4)]
    if not far:
        return people
    k = people.confidence.shape[1]
    spots = np.repeat(np.asarray(far, np.float32)[:, None, :], k, axis=1)  # (M, K, 2)
    zero = np.zeros((len(far), k), np.float32)
    return DecodedPeople.concat([people, DecodedPeople(spots, zero, zero[:, 0], np.full((len(far), k), np.nan),
                                                       spots.copy())])

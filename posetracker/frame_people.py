"""The people of one frame, from the network's outputs to an untracked PoseFrame: the per-frame part of a
``TrackingSession`` (``posetracker.session``), as the mixin :class:`FramePeople` it inherits.

    outputs of one frame -> [the whole frame decoded: ``TrackingSession._decode``, maps- and people-stage refiners]
          -> [the second looks, ``posetracker.second_look.SECOND_LOOKS`` in order: tiles (new small people),
              animal crops (top-down skeletons), precision crops (the refiners' frame stage)]
          -> one skeleton per person, its probability -> DepthEstimator.estimate: joint depths and world

The tiles and the top-down crops are read as stills (:meth:`FramePeople._still_people`: the network without
temporal state, one batch) or by the skeleton's own crop model. This module imports nothing of
``posetracker.session``: the mixin uses the session's attributes (``net``, ``spec``, ``config``, ``refiners``,
``decoder`` through ``_decode``, ``depth``, ``sigmas``, ``crop_model``, ``crop_reading``, ``times``, ``_bottom_up``).
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
from posetracker.decoding.tiles import shift_people
from posetracker.model.preprocess import INPUT_SIZE, letterbox, to_tensor
from posetracker.second_look import SECOND_LOOKS
from posetracker.stages import Pending
from posetracker.types import PoseFrame


class FramePeople:
    """One frame's people (:meth:`_people`) and the still reading of tiles and crops, for ``TrackingSession``."""

    def _people(self, out: dict[str, torch.Tensor], meta: Pending, budget_ms: float | None = None,
                tracked: bool = True, placed: DecodedPeople | None = None) -> PoseFrame:
        """Outputs of one frame ((1, 1, C, h, w) each) -> untracked PoseFrame in source pixels.
        budget_ms: time for the frame stage (live); None: it refines every person (offline, still images).
        tracked: the frame goes on to ``TrackingSession._track`` (it keeps the bottom-up joints for linking).
        placed: the frame's animals already read from crops placed where the last frame had them (source px;
        ``posetracker.tracked_crops``): ``out`` is not decoded and the animal crops are not read again."""
        t0 = time.perf_counter()
        people = placed if placed is not None else \
            shift_people(self._decode({k: v[:, 0] for k, v in out.items()}, meta.image), meta.box.scale)
        read = None  # the people before the look that refines joints only: the readings the tracker links by
        for look in SECOND_LOOKS.values():  # tiles, animal crops, precision crops (posetracker.second_look)
            if look.wanted(self, meta) and not (placed is not None and look.name == "animal_crops"):
                read = people if look.keeps_input else read
                people = look(self, people, meta, budget_ms, tracked)
        xy, confidence = people.keypoints.astype(np.float64), people.confidence
        people_xy, before = (xy, confidence) if read is None else (read.keypoints.astype(np.float64), read.confidence)
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
            self._last_people = people  # (P, K) source px: where the next frame's crops may go (tracked_crops)
        if read is not None and tracked and self.config.people.track:
            # (P, K, 2) px, (P, K): the bottom-up joints, what _track links by
            self._bottom_up[meta.index] = (people_xy[keep], before[keep])
        w, h = meta.box.source_size
        read_xy = people_xy[keep] if read is not None else None
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

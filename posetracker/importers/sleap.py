"""A SLEAP project (``.slp``, ``.pkg.slp``) -> :class:`ImportedLabels`, read with sleap-io.

User-labelled instances (SLEAP's ``Instance``) are the ground truth; model-predicted ones
(``PredictedInstance``) are taken only with ``include_predicted`` (pseudo-labels, written with their
``score``; a prediction a user instance was corrected from is left out). Track names go to
``track``. A visible point is v=2, a missing or hidden one [0, 0, 0] (SLEAP has no occluded flag).

Frames of a video are ``video`` + ``frame_idx``. A video is looked for where the project says, then
(a relative path) beside the .slp and in the working folder, then by its file name beside the .slp
(projects often carry the labeller's absolute paths). Image-list videos give one ``file`` per image.
Frames embedded in a ``.pkg.slp`` are written as PNGs into ``frames_dir``.
"""

from __future__ import annotations

from pathlib import Path

from posetracker.importers.common import ImportedLabels, LabelImportError, image_size, keypoint_rows, slug


def _sleap_io():
    try:
        import sleap_io
    except ImportError:
        raise LabelImportError("reading SLEAP .slp files needs sleap-io: pip install 'posetracker[animals]' "
                               "(or pip install sleap-io)") from None
    return sleap_io


def _find(name: str, slp: Path) -> Path | None:
    """The file a project's (video or image) path means, or None: the path itself (a relative one beside
    the .slp, then in the working folder), then its last 3, 2, 1 components beside the .slp."""
    p = Path(str(name).replace("\\", "/"))
    cands = [p] if p.is_absolute() else [slp.parent / p, Path.cwd() / p]
    parts = [q for q in p.parts if q not in ("/", "..", ".") and not q.endswith(":")]
    cands += [slp.parent.joinpath(*parts[-k:]) for k in (3, 2, 1) if len(parts) >= k]
    return next((c.resolve() for c in cands if c.is_file()), None)


def _video_size(path: Path, video) -> tuple[int, int]:
    import cv2

    cap = cv2.VideoCapture(str(path))
    try:
        w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
    finally:
        cap.release()
    if w > 0 and h > 0:
        return w, h
    shape = (getattr(video, "backend_metadata", None) or {}).get("shape") or video.shape
    if not shape:
        raise LabelImportError(f"cannot read the frame size of video {path}")
    return int(shape[2]), int(shape[1])


class _Frames:
    """Where the frames of each video of the project are: file names, sizes, embedded frames written out."""

    def __init__(self, slp: Path, frames_dir: Path | None) -> None:
        self.slp, self.frames_dir = slp, frames_dir
        self._videos: dict[int, tuple[str, object]] = {}

    def entry(self, vi: int, video, frame_idx: int) -> dict:
        """The schema fields ``file`` (``video``, ``frame_idx``), ``width``, ``height`` of one frame."""
        backend_meta = getattr(video, "backend_metadata", None) or {}
        name = video.filename
        if isinstance(name, (list, tuple)):  # an image-list video
            if not 0 <= frame_idx < len(name):
                raise LabelImportError(f"{self.slp}: frame {frame_idx} of an image list of {len(name)} images")
            img = _find(name[frame_idx], self.slp)
            if img is None:
                raise LabelImportError(f"image {name[frame_idx]} of {self.slp.name} not found "
                                       f"(also looked for it beside the .slp)")
            w, h = image_size(img)
            return {"file": str(img), "width": w, "height": h}
        if vi not in self._videos:
            embedded = backend_meta.get("has_embedded_images") or getattr(video.backend, "has_embedded_images", False)
            path = _find(name, self.slp)
            if embedded or path == self.slp.resolve():
                self._videos[vi] = ("embedded", None)
            elif path is None:
                raise LabelImportError(f"video {name} of {self.slp.name} not found (also looked for "
                                       f"{Path(str(name).replace(chr(92), '/')).name} beside the .slp)")
            else:
                self._videos[vi] = (str(path), _video_size(path, video))
        path, size = self._videos[vi]
        if size is None:
            return self._embedded(vi, video, frame_idx)
        w, h = size
        return {"file": path, "video": path, "frame_idx": int(frame_idx), "width": w, "height": h}

    def _embedded(self, vi: int, video, frame_idx: int) -> dict:
        import cv2
        import numpy as np

        if self.frames_dir is None:
            raise LabelImportError(f"{self.slp.name} holds embedded frames: give a folder to write them to")
        try:
            img = np.asarray(video[frame_idx])
        except Exception as exc:  # noqa: BLE001 - any decoding failure of sleap-io's backends
            raise LabelImportError(f"{self.slp.name}: cannot read embedded frame {frame_idx} of video {vi}: {exc}") from None
        if img.ndim == 3 and img.shape[2] == 3:
            img = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
        src = getattr(video, "source_video", None)
        stem = slug(Path(str(src.filename)).stem) if src is not None and isinstance(src.filename, str) else "video"
        out = self.frames_dir / f"{vi}_{stem}" / f"{frame_idx:06d}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        if not cv2.imwrite(str(out), img):
            raise LabelImportError(f"cannot write {out}")
        return {"file": str(out.resolve()), "width": int(img.shape[1]), "height": int(img.shape[0])}


def read_sleap(path: Path, include_predicted: bool = False, frames_dir: Path | None = None) -> ImportedLabels:
    sio = _sleap_io()
    path = path.resolve()
    try:
        labels = sio.load_slp(str(path))
    except Exception as exc:  # noqa: BLE001 - h5py / sleap-io raise many kinds on a damaged or foreign file
        raise LabelImportError(f"cannot read {path} as a SLEAP project: {type(exc).__name__}: {exc}") from None
    predicted_cls = sio.PredictedInstance
    chosen: list[tuple[object, list]] = []
    n_pred = n_user = 0
    for lf in labels.labeled_frames:
        user = [i for i in lf.instances if not isinstance(i, predicted_cls)]
        pred = [i for i in lf.instances if isinstance(i, predicted_cls)]
        n_user, n_pred = n_user + len(user), n_pred + len(pred)
        take = list(user)
        if include_predicted:
            corrected = {id(i.from_predicted) for i in user if getattr(i, "from_predicted", None) is not None}
            take += [i for i in pred if id(i) not in corrected]
        if take:
            chosen.append((lf, take))
    if not chosen:
        if n_pred and not include_predicted:
            raise LabelImportError(
                f"{path.name}: no user-labelled instances (it holds {n_pred} predicted instances: model output, "
                f"not ground truth; pass --include-predicted to import them as pseudo-labels)")
        raise LabelImportError(f"{path.name}: no labelled instances")
    # one skeleton: the one most instances use
    counts: dict[int, tuple[int, object]] = {}
    for _, take in chosen:
        for inst in take:
            n, _ = counts.get(id(inst.skeleton), (0, inst.skeleton))
            counts[id(inst.skeleton)] = (n + 1, inst.skeleton)
    skeleton = max(counts.values(), key=lambda c: c[0])[1]
    names = [str(n) for n in skeleton.node_names]
    edges = [(int(a), int(b)) for a, b in skeleton.edge_inds]
    warnings: list[str] = []
    if len(counts) > 1:
        warnings.append(f"the project uses {len(counts)} skeletons; only instances of the most used one "
                        f"({len(names)} nodes: {names[:4]}...) were imported")
    video_index = {id(v): i for i, v in enumerate(labels.videos)}
    frames = _Frames(path, frames_dir)
    merged: dict[tuple[int, int], dict] = {}
    n_pred_taken = 0
    for lf, take in chosen:
        vi = video_index.get(id(lf.video), len(video_index))
        if getattr(lf.video, "is_cropped", False):
            warnings.append(f"video {vi} is a crop of its source video: points are in the crop's pixels")
        insts = []
        for inst in take:
            if inst.skeleton is not skeleton:
                continue
            kp = keypoint_rows(inst.numpy())
            if not any(v for _, _, v in kp):
                continue
            row = {"keypoints": kp, "bbox": None, "category": "animal"}
            if inst.track is not None:
                row["track"] = str(inst.track.name)
            if isinstance(inst, predicted_cls):
                row["score"] = float(inst.score)
                n_pred_taken += 1
            insts.append(row)
        if not insts:
            continue
        key = (vi, int(lf.frame_idx))
        if key not in merged:
            merged[key] = {**frames.entry(vi, lf.video, int(lf.frame_idx)), "instances": []}
        merged[key]["instances"] += insts
    if not merged:
        raise LabelImportError(f"{path.name}: no instance with a labelled point")
    images = [merged[k] for k in sorted(merged)]
    name = path.name.removesuffix(".slp").removesuffix(".pkg")
    what = "user-labelled (hand-labelled/proofread) instances"
    if n_pred_taken:
        what += " and PREDICTED instances (model output, NOT ground truth; they have a 'score')"
    return ImportedLabels(
        keypoint_names=names, edges=edges, images=images, source=path, name=slug(name),
        visibility_note=f"SLEAP {what}; visible -> v=2, missing -> v=0; video frames by frame_idx (0-based)",
        predicted=n_pred_taken > 0, warnings=sorted(set(warnings), key=warnings.index),
    )

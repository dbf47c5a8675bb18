"""Small real videos the tests cut from the bundled sample clip (a dancer, 576 x 576, 30 fps)."""

from __future__ import annotations

from pathlib import Path

import av

from conftest import REPO

SAMPLE = REPO / "assets" / "sample_dance.mp4"


def short_clip(path: Path, frames: int = 10, start: int = 0, tags: dict[str, str] | None = None) -> Path:
    """The sample clip's frames start..start+frames, re-encoded to ``path`` (MPEG-4); ``tags``: container
    metadata written with it (e.g. a QuickTime focal-length tag)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(SAMPLE)) as src:
        images = [f.to_ndarray(format="rgb24") for _, f in zip(range(start + frames), src.decode(video=0))][start:]
    options = {"movflags": "use_metadata_tags"} if tags else {}
    with av.open(str(path), "w", options=options) as out:
        out.metadata.update(tags or {})
        st = out.add_stream("mpeg4", rate=30)
        st.height, st.width = images[0].shape[:2]
        st.pix_fmt = "yuv420p"
        for im in images:
            out.mux(st.encode(av.VideoFrame.from_ndarray(im, format="rgb24")))
        out.mux(st.encode())
    return path

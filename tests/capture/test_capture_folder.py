"""ImageFolderSource: natural order, bad files, empty / missing folders."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from posetracker.capture import (
    CaptureError,
    CorruptVideoError,
    ImageFolderSource,
    SourceNotFoundError,
    UnreadableImageError,
    open_source,
)
from posetracker.capture.image_folder import natural_key


def write_image(path: Path, value: int, size: tuple[int, int] = (20, 10)) -> Path:
    """A (h, w) image whose red channel is ``value`` (written as BGR by OpenCV)."""
    w, h = size
    bgr = np.zeros((h, w, 3), np.uint8)
    bgr[..., 2] = value  # red
    bgr[..., 0] = 7  # a little blue
    assert cv2.imwrite(str(path), bgr)
    return path


@pytest.fixture
def numbered(tmp_path: Path) -> Path:
    """frame1.png .. frame12.png (lexical order would put frame10 first)."""
    for i in range(1, 13):
        write_image(tmp_path / f"frame{i}.png", value=i * 10)
    return tmp_path


def test_natural_sort_key() -> None:
    names = ["img10.png", "img2.png", "IMG1.png", "img1b.png", "a.png"]
    assert sorted(names, key=natural_key) == ["a.png", "IMG1.png", "img1b.png", "img2.png", "img10.png"]


def test_frames_in_natural_order_with_timestamps(numbered: Path) -> None:
    with ImageFolderSource(numbered, fps=10.0) as src:
        assert src.frame_count == 12 and src.fps == 10.0 and src.size == (20, 10)
        assert not src.is_live and src.seekable and src.name == numbered.name
        assert [p.name for p in src.files][:3] == ["frame1.png", "frame2.png", "frame3.png"]
        frames = list(src)
    assert [f.index for f in frames] == list(range(12))
    assert [int(f.image[0, 0, 0]) for f in frames] == [i * 10 for i in range(1, 13)]  # RGB: red first
    assert all(int(f.image[0, 0, 2]) == 7 for f in frames)
    np.testing.assert_allclose([f.timestamp for f in frames], np.arange(12) / 10.0)


def test_seek(numbered: Path) -> None:
    with ImageFolderSource(numbered) as src:
        src.seek(9)
        frame = src.read()
        assert frame is not None and frame.index == 9 and int(frame.image[0, 0, 0]) == 100
        assert frame.timestamp == pytest.approx(9 / 30.0)
        with pytest.raises(IndexError):
            src.seek(12)


def test_only_images_and_no_hidden_files(tmp_path: Path) -> None:
    write_image(tmp_path / "b.JPG", 50)
    write_image(tmp_path / "a.bmp", 60)
    write_image(tmp_path / "c.webp", 70)
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "._a.bmp").write_bytes(b"\x00\x05\x16\x07 AppleDouble")
    (tmp_path / "sub.png").mkdir()
    with ImageFolderSource(tmp_path) as src:
        assert [p.name for p in src.files] == ["a.bmp", "b.JPG", "c.webp"]
        assert len(list(src)) == 3


def test_images_of_different_sizes_and_kinds(tmp_path: Path) -> None:
    write_image(tmp_path / "0.png", 10, size=(20, 10))
    write_image(tmp_path / "1.tif", 20, size=(30, 16))
    assert cv2.imwrite(str(tmp_path / "2.png"), np.full((8, 8), 200, np.uint8))  # grey
    assert cv2.imwrite(str(tmp_path / "3.png"), np.full((8, 8, 4), 255, np.uint8))  # BGRA
    assert cv2.imwrite(str(tmp_path / "4.png"), np.full((8, 8, 3), 65535, np.uint16))  # 16-bit
    with ImageFolderSource(tmp_path) as src:
        assert src.size == (20, 10)
        shapes = [f.image.shape for f in src]
    assert shapes == [(10, 20, 3), (16, 30, 3), (8, 8, 3), (8, 8, 3), (8, 8, 3)]


def test_unreadable_image_names_the_file_and_reading_continues(numbered: Path) -> None:
    (numbered / "frame5.png").write_bytes(b"\x89PNG\r\n\x1a\n this is not really a png")
    with ImageFolderSource(numbered) as src:
        got = []
        with pytest.raises(UnreadableImageError, match="frame5.png") as info:
            while (frame := src.read()) is not None:
                got.append(frame.index)
        assert got == [0, 1, 2, 3]
        err = info.value
        assert isinstance(err, CorruptVideoError)
        assert err.image_path.name == "frame5.png" and err.index == 4 and err.last_good_index == 3
        rest = list(src)  # the source skips the bad file and goes on
        assert [f.index for f in rest] == list(range(5, 12))


def test_iterating_skips_an_unreadable_image_and_says_which(numbered: Path) -> None:
    (numbered / "frame5.png").write_bytes(b"\x89PNG\r\n\x1a\n this is not really a png")
    with ImageFolderSource(numbered) as src:
        got = [f.index for f in src]
        assert got == [0, 1, 2, 3] + list(range(5, 12))
        assert len(src.skipped) == 1 and "frame5.png" in src.skipped[0]


def test_empty_missing_and_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="No images"):
        ImageFolderSource(tmp_path)
    (tmp_path / "readme.txt").write_text("no images here")
    with pytest.raises(SourceNotFoundError, match="No images"):
        ImageFolderSource(tmp_path)
    with pytest.raises(SourceNotFoundError, match="missing"):
        ImageFolderSource(tmp_path / "missing")
    with pytest.raises(SourceNotFoundError, match="not a folder"):
        ImageFolderSource(tmp_path / "readme.txt")
    with pytest.raises(ValueError):
        ImageFolderSource(tmp_path, fps=0)


def test_close(numbered: Path) -> None:
    src = ImageFolderSource(numbered)
    src.close()
    src.close()
    with pytest.raises(CaptureError, match="closed"):
        src.read()


def test_open_source_picks_image_folder(numbered: Path) -> None:
    with open_source(str(numbered)) as src:
        assert isinstance(src, ImageFolderSource) and src.frame_count == 12

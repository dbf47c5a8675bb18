"""Where the weights and the sample clip are found: $POSETRACKER_<NAME>, the source checkout, the installed copy."""

from pathlib import Path

from posetracker.resources import CHECKOUT, data_dir, installed_share, sample_clip
from posetracker.weights_file import MODELS_DIR


def folders(root: Path, *names: str) -> Path:
    for name in names:
        (root / name).mkdir(parents=True)
    return root


def test_lookup_order_env_then_checkout_then_installed(tmp_path):
    checkout = folders(tmp_path / "repo", "models")
    (checkout / "pyproject.toml").write_text("")
    share = folders(tmp_path / "prefix" / "share" / "posetracker", "models", "assets")
    env = {"POSETRACKER_MODELS": str(tmp_path / "mine")}
    assert data_dir("models", env, checkout, share) == tmp_path / "mine"  # taken as given, even if absent
    assert data_dir("models", {"POSETRACKER_MODELS": ""}, checkout, share) == checkout / "models"
    assert data_dir("assets", env, checkout, share) == share / "assets"  # the checkout has no assets/
    (checkout / "pyproject.toml").unlink()  # an installed package: site-packages/models is not ours
    assert data_dir("models", {}, checkout, share) == share / "models"
    assert data_dir("models", {}, checkout, tmp_path / "nowhere") == checkout / "models"  # "not found" names it


def test_installed_share_comes_from_the_record(tmp_path, monkeypatch):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    info = site / "posetracker-9.9.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: posetracker\nVersion: 9.9\n")
    (info / "RECORD").write_text("posetracker/__init__.py,,\n../../../share/posetracker/models/NOTICE,,\n")
    monkeypatch.syspath_prepend(str(site))
    assert installed_share() == (tmp_path / "venv" / "share" / "posetracker").resolve()
    (info / "RECORD").write_text("posetracker/__init__.py,,\n")  # editable: no data files
    assert installed_share() is None
    assert installed_share("no-such-distribution-here") is None


def test_a_checkout_reads_models_and_assets_in_place():
    assert data_dir("models", {}) == CHECKOUT / "models" and (CHECKOUT / "models" / "NOTICE").is_file()
    assert data_dir("assets", {}) == CHECKOUT / "assets" and sample_clip().name == "sample_dance.mp4"
    assert (MODELS_DIR / "posenet-human18.safetensors").is_file()

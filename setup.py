"""The one thing pyproject.toml cannot say: the GUI folder ``ui/`` installs as the package ``posetracker_ui``.

A checkout runs the app as ``python main.py`` (importing ``ui``); an install names it after the project, so
it never claims a top-level ``ui`` in a user's site-packages. Its modules import each other relatively, so
they work under either name. Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["posetracker", "posetracker.*"]), "posetracker_ui"],
    package_dir={"posetracker_ui": "ui"},
)

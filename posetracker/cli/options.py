"""Arguments shared by several verbs (and the app): the refiner kinds, as registered in :mod:`posetracker.refiners`."""

from __future__ import annotations

import argparse
from collections.abc import Iterator


class RefinerKinds:
    """argparse ``choices``: every refiner kind registered now (a plug-in included). Read when a value is
    checked or the help is shown, so building a parser does not import the refiners (and torch)."""

    def __contains__(self, kind: object) -> bool:
        return kind in _registered()

    def __iter__(self) -> Iterator[str]:
        return iter(_registered())


def _registered() -> list[str]:
    from posetracker.refiners import registered_refiners

    return registered_refiners()


def add_refiners_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """``--refiners [KIND ...]`` (default none), validated against the registered kinds (listed in the help)."""
    parser.add_argument("--refiners", nargs="*", default=[], choices=RefinerKinds(), metavar="KIND",
                        help=f"{help}; registered: %(choices)s")

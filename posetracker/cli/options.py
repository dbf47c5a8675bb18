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
    """``--refiners [KIND ...]``, validated against the registered kinds (listed in the help). Absent: the
    mode's defaults (``refiners.DEFAULT_REFINERS``); ``--refiners`` with no kind: none."""
    parser.add_argument("--refiners", nargs="*", default=None, choices=RefinerKinds(), metavar="KIND",
                        help=f"{help} (default: the mode's own, offline the precision stage 'crop', live 'crop-fast' "
                             "where more than one CPU is usable; "
                             "--refiners alone: none); registered: %(choices)s")


def chosen_refiners(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The ``--refiners`` choice as ``SessionConfig.refiners`` takes it (None: the mode's defaults)."""
    return None if args.refiners is None else tuple(args.refiners)


def add_tiles_argument(parser: argparse.ArgumentParser) -> None:
    """``--tiles N``: ``SessionConfig.tile_grid`` (absent: the mode's default)."""
    parser.add_argument("--tiles", type=int, default=None, metavar="N",
                        help="also read N x N overlapping tiles of each frame for small people "
                             "(default: photos 2, video 1 = off)")


def add_crop_budget_argument(parser: argparse.ArgumentParser) -> None:
    """``--crop-budget MS``: ``SessionConfig.crop_budget_ms`` (absent: the session's default)."""
    parser.add_argument("--crop-budget", type=float, default=None, metavar="MS",
                        help="live: time a frame may spend in the precision stage (at least one person a frame; "
                             "the others keep their last correction; default 10)")


def crop_budget(args: argparse.Namespace) -> dict:
    """``--crop-budget`` as SessionConfig keyword arguments ({} when absent)."""
    value = getattr(args, "crop_budget", None)
    return {} if value is None else {"crop_budget_ms": value}

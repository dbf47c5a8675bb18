"""Arguments shared by several verbs (and the app): the refiner kinds, as registered in :mod:`posetracker.refiners`;
and :func:`run_command`, how the command line runs a verb; :class:`InterruptFlag`, a first Ctrl-C that stops a
run and keeps its work."""

from __future__ import annotations

import argparse
import sys
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
    """The ``--refiners`` choice as ``RefineSettings.refiners`` takes it (None: the mode's defaults)."""
    return None if args.refiners is None else tuple(args.refiners)


def heights_argument(text: str):
    """argparse ``type`` of ``--height``: ``motion.heights.parse_heights`` (a typo fails before any tracking)."""
    from posetracker.motion.heights import HeightError, parse_heights

    try:
        return parse_heights(text)
    except HeightError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_height_argument(parser: argparse.ArgumentParser) -> None:
    """``--height``: the people's statures (``motion.heights``)."""
    parser.add_argument("--height", type=heights_argument, default=None, metavar="M | ID=M,...",
                        help="people's standing heights in metres: one for everyone (1.72) or per track id "
                             "(0=1.72,1=1.40; *=1.70 for the rest). Each such person is scaled to theirs, so world "
                             "coordinates, BVH, TRC and gait are in their true metres; every person's stature and "
                             "bone lengths, and where they came from, are in the JSON metadata (people)")


def add_tiles_argument(parser: argparse.ArgumentParser) -> None:
    """``--tiles N``: ``RefineSettings.tile_grid`` (absent: the mode's default)."""
    parser.add_argument("--tiles", type=int, default=None, metavar="N",
                        help="also read N x N overlapping tiles of each frame for small people "
                             "(default: photos 2, video 1 = off)")


def add_crop_budget_argument(parser: argparse.ArgumentParser) -> None:
    """``--crop-budget MS``: ``RefineSettings.crop_budget_ms`` (absent: the session's default)."""
    parser.add_argument("--crop-budget", type=float, default=None, metavar="MS",
                        help="live: time a frame may spend in the precision stage (at least one person a frame; "
                             "the others keep their last correction; default 10)")


def crop_budget(args: argparse.Namespace) -> dict:
    """``--crop-budget`` as RefineSettings keyword arguments ({} when absent)."""
    value = getattr(args, "crop_budget", None)
    return {} if value is None else {"crop_budget_ms": value}


def calibration_error(files: list[str], exc: Exception, option: str = "") -> str:
    """The console's line for a calibration that cannot be used: ``error: FILE: message`` (``option`` before the
    file, e.g. ``--intrinsics``), the file named once (not again where the message already names it)."""
    message = str(exc)
    named = any(str(f) in message for f in files)
    where = " ".join(filter(None, [option, "" if named else ", ".join(map(str, files))]))
    return f"error: {where}: {message}" if where else f"error: {message}"


def run_command(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    """Parse ``argv`` (None: the process's arguments) with ``parser`` and run the verb it names; the exit code
    (``posetracker.cli``: 0 success, 1 failure with the message on stderr, 130 interrupted; argparse exits 2)."""
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # a KeyError's str() is quoted
        print(f"error: {message}", file=sys.stderr)
        return 1


def progress_bar(total: int | None, desc: str):
    """A tqdm bar of frames on stderr and its ``update(done, total)``, the form ``TrackingSession.run``'s
    progress takes."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit="frame", file=sys.stderr, dynamic_ncols=True, disable=None)

    def update(done: int, _total: int | None) -> None:
        bar.update(done - bar.n)

    return bar, update


def session_config(args: argparse.Namespace, fov_deg: float):
    """The ``SessionConfig`` of ``process``'s options, tracking with a field of view of ``fov_deg``."""
    from posetracker.session import (
        DepthSettings, MotionSettings, NetworkSettings, PeopleSettings, RefineSettings, SessionConfig,
    )

    return SessionConfig(mode=args.mode,
                         network=NetworkSettings(lookahead=args.lookahead, low_light=not args.no_low_light),
                         people=PeopleSettings(max_people=args.animals or args.max_people, known_count=args.animals,
                                               keep_unconfirmed=args.keep_unconfirmed),
                         refine=RefineSettings(refiners=chosen_refiners(args), tile_grid=args.tiles,
                                               **crop_budget(args)),
                         motion=MotionSettings(smoothing=not args.raw, rigid_bones=not (args.raw_bones or args.raw),
                                               fix_facing=not (args.no_facing_repair or args.raw),
                                               fix_legs=not (args.no_leg_repair or args.raw)),
                         depth=DepthSettings(fov_deg=fov_deg))


class InterruptFlag:
    """Inside ``with``: the first Ctrl-C only sets ``hit`` (the run stops and what it tracked is written);
    a second one interrupts as usual. Called, it answers whether to stop (``TrackingSession.run``'s cancel;
    ``process`` of one source and of several live ones)."""

    hit = False

    def __enter__(self) -> InterruptFlag:
        import signal
        import threading

        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum, frame) -> None:
        import signal

        self.hit = True
        print("\ninterrupted: writing what was tracked (Ctrl-C again to abandon it)", file=sys.stderr)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def __exit__(self, *exc) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def __call__(self) -> bool:
        return self.hit

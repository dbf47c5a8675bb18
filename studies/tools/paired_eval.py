"""Two ``posetracker eval --out`` files of the same sets, paired: per set and the mean difference with its 95 %
bootstrap interval over sets (``evaluation.metrics.paired_bootstrap``), for PCK@0.1, one skeleton per person
(pck_first@0.1), PCK@0.2, OKS AP and recall; ``--versus`` compares each file's ``versus`` block instead.

    python studies/tools/paired_eval.py before.json after.json [--versus]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from posetracker.evaluation.metrics import paired_bootstrap

METRICS = ("pck@0.1", "pck_first@0.1", "pck@0.2", "ap", "recall")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--versus", action="store_true", help="compare the files' versus blocks (e.g. thunder-boxes)")
    args = ap.parse_args()
    runs = [json.loads(Path(p).read_text()) for p in (args.before, args.after)]
    a, b = [(r["versus"] if args.versus else r)["results"] for r in runs]
    names = [n for n in a if n in b]
    print(f"{'set':<28}" + "".join(f"{m:>22}" for m in METRICS))
    for n in names:
        print(f"{n:<28}" + "".join(f"{a[n][m]:>10.3f} -> {b[n][m]:<8.3f}" for m in METRICS))
    for m in METRICS:
        d, lo, hi = paired_bootstrap([b[n][m] for n in names], [a[n][m] for n in names])
        mean_a, mean_b = sum(a[n][m] for n in names) / len(names), sum(b[n][m] for n in names) / len(names)
        print(f"mean {m:<14}{mean_a:.3f} -> {mean_b:.3f}  ({d:+.3f} [{lo:+.3f}, {hi:+.3f}], {len(names)} sets)")


if __name__ == "__main__":
    main()

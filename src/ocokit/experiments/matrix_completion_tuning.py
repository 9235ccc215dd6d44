"""The recorded grid search of paper 000's matrix-completion experiments: the command that writes it.

``python -m ocokit.experiments.matrix_completion_tuning NAME --T T [--seeds S] [--data PATH] [-o k=v]``
runs :func:`ocokit.experiments.matrix_completion.tune` on the tuning seeds only (10000, 10001, ...) and
writes ``ocokit/experiments/tuning/NAME.json``, the table the experiment uses by default.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ocokit.experiments.matrix_completion import CRITERION, HORIZONS, TUNE_SEED_OFFSET, TUNING_DIR, ZERO, tune
from ocokit.harness import get
from ocokit.results import atomic_write_json


def main(argv: list[str] | None = None) -> None:
    """``python -m ocokit.experiments.matrix_completion_tuning NAME --T T [--seeds S] [--data PATH] [--write FILE]``.

    Runs the grid search of experiment ``NAME`` (:func:`tune`, on the tuning seeds only) and writes the
    table that the experiment uses by default (``tuning/NAME.json`` beside this module, or ``--write``).
    """
    parser = argparse.ArgumentParser(
        prog="python -m ocokit.experiments.matrix_completion_tuning", description=main.__doc__
    )
    parser.add_argument("name", choices=sorted(HORIZONS))
    parser.add_argument("--T", type=int, required=True, help="horizon of the grid search")
    parser.add_argument("--seeds", type=int, default=1, help="tuning seeds (10000, 10001, ...)")
    parser.add_argument("--data", default=None, help="data folder (default: $OCOKIT_DATA)")
    parser.add_argument("--option", "-o", action="append", default=[], help="experiment option name=value")
    parser.add_argument("--write", type=Path, default=None, help="output file (default: tuning/NAME.json)")
    args = parser.parse_args(argv)
    exp = get(args.name)
    opts = exp.parse_options(dict(kv.split("=", 1) for kv in args.option))
    problem = exp.study.make_problem(args.T, args.data, opts)
    labels = [a.label for a in exp.algorithms if a.label != ZERO]
    command = " ".join(["python -m ocokit.experiments.matrix_completion_tuning", args.name, f"--T {args.T}",
                        f"--seeds {args.seeds}", *(f"-o {kv}" for kv in args.option)])  # fmt: skip
    table = tune(args.name, labels, problem, args.T, args.seeds)
    atomic_write_json(args.write or TUNING_DIR / f"{args.name}.json", {
        "experiment": args.name, "command": command, "criterion": CRITERION, "T": args.T,
        "seeds": [TUNE_SEED_OFFSET + s for s in range(args.seeds)], "options": args.option,
        "problem_constants": dataclasses.asdict(problem.constants()), "methods": table,
    })  # fmt: skip


if __name__ == "__main__":
    main()

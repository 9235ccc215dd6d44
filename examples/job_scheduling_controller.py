"""A job-scheduling controller that survives restarts: COLDQ allocates power across 100 data centres hour by hour.

Each hour the controller applies the learner's decision ``x_t`` (the power of each centre), then learns the hour's
prices and arriving jobs: the cost is ``<c_t, x_t>`` and the constraint ``g_t(x_t) = lambda_t - sum_i h(x_i)``
counts the jobs it could not serve (``[g_t]_+``, delayed jobs). COLDQ keeps a virtual queue of the jobs it owes;
losing it at a restart would forget that debt. So the controller checkpoints every hour, and a restart, after a
deploy or a crash (even ``kill -9``), continues from the last hour it saved, with the same decisions as a run that
never stopped.

Prices: the 2023 hourly day-ahead prices of 10 regions from ``--data`` or ``$OCOKIT_DATA``
(``electricity-prices-2023/``), from May 1 (``--start-hour``), one hour per round; without a data folder, a
synthetic diurnal curve (labelled as such). Jobs: ``lambda_t ~ Poisson(2500)``, drawn from the hour's key as
``ocokit.run`` draws them (a live controller would read both from its feeds).

Each hour is committed in two steps, its log line, then the checkpoint; a restart cuts the log back to the
checkpoint's hour, so each hour appears in the log exactly once, whenever the process was killed. Run it again
with the same arguments to resume:

    python examples/job_scheduling_controller.py --hours 240 --checkpoint controller.ckpt --log controller.csv
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import jax
import numpy as np

import ocokit
from ocokit.datasets import ELECTRICITY_REGIONS, ENV_VAR, load_electricity_prices
from ocokit.problems import JobScheduling
from ocokit.problems._job_scheduling import HOURS_PER_YEAR, MAY_FIRST_HOUR, SLOTS_PER_HOUR
from ocokit.results import atomic_write_bytes

HEADER = "hour,cost,constraint\n"
"""The log's first line; then one line per hour: the cost ``<c_t, x_t>`` and ``g_t(x_t)`` (> 0: delayed jobs)."""


def build_problem(hours: int, data: str | None = None, start_hour: int = MAY_FIRST_HOUR) -> JobScheduling:
    """Fig. 4's job-scheduling problem of paper 003 with one round per hour: real 2023 prices from ``data`` (or
    ``$OCOKIT_DATA``) when there are some, else synthetic ones."""
    if not 1 <= hours <= HOURS_PER_YEAR - start_hour:
        raise ValueError(f"hours must be in [1, {HOURS_PER_YEAR - start_hour}] from hour {start_hour}, got {hours}")
    if data is None and not os.environ.get(ENV_VAR):  # no data folder: the synthetic curve, sampled hourly
        synthetic = JobScheduling.synthetic(num_slots=SLOTS_PER_HOUR * hours)
        return JobScheduling(np.asarray(synthetic.prices)[::SLOTS_PER_HOUR], price_source=synthetic.price_source)
    hourly = load_electricity_prices(ELECTRICITY_REGIONS, data, hours=start_hour + hours)[start_hour:]
    return JobScheduling(hourly, price_source=f"hourly day-ahead prices 2023 from hour {start_hour}")


def build_learner(problem: JobScheduling, hours: int) -> ocokit.algorithms.COLDQ:
    """COLDQ with the parameters of the paper's Table 6."""
    return ocokit.algorithms.COLDQ.from_paper(ocokit.algorithms.ProblemInfo.of(problem, hours), table=6)


def feed(problem: JobScheduling, session: ocokit.Session, hour: int) -> dict:
    """The hour's prices and arriving jobs (here drawn as ``ocokit.run`` draws round ``hour``)."""
    env_key = ocokit.engine.split_key(session.key)[0]
    return problem.round_data(None, jax.random.fold_in(env_key, hour), hour)


def committed_log(log: Path, hours: int) -> list[str]:
    """The log's lines of the first ``hours`` hours (a killed run may have written the next hour's, or half)."""
    lines = log.read_text().splitlines(keepends=True)[1:] if log.exists() else []
    kept = [line for line in lines if line.endswith("\n")][:hours]
    if len(kept) != hours:
        raise ValueError(f"{log} holds {len(kept)} hours, the checkpoint {hours}: not this checkpoint's log")
    return kept


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=int, default=240, help="hours to run (default: 240, ten days)")
    parser.add_argument("--checkpoint", type=Path, required=True, help="the checkpoint file (resumed if it exists)")
    parser.add_argument("--log", type=Path, required=True, help="the per-hour CSV log: hour, cost, constraint")
    parser.add_argument("--data", default=None, help="the data folder (default: $OCOKIT_DATA; none: synthetic)")
    parser.add_argument("--start-hour", type=int, default=MAY_FIRST_HOUR, help="first hour of 2023 (May 1)")
    parser.add_argument("--seed", type=int, default=0, help="the session's key")
    parser.add_argument("--pace", type=float, default=0.0, help="seconds between hours (a real controller: 3600)")
    args = parser.parse_args(argv)

    problem = build_problem(args.hours, args.data, args.start_hour)
    learner = build_learner(problem, args.hours)
    if args.checkpoint.exists():
        session = ocokit.Session.restore(args.checkpoint, learner, problem, horizon=args.hours, key=args.seed)
        print(f"resuming after hour {session.t} from {args.checkpoint}", flush=True)
    else:
        session = ocokit.Session(learner, problem, horizon=args.hours, key=args.seed)
        print(f"starting at hour 1 ({problem.price_source})", flush=True)
    atomic_write_bytes(args.log, (HEADER + "".join(committed_log(args.log, session.t))).encode())

    with open(args.log, "a") as log:
        for hour in range(session.t + 1, args.hours + 1):
            session.decide()  # apply it: each centre's power for this hour
            time.sleep(args.pace)  # the hour passes
            out = session.observe(feed(problem, session, hour), round=hour)
            log.write(f"{hour},{float(out['loss'])!r},{float(out['constraints'][0])!r}\n")
            log.flush()
            os.fsync(log.fileno())  # 1. the hour's line is on disk
            session.save(args.checkpoint)  # 2. then the hour is committed
    print(f"done: hours 1-{session.t} in {args.log}", flush=True)


if __name__ == "__main__":
    main()

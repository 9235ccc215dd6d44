"""A test whose xdist worker process dies (a signal in native code) runs once more, on a fresh worker.

Why: jaxlib's XLA CPU client has segfaulted in the unwinder (``libgcc_s``) late in long test worker
processes, rarely and at a different test each time, in CI and locally (while compiling, while the
persistent cache serialised or loaded an executable, and in CI with no cache at all); the same tests pass
in every other run. So a *crash* (the worker process gone, not an assertion or an exception) is
answered by one more run of that test: xdist's file scheduler already puts the crashed file's unfinished
tests, the crashed one included, back in the queue and a replacement worker starts
(``--max-worker-restart``); this plugin reports the crash as ``rerun`` (yellow, counted in the summary
line, with the crash printed) instead of ``failed``, so the outcome is the second run's. A second crash of
the same test fails it. Nothing else is ever rerun: a failing assertion fails at once.

Imported by ``tests/conftest.py`` (its hooks run in the xdist controller).
"""

from __future__ import annotations

import pytest

CRASHED: set[str] = set()
"""Node ids whose worker crashed once in this session (a second crash fails them)."""


def _requeued_units(crashitem: str, sched) -> list[dict[str, bool]]:
    """The work units of a file scheduler's queue that hold ``crashitem`` (``[]`` for other schedulers)."""
    from xdist.scheduler.loadscope import LoadScopeScheduling

    if not isinstance(sched, LoadScopeScheduling):
        return []
    return [unit for unit in sched.workqueue.values() if crashitem in unit]


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched) -> None:
    # xdist's file scheduler (--dist loadfile) has already put the crashed file's unfinished tests, the
    # crashed one included, back in its queue (LoadScopeScheduling.remove_node).
    units = _requeued_units(crashitem, sched)
    if crashitem in CRASHED or not units:
        for unit in units:
            unit[crashitem] = True  # a second crash: reported failed, and not run a third time
        return
    CRASHED.add(crashitem)
    report.outcome = "rerun"  # type: ignore[assignment]


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if report.outcome == "rerun":
        return "rerun", "R", ("RERUN", {"yellow": True})
    return None


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    reruns = terminalreporter.stats.get("rerun", [])
    if reruns:
        terminalreporter.write_sep("=", "worker crashes (each test run once more)", yellow=True)
        for report in reruns:
            terminalreporter.write_line(f"{report.longrepr}")

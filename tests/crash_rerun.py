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

import functools

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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` without its hang after a crash (below); other modes are xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    return _file_scheduler()(config, log)


@functools.cache
def _file_scheduler() -> type:
    """xdist's file scheduler, less a hang after a crash (pytest-xdist 3.8: issues 1323 and 1327 there).

    A worker runs a test only once it holds the next one, or has been told to stop. A replacement worker that
    is handed the crashed file's last test alone (or a unit with nothing left to run) therefore waits for
    more, and xdist gives it more only when it finishes a test: the session hangs. Here a unit with nothing
    left to run is dropped, a worker holding a single test is given the next unit too, and a worker given
    the last unit of the queue is told to stop, so it runs what it holds and exits (with the queue empty,
    there is nothing else it could be given).
    """
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        def _assign_work_unit(self, node) -> None:
            while self.workqueue and all(next(iter(self.workqueue.values())).values()):
                self.workqueue.popitem(last=False)  # every test of the unit has run
            if self.workqueue:
                super()._assign_work_unit(node)
            if not self.workqueue:
                node.shutdown()
            elif self._pending_of(self.assigned_work[node]) < 2:
                self._assign_work_unit(node)  # one test held: it would wait for the next one

    return FileScheduling


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

"""Executors: where the experiment harness computes its units of work (in process, or on a Ray cluster).

A *unit* is one compiled sweep (an algorithm and a chunk of seeds, say), sized to take seconds to minutes.
The harness asks an executor to ``map`` a picklable function over its units and stores each result as it
arrives; workers never write to the store, so a local run, a Ray run and any mix of them produce the same
files and resume each other.

* [`Local`][ocokit.executors.Local] computes the units one after another in this process (the default).
* [`Ray`][ocokit.executors.Ray] sends them to a Ray cluster: a local one started on first use (every core of this
  machine,
  each worker's BLAS and XLA threads pinned to its share), or an existing one (``address="auto"`` or
  ``"ray://host:port"``). A worker killed mid-unit (SIGKILL, a lost node, out of memory) is retried by
  Ray up to ``max_retries`` times; an exception raised by the function itself is deterministic, is not
  retried, and ends the map with a one-line [`UnitError`][ocokit.executors.UnitError] naming the unit, after every unit
  that did
  finish has been yielded (so the caller stored it).

The Ray executor needs the optional ``ray`` extra (``pip install "ocokit[ray]"``: Ray with its client, which
``ray://`` addresses need) and imports it lazily. A cluster that does not answer at its address fails within
``connect_timeout`` seconds (30), in one line naming the address, instead of Ray's minutes of retries.

A driver killed with SIGKILL takes the Ray it started down with it: Ray ties its GCS server, raylet, workers,
monitors and dashboard to the driver's life (gone within 2 s). Ray's two agents (``ray::DashboardAgent`` and
``ray::RuntimeEnvAgent``) notice their raylet's death within 2 s but then report it to the GCS, dead too, with a fixed
60 s RPC timeout (Ray 2.60); on Linux a small watcher process the executor starts with its Ray ends them 3 s after
the driver is gone (only processes of that Ray, known by pid and start time).

References: P. Moritz et al., "Ray: A Distributed Framework for Emerging AI Applications", OSDI 2018
(tasks, lineage-based re-execution of failed tasks).
"""

from __future__ import annotations

import abc
import contextlib
import importlib.util
import math
import os
import socket
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

RAY_MISSING = 'the Ray executor needs the ray extra: pip install "ocokit[ray]"'
"""The one-line message raised when [`Ray`][ocokit.executors.Ray] is constructed without Ray installed."""
RAY_CLIENT_MISSING = 'a ray:// address needs Ray Client (grpcio): pip install "ocokit[ray]", or "ray[client]"'
"""The one-line message raised when [`Ray`][ocokit.executors.Ray] is given a ``ray://`` address without Ray Client
installed."""
CONNECT_TIMEOUT = 30.0
"""Seconds [`Ray`][ocokit.executors.Ray] waits, by default, for the cluster at its address to answer."""

NAMES = ("local", "ray")
"""The executor names accepted by [`get`][ocokit.executors.get] (and by ``ocokit run --executor``)."""

# The JAX options a worker copies from the driver before it unpickles the function, so that its arrays
# (float64 under ``jax_enable_x64``) and its numbers are the driver's.
_JAX_OPTIONS = (
    "jax_enable_x64",
    "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion",
    "jax_default_matmul_precision",
)
# Also copied when the cluster is this machine: the persistent compilation cache, shared by the workers.
_JAX_LOCAL_OPTIONS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


class UnitError(RuntimeError):
    """A unit of work failed: raised by [`Ray.map`][ocokit.executors.Ray.map] with one line naming the unit and the
    cause.

    Attributes: ``unit`` (the unit that failed) and ``cause`` (the original exception when it could be
    recovered, else ``None``).
    """

    def __init__(self, unit: Any, message: str, cause: BaseException | None = None):
        super().__init__(f"unit {unit!r} failed: {message}")
        self.unit, self.cause = unit, cause


class AbstractExecutor(abc.ABC):
    """Computes ``fn(unit)`` for every unit, yielding ``(unit, result)`` pairs as the units complete.

    Contract of [`map`][ocokit.executors.AbstractExecutor.map]: every unit appears exactly once, in completion order
    (not submission order);
    ``fn`` and the units must be picklable (cloudpickle: closures over equinox modules are fine) and ``fn``
    must be deterministic, since a unit may be computed more than once when a worker dies. If a unit fails,
    the units that finished are yielded first and the failure is raised after them.
    """

    @abc.abstractmethod
    def map(self, fn: Callable[[Any], Any], units: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """Yield ``(unit, fn(unit))`` for each unit, as each one completes."""

    @property
    @abc.abstractmethod
    def workers(self) -> int:
        """How many units run at once (1 for [`Local`][ocokit.executors.Local]; the cluster's slots for
        [`Ray`][ocokit.executors.Ray])."""

    def describe(self) -> str:
        """One line for the progress display, e.g. ``ray (8 workers)``."""
        return f"{type(self).__name__.lower()} ({self.workers} worker{'s' if self.workers != 1 else ''})"


class Local(AbstractExecutor):
    """The default executor: computes the units one after another in this process.

    An exception raised by ``fn`` propagates unchanged (after the units before it were yielded).

    Example:
        >>> from ocokit.executors import Local
        >>> list(Local().map(lambda u: u * u, [1, 2, 3]))
        [(1, 1), (2, 4), (3, 9)]
    """

    def map(self, fn: Callable[[Any], Any], units: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """Yield ``(unit, fn(unit))`` in the order of ``units`` (which is also their completion order)."""
        for unit in units:
            yield unit, fn(unit)

    @property
    def workers(self) -> int:
        """Always 1."""
        return 1


class Ray(AbstractExecutor):
    """Runs the units as Ray tasks, on a local Ray started on first use or on an existing cluster.

    Args:
        address: ``None`` starts Ray on this machine with all its cores (or joins the Ray already
            initialised in this process); ``"auto"`` joins the cluster this node belongs to (``ray start``);
            ``"ray://host:port"`` connects through Ray Client.
        max_workers: at most this many units in flight (``None``: twice the cluster's slots, so no worker
            waits for the driver between units).
        max_retries: times a unit is re-run after its worker died (killed, out of memory, node lost);
            exceptions raised by the function itself are never retried.
        num_cpus_per_task: CPUs Ray reserves per unit; each worker's OpenMP and BLAS thread pools are pinned
            to this many threads (and with 1, XLA's Eigen pool too: ``--xla_cpu_multi_thread_eigen=false``).
        num_gpus_per_task: GPUs per unit (fractions share a GPU); ``None`` asks for 1 when JAX's CUDA
            plugin is installed here and the cluster has GPUs, else 0.
        runtime_env: extra Ray runtime environment for the tasks (``pip``, ``py_modules``, ``env_vars``...),
            merged with the thread-pinning variables.
        init_kwargs: extra arguments for ``ray.init`` (``num_cpus``, ``object_store_memory``...).
        connect_timeout: seconds to wait for the cluster at ``address`` (or ``$RAY_ADDRESS``) to accept a
            connection before failing with ``ConnectionError`` naming the address (``None``: 30).

    Raises ``ImportError`` (one line: how to install the extra) when Ray, or for ``ray://`` Ray Client, is not
    installed.

    References: P. Moritz et al., "Ray: A Distributed Framework for Emerging AI Applications", OSDI 2018.
    """

    def __init__(
        self,
        address: str | None = None,
        max_workers: int | None = None,
        max_retries: int = 3,
        num_cpus_per_task: float = 1,
        num_gpus_per_task: float | None = None,
        runtime_env: dict[str, Any] | None = None,
        init_kwargs: dict[str, Any] | None = None,
        connect_timeout: float | None = None,
    ):
        try:
            import ray
        except ImportError:
            raise ImportError(RAY_MISSING) from None
        if address is not None and (not isinstance(address, str) or not address):
            raise ValueError(f"address must be None, 'auto' or 'ray://host:port', got {address!r}")
        if address is not None and address.startswith("ray://") and importlib.util.find_spec("grpc") is None:
            raise ImportError(RAY_CLIENT_MISSING)
        connect_timeout = CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
        number = isinstance(connect_timeout, int | float) and not isinstance(connect_timeout, bool)
        if not number or not (math.isfinite(connect_timeout) and connect_timeout > 0):
            raise ValueError(f"connect_timeout must be a number of seconds > 0, got {connect_timeout!r}")
        if max_workers is not None and (isinstance(max_workers, bool) or not isinstance(max_workers, int)):
            raise ValueError(f"max_workers must be None or an integer >= 1, got {max_workers!r}")
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be None or an integer >= 1, got {max_workers!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if not num_cpus_per_task > 0:
            raise ValueError(f"num_cpus_per_task must be > 0, got {num_cpus_per_task!r}")
        if num_gpus_per_task is not None and not num_gpus_per_task >= 0:
            raise ValueError(f"num_gpus_per_task must be None or >= 0, got {num_gpus_per_task!r}")
        self._ray = ray
        self.address, self.max_workers, self.max_retries = address, max_workers, max_retries
        self.num_cpus_per_task, self.num_gpus_per_task = num_cpus_per_task, num_gpus_per_task
        self.runtime_env, self.init_kwargs = dict(runtime_env or {}), dict(init_kwargs or {})
        self.connect_timeout = float(connect_timeout)
        self._started, self._reaper = False, None

    def __repr__(self) -> str:
        return f"Ray(address={self.address!r}, max_workers={self.max_workers}, max_retries={self.max_retries})"

    def _connect(self) -> None:
        ray = self._ray
        if ray.is_initialized():
            return
        kwargs = {"include_dashboard": False, **self.init_kwargs}
        _check_reachable(self.address, self.connect_timeout)
        if self.address is not None:
            kwargs["address"] = self.address
            kwargs.pop("include_dashboard")
        before = _Reaper.children()
        with warnings.catch_warnings():
            # ray.init starts its processes with fork+exec, which JAX's at-fork hook cannot tell from a bare fork.
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
            ray.init(**kwargs)
        self._started = True
        self._reaper = _Reaper(_Reaper.children() - before)  # the processes ray.init started here, if any

    def close(self) -> None:
        """Shut down the Ray this executor started (a cluster it joined is left running)."""
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False
        if self._reaper is not None:
            self._reaper.stop()
            self._reaper = None

    def __enter__(self) -> Ray:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _gpus(self) -> float:
        if self.num_gpus_per_task is not None:
            return float(self.num_gpus_per_task)
        cuda = any(importlib.util.find_spec(m) is not None for m in ("jax_cuda12_plugin", "jax_cuda13_plugin"))
        return 1.0 if cuda and self._ray.cluster_resources().get("GPU", 0) > 0 else 0.0

    @property
    def workers(self) -> int:
        """Units the cluster runs at once: its CPUs over ``num_cpus_per_task``, capped by ``max_workers``."""
        self._connect()
        slots = max(int(self._ray.cluster_resources().get("CPU", 1) // self.num_cpus_per_task), 1)
        return slots if self.max_workers is None else min(slots, self.max_workers)

    def _task_options(self) -> dict[str, Any]:
        threads = str(max(int(self.num_cpus_per_task), 1))
        env = {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}
        gpus = self._gpus()
        if gpus > 0:
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # units sharing a GPU must not each take 75% of it
        runtime_env = {**self.runtime_env, "env_vars": {**env, **self.runtime_env.get("env_vars", {})}}
        return {
            "num_cpus": self.num_cpus_per_task,
            "num_gpus": gpus,
            "max_retries": self.max_retries,
            "retry_exceptions": False,
            "runtime_env": runtime_env,
        }

    def map(self, fn: Callable[[Any], Any], units: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """Yield ``(unit, fn(unit))`` as units complete on the cluster; [`UnitError`][ocokit.executors.UnitError] if one
        fails.

        At most ``max_workers`` units are in flight. After a failure no further unit is submitted; the
        units already submitted are awaited and yielded, then the first failure is raised.
        """
        import cloudpickle
        import jax

        ray = self._ray
        self._connect()
        if self._reaper is not None:
            self._reaper.watch()  # the workers Ray started since
        options = _JAX_OPTIONS + (_JAX_LOCAL_OPTIONS if self.address is None else ())
        config = {name: getattr(jax.config, name) for name in options}
        payload = ray.put(cloudpickle.dumps(fn))
        task = ray.remote(_run_unit).options(**self._task_options())
        window = self.max_workers or 2 * self.workers
        todo, pending, failure = iter(units), {}, None
        try:
            while True:
                while failure is None and len(pending) < window:
                    unit = next(todo, _DONE)
                    if unit is _DONE:
                        break
                    pending[task.remote(payload, unit, config)] = unit
                if not pending:
                    break
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                unit = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as err:  # the function raised, or its worker died more than max_retries times
                    failure = failure or _unit_error(ray, unit, err, self.max_retries)
                    continue
                yield unit, result
        finally:  # the caller stopped early (an error while storing, Ctrl-C): nothing keeps running for it
            for ref in pending:
                ray.cancel(ref)
        if failure is not None:
            raise failure


_DONE = object()


_REAPER = """
import os, signal, sys, time
family = set(sys.stdin.buffer.read().split())  # pid:start-time of Ray's processes, until the driver is gone
time.sleep(3)  # Ray's own fate sharing first
for entry in family:
    try:
        pid, start = entry.split(b":")
        with open(b"/proc/" + pid + b"/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[19] == start:
                os.kill(int(pid), signal.SIGKILL)
    except (OSError, IndexError, ValueError):
        pass
"""


class _Reaper:
    """A watcher of the Ray this driver started (Linux): once the driver is gone, even killed with SIGKILL, it ends
    the processes of that Ray which outlive it (its agents, which otherwise wait 60 s on the dead GCS), and only
    those: the trees of the processes ``ray.init`` started, each known by its pid and start time."""

    _running: ClassVar[list[subprocess.Popen]] = []  # referenced until they end (no warning about a live child)

    def __init__(self, roots: set[tuple[int, str]]):
        self.roots, self.proc = roots, None
        if roots:
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
            self.proc = subprocess.Popen([sys.executable, "-c", _REAPER], stdin=subprocess.PIPE, **quiet)
            self._running[:] = [p for p in self._running if p.poll() is None] + [self.proc]  # the ended ones reaped
            self.watch()

    @staticmethod
    def _table() -> dict[int, tuple[int, str]]:
        """Every process: pid -> (parent pid, start time), from /proc (empty elsewhere)."""
        table = {}
        for entry in os.scandir("/proc") if os.path.isdir("/proc/self") else ():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
                table[int(entry.name)] = (int(fields[1]), fields[19].decode())
            except (OSError, ValueError, IndexError):
                continue
        return table

    @classmethod
    def children(cls) -> set[tuple[int, str]]:
        return {(pid, start) for pid, (parent, start) in cls._table().items() if parent == os.getpid()}

    def watch(self) -> None:
        """Tell the watcher every process now in the trees of the roots."""
        if self.proc is None:
            return
        table = self._table()
        family = {pid for pid, (_, start) in table.items() if (pid, start) in self.roots}
        while more := {pid for pid, (parent, _) in table.items() if parent in family} - family:
            family |= more
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.write(" ".join(f"{pid}:{table[pid][1]}" for pid in family).encode() + b" ")
            self.proc.stdin.flush()

    def stop(self) -> None:
        """Ray was shut down: the watcher ends what is left of it in 3 s, then exits (kept referenced till then)."""
        if self.proc is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()


def _check_reachable(address: str | None, timeout: float) -> None:
    """Raise ``ConnectionError`` (one line naming the address) unless the cluster's ``host:port`` accepts a TCP
    connection within ``timeout`` seconds: ``ray.init`` would retry an unreachable address for minutes.

    ``address`` is ``host:port``, ``ray://host:port``, ``auto`` or ``None`` (``$RAY_ADDRESS`` if set); ``auto``
    (the cluster ``ray start`` recorded on this node; Ray fails at once when there is none) and a Ray started here
    have nothing to check.
    """
    given = address if address is not None else os.environ.get("RAY_ADDRESS")
    if not given or given in ("auto", "local"):
        return
    host, sep, port = given.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return  # not host:port: Ray names what is wrong with it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as err:
        why = f"no answer within {timeout:g} s" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ConnectionError(
            f"cannot reach the Ray cluster at {given}: {why.lower()}; start it (ray start --head) or fix the address"
        ) from None


def _run_unit(payload: bytes, unit: Any, config: dict[str, Any]) -> Any:
    """A Ray task: copy the driver's JAX options, then unpickle the function (its arrays) and call it."""
    import cloudpickle
    import jax

    for name, value in config.items():
        jax.config.update(name, value)
    return cloudpickle.loads(payload)(unit)


def _worker_lost(ray: Any) -> tuple[type, ...]:
    return (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.OutOfMemoryError)


def _unit_error(ray: Any, unit: Any, err: Exception, retries: int) -> UnitError:
    """One line naming the unit and the cause (the original exception when Ray kept it)."""
    if isinstance(err, ray.exceptions.RayTaskError):
        cause = err.cause if isinstance(err.cause, BaseException) else None
        text = f"{type(cause).__name__}: {cause}" if cause is not None else str(err)
    elif isinstance(err, _worker_lost(ray)):
        cause, text = err, f"its worker died {retries + 1} times ({type(err).__name__})"
    else:
        cause, text = err, f"{type(err).__name__}: {err}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(err).__name__)
    return UnitError(unit, first, cause)


def get(
    name: str, address: str | None = None, max_workers: int | None = None, connect_timeout: float | None = None
) -> AbstractExecutor:
    """The executor called ``name`` (``local`` or ``ray``), as ``ocokit run --executor`` builds it.

    ``address``, ``max_workers`` and ``connect_timeout`` apply to ``ray`` only; given with ``local`` they raise
    ``ValueError``.
    """
    if name not in NAMES:
        raise ValueError(f"--executor must be one of {list(NAMES)}, got {name!r}")
    if max_workers is not None and max_workers < 1:
        raise ValueError(f"--max-workers must be an integer >= 1, got {max_workers}")
    if name == "local":
        if address is not None or max_workers is not None:
            raise ValueError("--address and --max-workers need --executor ray")
        if connect_timeout is not None:
            raise ValueError("--connect-timeout needs --executor ray")
        return Local()
    if connect_timeout is not None and not 0 < connect_timeout < math.inf:  # --connect-timeout is a float
        raise ValueError(f"--connect-timeout must be a number of seconds > 0, got {connect_timeout}")
    return Ray(address=address, max_workers=max_workers, connect_timeout=connect_timeout)

"""Clusters that fail fast and leave nothing behind (issue 41, item 5).

An address where no cluster answers fails within ``--connect-timeout`` seconds (30 by default) in one line naming
it, instead of Ray's minutes of retries; the ``ray`` extra installs Ray Client, which ``ray://`` addresses need
(without it, one line says so); a driver killed with SIGKILL leaves no process of its Ray behind.
"""

import importlib.util
import os
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocokit import cli, executors

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "time-varying-regression", "--T", "5", "--seeds", "1", "--executor", "ray"]


@pytest.fixture
def ray():
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()  # these tests start no cluster: a check that fails must fail before ray.init
    yield ray
    assert not ray.is_initialized()


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _error_line(args: list[str], monkeypatch) -> tuple[str, float]:
    monkeypatch.setattr(cli.console, "width", 1000)
    start = time.monotonic()
    result = CliRunner().invoke(cli.app, args)
    elapsed = time.monotonic() - start
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "Traceback" not in result.output
    return line, elapsed


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:{port}", "127.0.0.1:{port}"])
def test_an_address_where_nothing_answers_fails_at_once_in_one_line(ray, tmp_path, monkeypatch, address):
    address = address.format(port=_closed_port())
    line, elapsed = _error_line([*RUN, "--out", str(tmp_path), "--address", address], monkeypatch)
    assert line == (
        f"error: cannot reach the Ray cluster at {address}: connection refused; start it (ray start --head) or fix "
        "the address"
    )
    assert elapsed < 30


def test_an_address_that_does_not_answer_fails_after_the_connect_timeout(ray, monkeypatch):
    waited = []

    def silent(address, timeout):
        waited.append((address, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(ConnectionError) as info:
        executors.Ray(address="ray://10.1.2.3:10001", connect_timeout=2.5).workers  # noqa: B018
    assert str(info.value) == (
        "cannot reach the Ray cluster at ray://10.1.2.3:10001: no answer within 2.5 s; start it (ray start --head) "
        "or fix the address"
    )
    assert waited == [(("10.1.2.3", 10001), 2.5)]
    assert executors.Ray(address="10.1.2.3:6379").connect_timeout == executors.CONNECT_TIMEOUT == 30.0  # default
    monkeypatch.setenv("RAY_ADDRESS", "10.9.8.7:6379")  # what ray.init would join when no address is given
    with pytest.raises(ConnectionError, match=r"at 10\.9\.8\.7:6379: no answer within 30 s"):
        executors.Ray()._connect()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--connect-timeout", "0"], "--connect-timeout must be a number of seconds > 0, got 0.0"),
        (["--connect-timeout", "nan"], "--connect-timeout must be a number of seconds > 0, got nan"),
    ],
)
def test_a_bad_connect_timeout_is_one_line(ray, tmp_path, monkeypatch, args, message):
    line, _ = _error_line([*RUN, "--out", str(tmp_path), "--address", "127.0.0.1:1", *args], monkeypatch)
    assert line == f"error: {message}"


def test_connect_timeout_needs_the_ray_executor(tmp_path, monkeypatch):
    args = ["run", "time-varying-regression", "--T", "5", "--out", str(tmp_path), "--connect-timeout", "5"]
    line, _ = _error_line(args, monkeypatch)
    assert line == "error: --connect-timeout needs --executor ray"


def test_the_ray_extra_installs_ray_client_and_without_it_ray_addresses_say_so(ray, tmp_path, monkeypatch):
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["ray"]
    assert any(req.replace(" ", "").startswith("ray[client]") for req in extra), extra
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "grpc" else find_spec(name, *a))
    line, _ = _error_line([*RUN, "--out", str(tmp_path), "--address", "ray://10.1.2.3:10001"], monkeypatch)
    assert line == f"error: {executors.RAY_CLIENT_MISSING}"
    assert executors.RAY_CLIENT_MISSING == (
        'a ray:// address needs Ray Client (grpcio): pip install "ocokit[ray]", or "ray[client]"'
    )
    executors.Ray(address="10.1.2.3:6379")  # a GCS address needs no client


# ------------------------------------------------------------------------------------------- a killed driver

# Ray ends its GCS server, raylet, workers, monitors and dashboard with the driver (within 2 s); its two agents notice
# their raylet died within 2 s, then report it to the GCS, dead too, with a fixed 60 s RPC timeout
# (ray._private.utils.publish_error_to_driver): the executor's watcher ends them 3 s after the driver is gone.


def _processes() -> dict[int, tuple[int, str, str]]:
    """Every process: pid -> (parent pid, start time, command line); zombies (exited, not yet reaped) left out."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            found[int(entry.name)] = (int(fields[1]), fields[19], command)
    return found


def _descendants(pid: int) -> dict[tuple[int, str], str]:
    """The processes started, directly or not, by ``pid``: (pid, start time) -> command line."""
    table, family, grew = _processes(), {pid}, True
    while grew:
        more = {p for p, (parent, _, _) in table.items() if parent in family and p not in family}
        family |= more
        grew = bool(more)
    return {(p, table[p][1]): table[p][2] for p in family - {pid}}


def _alive(processes: dict[tuple[int, str], str]) -> dict[tuple[int, str], str]:
    table = _processes()
    return {(p, t): c for (p, t), c in processes.items() if p in table and table[p][1] == t}


@pytest.mark.ray
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="counts processes through Linux's /proc")
def test_a_killed_driver_leaves_no_process_of_its_ray_behind(tmp_path):
    args = ["run", "time-varying-regression", "--T", "20000", "--seeds", "8", "--option", "extras=false",
            "--option", "algorithms=COLDQ", "--executor", "ray", "--out", str(tmp_path / "out"), "--plain"]  # fmt: skip
    env = {**os.environ, "OCOKIT_CACHE_DIR": "", "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    driver = subprocess.Popen([sys.executable, "-m", "ocokit.cli", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
    try:
        for line in driver.stdout:  # Ray is up once the executor line is printed
            if line.startswith("executor: ray"):
                break
        time.sleep(3)  # its workers compute
        assert driver.poll() is None, "the run ended before the driver could be killed"
        started = _descendants(driver.pid)
    finally:
        driver.kill()
        driver.wait()
        driver.stdout.close()
    commands = set(started.values())
    for name in ("raylet", "gcs_server", "ray::DashboardAgent", "ray::RuntimeEnvAgent"):
        assert any(name in c for c in commands), commands
    deadline, left = time.monotonic() + 15, started
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _alive(started)
    assert not left, f"left running 15 s after the driver was killed: {sorted(left.values())}"

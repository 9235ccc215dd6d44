"""The ``ocokit`` command: list, run, plot and report the registered experiments; ``bench`` plays the leaderboard.

``ocokit run NAME`` enables float64 (the library never does on import), runs every algorithm of the
experiment with a progress bar, skips runs already stored under ``--out``, and writes
``OUT/summary.json``, one Parquet file per run under ``OUT/runs/`` and the figure ``OUT/NAME.png``; it
then prints the summary and the paper's claims as a table (claim / measured / holds). ``--out`` is checked
to be a writable folder before anything is computed. Tables are plain Markdown with ``--plain`` or when
stdout is not a terminal; ``run --json`` prints ``summary.json`` on stdout and sends the rest to stderr.
Bad input prints one line ``error: ...`` on stdout and exits 2.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ocokit import executors
from ocokit._cli_bench import bench as bench_command
from ocokit._cli_tables import (
    _experiments,
    _list_lines,
    _print_card,
    console,
    print_report,
    status_console,
)

_CLICK_ERRORS = tuple(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
"""click's base exception (usage errors, bad parameters), found from typer's public ``BadParameter``: typer
may vendor click, so the class is not importable by one fixed name."""
_BAD_INPUT = (ValueError, OSError, FloatingPointError)
"""What bad input raises (a value, a file or folder, a run that diverges): one line, exit status 2."""


class _OneLineErrors(typer.core.TyperGroup):
    """The command group: bad input prints one line ``error: ...`` and exits non-zero, never a traceback."""

    def invoke(self, ctx):
        try:
            result = super().invoke(ctx)
            _CTRL_C.check()  # pressed during a command that then finished: still an interrupted command
            return result
        except KeyboardInterrupt:  # Ctrl-C: typer would exit 130 in silence; stored runs are kept
            _error("interrupted")
            raise SystemExit(130) from None

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _CLICK_ERRORS as err:  # a usage error (exit 2); with no arguments the help was printed already
            if sys.argv[1:] if args is None else args:
                _error(err.format_message())
            sys.exit(err.exit_code)
        except typer.Abort:
            _error("aborted")
            sys.exit(1)
        except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT; stored runs are kept
            _error("interrupted")
            sys.exit(130)
        except _BAD_INPUT as err:
            _error(str(err) or type(err).__name__)
            sys.exit(2)
        sys.exit(code if isinstance(code, int) else 0)


def _error(message: str) -> None:
    """Print ``error: message`` on one line (whitespace collapsed, no markup, no wrapping)."""
    console.print(f"[red]error:[/red] {escape(' '.join(message.split()))}", soft_wrap=True, highlight=False)


app = typer.Typer(
    cls=_OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Online convex optimization under constraints.",
)


def _print_version(value: bool) -> None:
    if value:
        from ocokit import __version__

        typer.echo(f"ocokit {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    pass


def _float64() -> Path | None:
    """Every command that may compute runs in float64, as ``run`` always has (the library never flips it), with
    JAX's persistent compilation cache on (`_compilation_cache`: its folder, or ``None``)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return _compilation_cache()


CACHE_ENV_VAR = "OCOKIT_CACHE_DIR"
"""Where the CLI keeps JAX's persistent compilation cache: a folder, or empty to turn the cache off."""
_CACHE_MAX_BYTES = 2**30
"""The cache's size bound (1 GiB); JAX evicts the least recently used programs beyond it."""


def _cache_folder() -> Path | None:
    """The folder of the CLI's compilation cache (``None``: off), not yet turned on (`_compilation_cache`).

    ``$OCOKIT_CACHE_DIR`` if set (empty: no cache), else ``ocokit/jax-compilation-cache`` in the user's cache
    folder (``$XDG_CACHE_HOME`` or ``~/.cache``; ``~/Library/Caches`` on macOS; ``%LOCALAPPDATA%`` on Windows).
    """
    folder = os.environ.get(CACHE_ENV_VAR)
    if folder is None:
        if sys.platform == "darwin":
            base = Path.home() / "Library" / "Caches"
        elif sys.platform == "win32":
            base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        else:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        folder = str(base / "ocokit" / "jax-compilation-cache")
    return Path(folder) if folder else None


def _compilation_cache() -> Path | None:
    """Turn on JAX's persistent compilation cache for this command; returns its folder (``None``: off).

    A small run spends most of its wall time compiling (every learner's scan, the comparators, the
    metrics). With the cache, a second invocation with the same shapes (same T, seeds, options, versions)
    loads those programs from disk instead of compiling them. The folder (`_cache_folder`) only ever holds
    compiled programs, keyed by JAX on the program, the options and the versions, so it is safe to delete at any
    time; JAX bounds it (`_CACHE_MAX_BYTES`, least recently used out). JAX loads native code from it, so it
    is created readable by its owner only, and a folder that another user owns or may write in, or that this
    process cannot write in, is not used (one warning line; the command runs without a cache). A cache the user
    configured for JAX itself (``JAX_COMPILATION_CACHE_DIR``) is left as it is.
    """
    import jax

    if jax.config.jax_compilation_cache_dir:  # the user's own JAX setting wins
        return Path(jax.config.jax_compilation_cache_dir)
    folder = _cache_folder()
    if folder is None:
        return None
    unsafe = _unsafe_cache(folder)
    if unsafe:
        _warn(f"not using the compilation cache {folder}: {unsafe}; the command runs without it")
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # small programs add up
    jax.config.update("jax_compilation_cache_max_size", _CACHE_MAX_BYTES)
    return folder


def _unsafe_cache(folder: Path) -> str | None:
    """Why ``folder`` cannot hold this user's compiled programs (created 0700 where missing), or ``None``."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError as err:
        return f"it cannot be created ({err.strerror or type(err).__name__})"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "another user owns it"
    if info.st_mode & 0o022:
        return "other users may write in it (chmod go-w, or set OCOKIT_CACHE_DIR)"
    if not os.access(folder, os.W_OK | os.X_OK):
        return "it is read-only"
    return None


def _without_cache(folder: Path, err: Exception, compute: Callable[[], Any]) -> Any:
    """``compute()`` again with JAX's persistent cache off for the rest of the process, after it raised ``err``: one
    warning line names the cache unless the retry raises ``err`` again (the command's own error, raised as it is)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", None)
    jax.clear_caches()
    reason = " ".join(f"{type(err).__name__}: {err}".split()).rstrip(":")[:200]
    message = f"the compilation cache {folder} failed ({reason}); ran again without it (clear it: ocokit cache --clear)"
    try:
        result = compute()
    except Exception as again:
        if type(again) is not type(err) or str(again) != str(err):
            _warn(message)
        raise
    _warn(message)
    return result


def _warn(message: str) -> None:
    """Print ``warning: message`` on one line of stderr."""
    status_console.print(f"[yellow]warning:[/yellow] {escape(message)}", soft_wrap=True, highlight=False)


MAX_SEEDS = 10_000
"""The most ``--seeds`` of one command (each seed of each algorithm is one stored Parquet file)."""
_VALUES_PER_ROUND = 16
"""About how many numbers the harness keeps per round of a stored run (loss, constraints, metrics)."""


def _check_size(exp, T: int, seeds: int, data: Path | None) -> None:
    """Refuse, before anything is computed, a horizon, seed count or data path that cannot work."""
    from ocokit import _checks

    _checks.horizon(T, "--T")
    if not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(f"--seeds must be an integer >= 1 and <= {MAX_SEEDS} (one stored run per seed), got {seeds}")
    runs = seeds * max(1, len(exp.algorithms))
    what = f"--T {T} --seeds {seeds} ({runs} runs, whose per-round records the harness holds)"
    _checks.fits_in_memory(what, 8.0 * runs * T * _VALUES_PER_ROUND, "use a smaller --T or fewer --seeds")
    if data is not None and not data.exists():
        raise ValueError(f"--data {data} does not exist (give the folder holding the datasets)")


class _RichProgress:
    """Adapts the harness's progress hooks to a rich progress bar."""

    def __init__(self, bar: Progress):
        self.bar, self.tasks = bar, {}

    def start(self, label: str, total: int) -> None:
        self.tasks[label] = self.bar.add_task(label, total=total)

    def advance(self, label: str, steps: int = 1) -> None:
        if label not in self.tasks:
            self.start(label, steps)
        self.bar.advance(self.tasks[label], steps)
        _CTRL_C.check()  # the runs done so far are stored: a safe point to stop at


def _parse_options(options: list[str]) -> dict[str, str]:
    parsed = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option takes key=value, got {item!r}")
        parsed[key.strip()] = value.strip()
    return parsed


def _suggest(name: str, valid: list[str], what: str) -> ValueError:
    """``ValueError`` for an unknown ``what``: "did you mean ..." (difflib) and the valid names."""
    import difflib

    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return ValueError(f"unknown {what} {name!r}{hint} (valid: {', '.join(valid)})")


def _experiment(name: str):
    """The registered experiment ``name``; an unknown name suggests the closest (``ValueError``)."""
    E = _experiments()
    if name not in E.names():
        raise _suggest(name, E.names(), "experiment")
    return E.get(name)


def _check_option_names(exp, options: dict[str, str]) -> None:
    """Unknown ``--option`` keys fail here, with the closest valid names (before anything is computed)."""
    valid = [o.name for o in exp.options]
    for key in options:
        if key not in valid:
            raise (
                _suggest(key, valid, f"option of {exp.name}")
                if valid
                else ValueError(f"experiment {exp.name} takes no --option, got {key!r}")
            )


PLAIN = typer.Option("--plain", help="print tables as plain Markdown (the default when stdout is not a terminal)")


@app.command("list")
def list_experiments(
    name: Annotated[str | None, typer.Argument(help="an experiment: print its full card")] = None,
    plain: Annotated[bool, PLAIN] = False,
) -> None:
    """List the experiments, one line each (paper, what, default size); `ocokit list NAME` prints one's card."""
    if name is not None:
        _print_card(_experiment(name), plain=plain)
        return
    lines = _list_lines(_experiments().names())
    lines.append("")
    lines.append("ocokit list NAME: its algorithms, options and claims.  ocokit run NAME: run it.")
    console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


@app.command("run")
def run_experiment(
    name: Annotated[str, typer.Argument(help="experiment name (see `ocokit list`)")],
    T: Annotated[int | None, typer.Option("--T", help="horizon (default: the experiment's)")] = None,
    seeds: Annotated[int | None, typer.Option("--seeds", help="repetitions (default: the experiment's)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="output folder (default: results/NAME)")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="dataset folder (default: $OCOKIT_DATA)")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="experiment option key=value")] = None,
    executor: Annotated[str, typer.Option("--executor", help="where runs are computed: local or ray")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster: auto or ray://host:port")] = None,
    max_workers: Annotated[int | None, typer.Option("--max-workers", help="at most N units at once (ray)")] = None,
    connect_timeout: Annotated[
        float | None, typer.Option("--connect-timeout", help="seconds to wait for --address to answer (ray; 30)")
    ] = None,
    reuse_across_versions: Annotated[
        bool, typer.Option("--reuse-across-versions", help="reuse runs stored by other ocokit/jax/equinox versions")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="print summary.json on stdout, and nothing else (the rest to stderr)")
    ] = False,
    plain: Annotated[bool, PLAIN] = False,
) -> None:
    """Run an experiment, skipping runs already stored in OUT; write summary.json, runs and the figure."""
    exp = _experiment(name)  # a mistyped name fails here, with the closest names
    cache = _float64()
    T = exp.default_T if T is None else T
    seeds = exp.default_seeds if seeds is None else seeds
    _check_size(exp, T, seeds, data)
    out = Path("results") / name if out is None else out
    options = _parse_options(option or [])
    _check_option_names(exp, options)
    exp.parse_options(options)  # typed: a bad option fails here, before anything is printed or computed
    from ocokit.results import check_writable_folder

    check_writable_folder(out, "--out")  # before computing: a file, a read-only folder fail now, in one line
    runner = _executor(executor, address, max_workers, connect_timeout)
    status = status_console if as_json else console
    from ocokit.papers import cite

    header = (
        f"[bold]{escape(name)}[/bold] ({escape(cite(exp.paper))}): T = {T}, seeds = {seeds}, out = {escape(str(out))}"
    )
    status.print(header, soft_wrap=True)
    if executor != "local":
        status.print(f"executor: {runner.describe()}", soft_wrap=True)

    def compute():
        with _progress_bar(status) as bar:
            return exp.run(T=T, seeds=seeds, out=out, data_dir=data, options=options, progress=_RichProgress(bar),
                           executor=runner, reuse_across_versions=reuse_across_versions)  # fmt: skip

    try:
        try:
            report = compute()
        except (executors.UnitError, FloatingPointError, OSError):
            raise
        except Exception as err:  # a damaged cache entry fails in JAX: once more without the cache
            if cache is None:
                raise
            report = _without_cache(cache, err, compute)
    except executors.UnitError as err:  # a unit failed on a worker: one line; the finished runs are stored
        console.print(f"[red]error:[/red] {escape(str(err))}")
        raise SystemExit(2) from None
    if as_json:
        typer.echo(json.dumps(_read_summary(out), indent=2, sort_keys=True))
    else:
        print_report(report.to_json(), plain=plain, default_T=exp.default_T, default_seeds=exp.default_seeds)
    status.print(
        f"wrote {out / 'summary.json'}"
        + (f" and {report.figure}" if report.figure else "")
        + f" ({report.new_runs} new runs, {report.skipped_runs} found on disk)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@app.command("tune")
def tune(
    name: Annotated[str, typer.Argument(help="experiment name (see `ocokit list`)")],
    T: Annotated[int, typer.Option("--T", help="horizon of the grid search")],
    seeds: Annotated[int, typer.Option("--seeds", help="tuning seeds (10000, 10001, ...)")] = 1,
    data: Annotated[Path | None, typer.Option("--data", help="dataset folder (default: $OCOKIT_DATA)")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="experiment option key=value")] = None,
    write: Annotated[Path | None, typer.Option("--write", help="file to write (default: the recorded table)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="keep the grid's runs here (a re-run resumes)")] = None,
) -> None:
    """Record an experiment's grid search on its tuning seeds: the table its runs use by default."""
    exp = _experiment(name)
    _float64()
    if exp.tuning is None:
        tuned = [e for e in _experiments().names() if _experiments().get(e).tuning is not None]
        raise ValueError(f"experiment {name!r} has no grid search; experiments with one: {', '.join(tuned)}")
    _check_size(exp, T, seeds, data)
    raw = _parse_options(option or [])
    _check_option_names(exp, raw)
    problem = exp.study.make_problem(T, data, exp.parse_options(raw))
    command = " ".join(["ocokit tune", name, f"--T {T}", f"--seeds {seeds}", *(f"--option {o}" for o in option or [])])
    console.print(f"[bold]{escape(name)}[/bold]: grid search at T = {T} on {seeds} tuning seed(s)", soft_wrap=True)
    started = lambda label, n: console.print(f"  {label}: {n} values", markup=False, highlight=False)  # noqa: E731
    path = exp.tuning.record(exp, problem, T, seeds, command, write, started=started, out=out, data_dir=data,
                             options=raw)  # fmt: skip
    console.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)


def _progress_bar(target: Console) -> Progress:
    """The progress bar of ``run``: per task, done / total, time elapsed and the estimated time remaining."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())  # fmt: skip
    return Progress(*columns, console=target, transient=False)


def _executor(name: str, address: str | None, workers: int | None, timeout: float | None) -> executors.AbstractExecutor:
    """The executor of ``--executor/--address/--max-workers/--connect-timeout``; without Ray, one line and exit 2."""
    try:
        return executors.get(name, address=address, max_workers=workers, connect_timeout=timeout)
    except ImportError as err:
        console.print(f"[red]error:[/red] {escape(str(err))}")
        raise SystemExit(2) from None


@app.command("plot")
def plot(
    out: Annotated[Path, typer.Argument(help="an output folder of `ocokit run`")],
    fmt: Annotated[str, typer.Option("--format", help="file format: png, pdf or svg")] = "png",
    dpi: Annotated[int, typer.Option("--dpi", help="dots per inch (raster output), 10-2400")] = 120,
) -> None:
    """Redraw the figure of a finished run from its stored records, as PNG, PDF or SVG (read only: summary.json
    and the runs stay)."""
    from ocokit import plotting

    if fmt not in plotting.FORMATS:
        raise _suggest(fmt, list(plotting.FORMATS), "--format")
    with plotting.figure_output(format=fmt, dpi=dpi):  # checks dpi before anything is read
        _float64()
        summary = _read_summary(out)
        figure = _experiment(summary["experiment"]).plot(out)
    console.print(f"wrote {figure}", markup=False, highlight=False, soft_wrap=True)


@app.command("export")
def export(
    out: Annotated[Path, typer.Argument(help="an output folder of `ocokit run`")],
    dest: Annotated[Path | None, typer.Option("--csv", help="the CSV file to write (default: OUT/runs.csv)")] = None,
) -> None:
    """Write every stored run of OUT as one tidy CSV table (experiment, algorithm, seed, round, quantity, value)."""
    from ocokit.results import export_csv

    _read_summary(out)
    console.print(f"wrote {export_csv(out, dest)}")


@app.command("report")
def report(
    out: Annotated[Path, typer.Argument(help="an output folder of `ocokit run`")], plain: Annotated[bool, PLAIN] = False
) -> None:
    """Print the summary and the claims of a finished run."""
    print_report(_read_summary(out), plain=plain)


app.command("bench")(bench_command)


@app.command("cache")
def cache(
    clear: Annotated[
        bool, typer.Option("--clear", help="delete the cached programs (nothing else in the folder)")
    ] = False,
) -> None:
    """Show where `ocokit run` keeps compiled programs and how much they take; --clear deletes them."""
    import jax

    own = jax.config.jax_compilation_cache_dir  # the user's own JAX setting wins
    folder = Path(own) if own else _cache_folder()
    if folder is None:
        console.print(f"the cache is off (${CACHE_ENV_VAR} is empty)", markup=False, highlight=False)
        return
    kinds = _cache_files(folder)
    for what, files in kinds.items():
        size = sum(path.stat().st_size for path in files if path.is_file())
        console.print(f"{what}: {len(files)} files, {size / 2**20:.1f} MiB", markup=False, highlight=False)
    if clear:
        for path in (path for files in kinds.values() for path in files):
            path.unlink(missing_ok=True)
        console.print(f"deleted them from {folder}", markup=False, highlight=False)
    else:
        console.print(f"in {folder} (safe to delete: ocokit cache --clear)", markup=False, highlight=False)


def _cache_files(folder: Path) -> dict[str, list[Path]]:
    """The files of the CLI's cache under ``folder``, by kind: only names JAX's cache writes."""
    return {"JAX's compilation cache": sorted([*folder.glob("*-cache"), *folder.glob("*-atime")])}


def _read_summary(out: Path) -> dict:
    path = Path(out) / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run `ocokit run NAME --out {out}` first")
    text = path.read_bytes()
    if not text.strip():
        raise ValueError(f"{path} is empty; run `ocokit run NAME --out {out}` again to write it")
    try:
        summary = json.loads(text)
    except ValueError as err:  # not JSON, or not UTF-8
        reason = err.msg if isinstance(err, json.JSONDecodeError) else "not UTF-8 text"
        raise ValueError(f"{path} is not valid JSON ({reason}); run `ocokit run NAME --out {out}` again") from None
    fields = {"experiment": str, "algorithms": dict, "T": int, "seeds": int, "options": dict}
    if not isinstance(summary, dict) or not all(isinstance(summary.get(k), t) for k, t in fields.items()):
        raise ValueError(f"{path} is not a summary of `ocokit run` (it needs the fields {', '.join(fields)})")
    return summary


def main() -> None:
    """The ``ocokit`` command in this process (`script` is the console script); errors print one line and
    exit non-zero (``SystemExit``), warnings one line each on stderr, Ctrl-C one line and exit status 130."""
    import warnings

    shown = warnings.showwarning
    warnings.showwarning = lambda message, category, *rest, **kw: _warn(f"{category.__name__}: {message}")
    interrupt = signal.signal(signal.SIGINT, _CTRL_C)
    try:
        app()
    finally:
        warnings.showwarning = shown
        signal.signal(signal.SIGINT, interrupt)


class _CtrlC:
    """Ctrl-C during a command: the first press stops it at the next safe point (once the runs in progress are
    stored), the second at once. XLA compiles in its own threads: stopping the process in the middle of a
    compilation crashes it (SIGSEGV) as the interpreter exits under that thread."""

    pressed = False

    def __call__(self, signum: int, frame: Any) -> None:
        type(self).pressed = True
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the second press: KeyboardInterrupt at once
        _warn("Ctrl-C: stopping once the runs in progress are stored (press it again to stop at once)")

    @classmethod
    def check(cls) -> None:
        if cls.pressed:
            cls.pressed = False
            raise KeyboardInterrupt


_CTRL_C = _CtrlC()


def script() -> None:
    """Entry point of the ``ocokit`` console script and of ``python -m ocokit.cli``."""
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C before the command group took over (while importing it)
        _error("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    script()

"""The CLI's persistent compilation cache: where it lives, how it is overridden and turned off."""

import sys

import jax
import pytest

from ocokit import cli

_OPTIONS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs", "jax_compilation_cache_max_size")


@pytest.fixture
def no_jax_cache():
    """Run with no JAX cache folder configured (the suite's own is restored afterwards)."""
    saved = {name: getattr(jax.config, name) for name in _OPTIONS}
    jax.config.update("jax_compilation_cache_dir", None)
    yield
    for name, value in saved.items():
        jax.config.update(name, value)


def test_cache_folder_from_the_environment_or_the_user_cache_folder(no_jax_cache, monkeypatch, tmp_path):
    monkeypatch.setenv(cli.CACHE_ENV_VAR, str(tmp_path / "mine"))
    assert cli._compilation_cache() == tmp_path / "mine"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "mine")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0
    assert jax.config.jax_compilation_cache_max_size == cli._CACHE_MAX_BYTES

    jax.config.update("jax_compilation_cache_dir", None)
    monkeypatch.delenv(cli.CACHE_ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform not in ("darwin", "win32"):
        assert cli._compilation_cache() == tmp_path / "xdg" / "ocokit" / "jax-compilation-cache"


def test_an_empty_variable_turns_the_cache_off_and_jax_own_setting_wins(no_jax_cache, monkeypatch, tmp_path):
    monkeypatch.setenv(cli.CACHE_ENV_VAR, "")
    assert cli._compilation_cache() is None and jax.config.jax_compilation_cache_dir is None
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "jax"))
    monkeypatch.setenv(cli.CACHE_ENV_VAR, str(tmp_path / "mine"))
    assert cli._compilation_cache() == tmp_path / "jax"


def test_the_cache_command_shows_and_clears_only_the_cached_programs(no_jax_cache, monkeypatch, tmp_path):
    from typer.testing import CliRunner

    folder = tmp_path / "cache"
    folder.mkdir()
    ours = [folder / "jit_f-1-cache", folder / "jit_f-1-atime"]
    for path in ours:
        path.write_bytes(b"x" * 1024)
    theirs = [folder / "notes.txt"]  # a folder the user also keeps other things in
    for path in theirs:
        path.write_text("mine")
    monkeypatch.setenv(cli.CACHE_ENV_VAR, str(folder))
    shown = CliRunner().invoke(cli.app, ["cache"])
    assert shown.exit_code == 0, shown.output
    assert "JAX's compilation cache: 2 files" in shown.output
    assert str(folder) in shown.output.replace("\n", "") and all(path.exists() for path in ours)
    cleared = CliRunner().invoke(cli.app, ["cache", "--clear"])
    assert cleared.exit_code == 0, cleared.output
    assert not any(path.exists() for path in ours) and all(path.exists() for path in theirs)
    monkeypatch.setenv(cli.CACHE_ENV_VAR, "")
    jax.config.update("jax_compilation_cache_dir", None)
    off = CliRunner().invoke(cli.app, ["cache"])
    assert off.exit_code == 0 and "the cache is off" in off.output

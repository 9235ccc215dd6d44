"""The CLI's persistent compilation cache: where it lives, how it is overridden and turned off."""

import sys

import jax
import pytest

from ocokit import _executables, cli

_OPTIONS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs", "jax_compilation_cache_max_size")


@pytest.fixture
def no_jax_cache():
    """Run with no JAX cache folder configured (the suite's own is restored afterwards)."""
    saved = {name: getattr(jax.config, name) for name in _OPTIONS}
    programs = _executables.folder()  # the CLI's cache also turns on the engine's (ocokit._executables)
    jax.config.update("jax_compilation_cache_dir", None)
    yield
    for name, value in saved.items():
        jax.config.update(name, value)
    _executables.use(programs)


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

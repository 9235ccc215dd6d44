"""Hygiene of the public API: every exported name is documented (optax coverage_check, river check_doc)."""

import inspect

import pytest

import ocokit
import ocokit.experiments

MODULES = [ocokit, ocokit.sets, ocokit.problems, ocokit.algorithms, ocokit.experiments]
NAMES = [(m, n) for m in MODULES for n in m.__all__]


@pytest.mark.parametrize(("module", "name"), NAMES, ids=[f"{m.__name__}.{n}" for m, n in NAMES])
def test_exported_name_is_documented(module, name):
    obj = getattr(module, name)
    if name == "__version__":
        return
    assert inspect.getdoc(obj), f"{module.__name__}.{name} has no docstring"


@pytest.mark.integration
def test_library_does_not_flip_x64_on_import():
    import subprocess
    import sys

    code = "import jax, ocokit, ocokit.experiments, ocokit.cli; print(jax.config.jax_enable_x64)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

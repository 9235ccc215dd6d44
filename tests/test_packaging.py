"""The package as released: one version, the license, py.typed, and dependencies that match the imports."""

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from typer.testing import CliRunner

import ocokit
from ocokit import cli

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
IMPORT_NAMES = {"pyyaml": "yaml", "scikit-learn": "sklearn"}  # distributions imported under another name


def test_the_version_is_written_once_and_printed():
    assert "version" in PYPROJECT["project"]["dynamic"] and "version" not in PYPROJECT["project"]
    assert ocokit.__version__ == metadata.version("ocokit")
    result = CliRunner().invoke(cli.app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"ocokit {ocokit.__version__}"


def test_license_and_typing_marker_ship():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))  # SPDX string only
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (Path(ocokit.__file__).parent / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["ocokit"]


def _dist_name(requirement: str) -> str:
    name = requirement.split(";")[0]
    for sep in "[<>=!~ ":
        name = name.split(sep)[0]
    return IMPORT_NAMES.get(name.lower(), name.lower().replace("-", "_"))


# Core dependencies that ocokit never imports itself: another library imports them for a feature ocokit turns on.
USED_BY_A_DEPENDENCY = {
    "filelock": "JAX's persistent compilation cache locks its files with it when the CLI bounds the cache's size",
}


def test_dependencies_match_the_imports():
    """Module-level imports are core dependencies, lazy ones core or extra; every core dependency is imported."""
    core = {_dist_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = {_dist_name(r) for reqs in PYPROJECT["project"]["optional-dependencies"].values() for r in reqs}
    top, lazy = set(), set()
    for path in (ROOT / "src" / "ocokit").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                for name in names:
                    root = name.split(".")[0]
                    if root != "ocokit" and root not in sys.stdlib_module_names:
                        (top if node.col_offset == 0 else lazy).add(root)
    assert top <= core, f"imported at module level but not a dependency: {sorted(top - core)}"
    assert lazy <= core | extras, f"imported but declared nowhere: {sorted(lazy - core - extras)}"
    used = top | lazy | set(USED_BY_A_DEPENDENCY)
    assert core <= used, f"declared but never imported: {sorted(core - used)}"
    assert set(USED_BY_A_DEPENDENCY) <= core - top - lazy, "USED_BY_A_DEPENDENCY lists a package ocokit imports"

"""Results on disk: content keys (every collision of a printed-configuration hash), atomic writes, round trips."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import equinox
import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ocokit import fingerprints, results
from ocokit.algorithms import OGD
from ocokit.problems import CustomProblem, JobScheduling
from ocokit.sets import L2Ball

# ------------------------------------------------------------------------------------------ content keys


def _load_user_module(tmp_path: Path, folder: str, source: str):
    """Import ``source`` as a module named ``user`` (same name each time, as two users' scripts would be)."""
    path = tmp_path / folder / "user.py"
    path.parent.mkdir()
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("user", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _problem(loss, data=None):
    return CustomProblem(domain=L2Ball(3), loss=loss, data=jnp.ones((4, 3)) if data is None else data)


def _squared(c, x):
    return jnp.sum((x - c) ** 2)


def _key(config, **kw):
    return results.run_path(Path("out"), "exp", "OGD", config, **kw).name


def test_same_named_loss_functions_with_different_bodies_get_different_keys(tmp_path):
    squared = _load_user_module(
        tmp_path, "a", "import jax.numpy as jnp\ndef loss(c, x):\n    return jnp.sum((x - c) ** 2)\n"
    )
    absolute = _load_user_module(
        tmp_path, "b", "import jax.numpy as jnp\ndef loss(c, x):\n    return jnp.sum(jnp.abs(x - c))\n"
    )
    assert (
        squared.loss.__qualname__ == absolute.loss.__qualname__ and squared.loss.__module__ == absolute.loss.__module__
    )
    assert _key({"problem": _problem(squared.loss)}) != _key({"problem": _problem(absolute.loss)})


def test_functions_without_source_are_keyed_by_bytecode_and_closure():
    def compiled(body):  # no file behind it: inspect.getsource fails, the bytecode decides
        namespace = {"jnp": jnp}
        exec(compile(f"def loss(c, x):\n    return {body}\n", "<user>", "exec"), namespace)
        return namespace["loss"]

    assert fingerprints.fingerprint(compiled("jnp.sum((x - c) ** 2)")) == fingerprints.fingerprint(
        compiled("jnp.sum((x - c) ** 2)")
    )
    assert fingerprints.fingerprint(compiled("jnp.sum((x - c) ** 2)")) != fingerprints.fingerprint(
        compiled("jnp.sum((x - c) ** 3)")
    )

    def scaled(s):
        return lambda c, x: s * jnp.sum((x - c) ** 2)

    assert fingerprints.fingerprint(scaled(1.0)) != fingerprints.fingerprint(scaled(2.0))  # same source, other closure


def test_lambdas_on_one_line_differ():
    first, second = (lambda x: x + 1), (lambda x: x + 2)  # one source line for both: the bytecode tells them apart
    assert fingerprints.fingerprint(first) != fingerprints.fingerprint(second)


def test_hyperparameters_are_keyed_exactly():
    assert jax.config.jax_enable_x64  # tests run in float64 (conftest): 0.1 + 1e-9 is another number
    assert _key({"learner": OGD(eta=0.1)}) != _key({"learner": OGD(eta=0.1 + 1e-9)})
    assert _key({"eta": 0.1}) != _key({"eta": 0.1 + 1e-9})
    assert _key({"eta": 0.1}) != _key({"eta": np.float32(0.1)})  # dtype is content


def test_arrays_differing_in_one_entry_get_different_keys():
    prices = np.linspace(10.0, 80.0, 24 * 3).reshape(24, 3)
    other = prices.copy()
    other[5, 1] += 1.0  # same shape, same maximum, one hour's price moved
    assert other.max() == prices.max()
    assert _key({"problem": JobScheduling(prices)}) != _key({"problem": JobScheduling(other)})
    assert _key({"problem": _problem(_squared, jnp.ones((4, 3)))}) != _key(
        {"problem": _problem(_squared, jnp.ones((4, 3)).at[2, 1].set(2.0))}
    )
    assert _key({"a": np.zeros(4)}) != _key({"a": np.zeros((2, 2))})  # shape is content


def test_a_library_version_change_gets_a_new_key_unless_reuse_across_versions(tmp_path, monkeypatch):
    config = {"learner": OGD(eta=0.1), "seed": 0}
    old = results.run_path(tmp_path, "exp", "OGD", config)
    results.save_records(old, {"loss": np.zeros(2)}, {"seed": 0})
    monkeypatch.setattr(equinox, "__version__", "999.0")  # an upgrade
    new = results.run_path(tmp_path, "exp", "OGD", config)
    assert new != old and new.parent == old.parent and not new.exists()
    assert results.run_path(tmp_path, "exp", "OGD", config, reuse_across_versions=True) == old
    assert fingerprints.config_hash(config) != fingerprints.config_hash(config, reuse_across_versions=True)
    assert fingerprints.config_hash(config, reuse_across_versions=True).endswith("-any")
    monkeypatch.undo()
    assert results.run_path(tmp_path, "exp", "OGD", config) == old


def test_equal_configs_built_twice_get_the_same_key():
    def build():
        problem = _problem(lambda c, x: jnp.sum((x - c) ** 2))
        return {"learner": OGD(eta=0.1), "problem": problem, "T": 10, "options": {"b": [1, 2], "a": {3, 4}}}

    assert _key(build()) == _key(build())
    assert _key({"x": 1, "y": [1, 2]}) == _key({"y": [1, 2], "x": 1})  # mappings regardless of order
    assert _key({"learner": "OGD(eta=0.1)", "seed": 0}) == _key({"seed": 0, "learner": "OGD(eta=0.1)"})  # strings


@pytest.mark.integration
def test_fingerprint_is_the_same_in_another_process():
    code = (
        "import jax; jax.config.update('jax_enable_x64', True); import jax.numpy as jnp, numpy as np;"
        "from ocokit import fingerprints; from ocokit.algorithms import OGD;"
        "print(fingerprints.fingerprint({'s': {'b', 'a'}, 'l': OGD(eta=0.5), 'a': np.arange(3.0), 'f': jnp.sum}))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "7", "JAX_PLATFORMS": "cpu"}
    theirs = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    ours = fingerprints.fingerprint({"s": {"a", "b"}, "l": OGD(eta=0.5), "a": np.arange(3.0), "f": jnp.sum})
    assert theirs.stdout.strip() == ours


def test_unreadable_objects_are_refused():
    with pytest.raises(TypeError, match="traced value"):
        jax.jit(fingerprints.fingerprint)(jnp.ones(2))
    with pytest.raises(TypeError, match=r"cannot fingerprint builtins\.object"):
        fingerprints.fingerprint(object())


def test_run_path_is_a_hive_partition(tmp_path):
    p = results.run_path(tmp_path, "exp", "SC OFW/TVC", {"seed": 3})
    assert p.parent.parent.parent.parent == tmp_path / "runs" and p.suffix == ".parquet"
    assert [q.split("=")[0] for q in p.relative_to(tmp_path / "runs").parts[:3]] == ["experiment", "algorithm", "seed"]
    assert p.parent.name == "seed=3" and "/" not in p.parent.parent.name and p.name.startswith("part-")
    assert results.run_path(tmp_path, "exp", "A", {"T": 5}).parent.name == "seed=-1"
    with pytest.raises(ValueError, match="algorithm must be a non-empty string"):
        results.run_path(tmp_path, "exp", "", {})


# ------------------------------------------------------------------------------------------ records


def test_records_round_trip_with_dtypes(tmp_path):
    path = tmp_path / "runs" / "part-k.parquet"
    columns = {"t": np.arange(1, 4), "loss": np.array([1.0, 2.5, -3.0]), "ok": np.array([True, False, True])}
    columns["f32"] = np.array([0.1, 0.2, 0.3], np.float32)
    saved = results.save_records(path, columns, {"seed": 4, "T": 3, "learner": OGD(eta=0.5)})
    cols, meta = results.load_records(path)
    assert list(cols) == list(columns)
    for name, col in columns.items():
        assert cols[name].dtype == col.dtype
        np.testing.assert_array_equal(cols[name], col)
    assert meta["seed"] == 4 and meta["provenance"]["key"] == "k"
    # save_records returns what the file reads back (the harness keeps it instead of reading the file again)
    assert list(saved[0]) == list(cols) and saved[1] == meta
    for name, col in cols.items():
        assert saved[0][name].dtype == col.dtype and saved[0][name] is not columns[name]
        np.testing.assert_array_equal(saved[0][name], col)
    assert [p.name for p in path.parent.iterdir()] == ["part-k.parquet"]


def test_a_run_file_has_the_tidy_schema_and_its_folder_reads_back_as_its_partition(tmp_path):
    path = results.run_path(tmp_path, "exp", "SC OFW/TVC, λ=1%", {"seed": 3})
    assert path.parent.parent.name == "algorithm=SC%20OFW%2FTVC%2C%20%CE%BB%3D1%25"  # URI-encoded, as pyarrow writes
    results.save_records(path, {"loss": np.arange(3.0), "ok": np.ones(3, bool)}, {"T": 3})
    tidy = [("key", pa.string()), ("T", pa.int64()), ("round", pa.int64()), ("quantity", pa.string())]
    assert pq.read_schema(path).remove_metadata() == pa.schema([*tidy, ("value", pa.float64())])
    table = results.dataset(tmp_path).to_table()
    assert set(table["algorithm"].to_pylist()) == {"SC OFW/TVC, λ=1%"} and set(table["seed"].to_pylist()) == {3}
    assert table["key"].to_pylist() == [path.stem.removeprefix("part-")] * 6 and set(table["T"].to_pylist()) == {3}
    assert table["quantity"].to_pylist() == ["loss"] * 3 + ["ok"] * 3 and table["round"].to_pylist() == [1, 2, 3] * 2


def test_bad_columns_are_refused(tmp_path):
    with pytest.raises(ValueError, match="column 'x' must be 1-D bool, int or float"):
        results.save_records(tmp_path / "a.parquet", {"x": np.zeros((2, 2))}, {})
    with pytest.raises(ValueError, match="equal lengths"):
        results.save_records(tmp_path / "a.parquet", {"x": np.zeros(2), "y": np.zeros(3)}, {})
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_nothing_behind(tmp_path):
    class Boom:
        def __array__(self, *a, **k):
            raise RuntimeError("boom")

    with pytest.raises(Exception, match=r"boom|Could not convert|object"):
        results.save_records(tmp_path / "x.parquet", {"bad": [Boom()]}, {})
    assert list(tmp_path.iterdir()) == []


def test_atomic_json_overwrites(tmp_path):
    results.atomic_write_json(tmp_path / "s.json", {"a": np.float64(1.5), "learner": OGD(eta=0.25)})
    assert "OGD(eta=" in json.loads((tmp_path / "s.json").read_text())["learner"]
    results.atomic_write_json(tmp_path / "s.json", {"a": 2})
    assert json.loads((tmp_path / "s.json").read_text()) == {"a": 2}
    assert len(list(tmp_path.iterdir())) == 1

"""Results on disk: hashing, atomic writes, round trips."""

import numpy as np
import pytest

from ocokit import results


def test_config_hash_is_stable_and_order_free():
    a = results.config_hash({"x": 1, "y": [1, 2]})
    assert a == results.config_hash({"y": [1, 2], "x": 1})
    assert a != results.config_hash({"x": 2, "y": [1, 2]})


def test_records_round_trip(tmp_path):
    path = tmp_path / "runs" / "a.parquet"
    results.save_records(path, {"t": np.arange(3), "loss": np.array([1.0, 2.0, 3.0])}, {"seed": 4})
    cols, meta = results.load_records(path)
    np.testing.assert_array_equal(cols["loss"], [1.0, 2.0, 3.0])
    assert meta == {"seed": 4}
    assert [p.name for p in path.parent.iterdir()] == ["a.parquet"]


def test_failed_write_leaves_nothing_behind(tmp_path):
    class Boom:
        def __array__(self, *a, **k):
            raise RuntimeError("boom")

    with pytest.raises(Exception, match=r"boom|Could not convert|object"):
        results.save_records(tmp_path / "x.parquet", {"bad": [Boom()]}, {})
    assert list(tmp_path.iterdir()) == []


def test_atomic_json_overwrites(tmp_path):
    results.atomic_write_json(tmp_path / "s.json", {"a": np.float64(1.5)})
    results.atomic_write_json(tmp_path / "s.json", {"a": 2})
    assert (tmp_path / "s.json").read_text().strip().endswith("}")
    assert len(list(tmp_path.iterdir())) == 1


def test_run_path_sanitises_labels(tmp_path):
    p = results.run_path(tmp_path, "exp", "SC OFW/TVC", {"seed": 0})
    assert p.parent == tmp_path / "runs" and "/" not in p.name and p.suffix == ".parquet"

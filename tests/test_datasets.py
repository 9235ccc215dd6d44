"""Dataset loaders: real files through OCOKIT_DATA, generated files for the error paths."""

import numpy as np
import pytest

from ocokit import datasets


def test_movielens_real(data_dir):
    r = datasets.load_movielens(data_dir)
    assert (r.n_users, r.n_items) == (943, 1682)
    assert r.ratings.size == 100_000 and r.ratings.min() == 1 and r.ratings.max() == 5
    assert datasets.verify("ml-100k/u.data", data_dir / "ml-100k" / "u.data")


def test_filmtrust_real(data_dir):
    r = datasets.load_filmtrust(data_dir)
    assert (r.n_users, r.n_items) == (1508, 2071)
    assert r.ratings.size == 35_494 and r.ratings.min() >= 0.5 and r.ratings.max() <= 4.0  # 35,497 lines


def test_filmtrust_real_duplicates_keep_their_last_rating(data_dir):
    r = datasets.load_filmtrust(data_dir)
    pairs = {(u, i): v for u, i, v in zip(r.users.tolist(), r.items.tolist(), r.ratings.tolist(), strict=True)}
    assert len(pairs) == r.ratings.size  # each pair once
    # user 308 rated items 12, 207 and 235 twice: 4 then 4, 3.5 then 3, 4 then 1.5 (1-based ids in the file)
    assert [pairs[307, i - 1] for i in (12, 207, 235)] == [4.0, 3.0, 1.5]


@pytest.mark.parametrize("loader", ["movielens", "filmtrust"])
def test_duplicated_pairs_keep_the_last_rating_at_its_line(tmp_path, loader):
    rows = [(2, 1, 1.5), (1, 1, 2.0), (2, 1, 3.0), (1, 2, 1.0), (2, 1, 2.5)]
    sep, tail = ("\t", "\t0") if loader == "movielens" else (" ", "")
    f = tmp_path / "ratings"
    f.write_text("".join(f"{u}{sep}{i}{sep}{v:g}{tail}\n" for u, i, v in rows))
    r = getattr(datasets, f"load_{loader}")(f)
    assert list(zip(r.users.tolist(), r.items.tolist(), r.ratings.tolist(), strict=True)) == [
        (0, 0, 2.0),
        (0, 1, 1.0),
        (1, 0, 2.5),
    ]
    assert (r.n_users, r.n_items) == (2, 2) and r.dense()[1, 0] == 2.5


def test_electricity_real(data_dir):
    prices = datasets.load_electricity_prices(path=data_dir)
    assert prices.shape == (8760, 10) and np.all(np.isfinite(prices))


def test_env_var_is_used(data_dir, monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(data_dir))
    assert datasets.load_filmtrust().n_users == 1508


def test_missing_file_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError, match="OCOKIT_DATA"):
        datasets.load_movielens()
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        datasets.load_movielens(tmp_path)


def test_small_generated_movielens_file(tmp_path):
    (tmp_path / "ml-100k").mkdir()
    (tmp_path / "ml-100k" / "u.data").write_text("1\t2\t5\t0\n3\t1\t1\t0\n")
    r = datasets.load_movielens(tmp_path)
    assert (r.n_users, r.n_items) == (3, 2)
    np.testing.assert_array_equal(r.dense(), [[0, 5], [0, 0], [1, 0]])
    assert not datasets.verify("ml-100k/u.data", tmp_path / "ml-100k" / "u.data")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1\t2\n", "expected at least 3 fields"),
        ("1\tx\t3\t0\n", "non-numeric"),
        ("0\t1\t3\t0\n", "1-based"),
        ("1\t1\t9\t0\n", r"\[1, 5\]"),
        ("", "no ratings"),
    ],
)
def test_malformed_movielens_names_file_and_line(tmp_path, content, message):
    f = tmp_path / "u.data"
    f.write_text(content)
    with pytest.raises(ValueError, match=message):
        datasets.load_movielens(f)


def test_electricity_bad_price(tmp_path):
    d = tmp_path / "electricity-prices-2023"
    d.mkdir()
    (d / "FR.csv").write_text("Datetime (UTC),Datetime (Local),Price (USD/MWh)\na,b,1.0\na,b,oops\n")
    with pytest.raises(ValueError, match=r"FR\.csv:3"):
        datasets.load_electricity_prices(["FR"], path=tmp_path)
    (d / "FR.csv").write_text("Datetime (UTC),Datetime (Local),Price (USD/MWh)\na,b,\na,b,2.0\na,b,\n")
    np.testing.assert_array_equal(datasets.load_electricity_prices(["FR"], path=tmp_path)[:, 0], [2.0, 2.0, 2.0])


def test_nyiso_loader(tmp_path):
    f = tmp_path / "nyiso.csv"
    f.write_text(
        '"Time Stamp","Name","PTID","LBMP ($/MWHr)"\n'
        "05/01/2017 00:05:00,CAPITL,1,20.5\n05/01/2017 00:05:00,WEST,2,18.0\n"
        "05/01/2017 00:10:00,CAPITL,1,21.0\n05/01/2017 00:10:00,WEST,2,19.5\n"
    )
    prices, zones = datasets.load_nyiso_5min(f)
    assert zones == ["CAPITL", "WEST"]
    np.testing.assert_array_equal(prices, [[20.5, 18.0], [21.0, 19.5]])
    with pytest.raises(ValueError, match="missing"):
        datasets.load_nyiso_5min(f, zones=["CAPITL", "NYC"])

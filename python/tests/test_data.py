"""fedc.data: readers, clients and batches as numpy, samplers and partitioners."""

import glob
import gzip
import json
import os

import numpy as np
import pytest

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
# FEDC_DATA: laid out as ../shared/data (ctest sets it: real sets or small ones), else ../shared/data
FEMNIST = os.path.join(os.environ.get("FEDC_DATA") or os.path.join(HERE, "..", "..", "..", "shared", "data"),
                       "femnist-leaf", "train")


def leaf_users():
    """The LEAF files read by Python's json: {user: (x, y)}, in the files' order."""
    users = {}
    for path in sorted(glob.glob(os.path.join(FEMNIST, "*.json.gz"))):
        with gzip.open(path, "rt") as f:
            d = json.load(f)
        for u in d["users"]:
            users[u] = d["user_data"][u]
    return users


@pytest.fixture(scope="module")
def femnist():
    if not glob.glob(os.path.join(FEMNIST, "*.json.gz")):
        pytest.skip("no FEMNIST at %s" % FEMNIST)
    with fedc.data.open(FEMNIST) as ds:
        yield ds


def test_leaf_clients_match_pythons_json(femnist):
    users = leaf_users()
    assert femnist.format == "leaf"
    assert sorted(femnist.client_ids) == sorted(users)
    assert femnist.num_examples == sum(len(v["y"]) for v in users.values())
    for i in (0, len(femnist) - 1):
        c = femnist[i]
        ref = users[c.id]
        assert c.num_examples == len(ref["y"]) == femnist.client_examples(i)
        assert c["x"].dtype == np.float32 and c["x"].shape == (c.num_examples, 784)
        np.testing.assert_array_equal(c["x"], np.array(ref["x"], np.float32))
        np.testing.assert_array_equal(c["y"], np.array(ref["y"], np.int32))
        assert femnist.find(c.id) == i and femnist[c.id].id == c.id
        c.close()


def test_batches_are_fedjaxs(femnist):
    c = femnist[0]
    n = c.num_examples
    b = c.padded_batch(16)
    steps = -(-n // 16)
    assert b["steps"] == steps and b["x"].shape == (steps, 16, 784) and b["y"].shape == (steps, 16)
    assert b["mask"].sum() == n and (b["mask"].reshape(-1)[:n] == 1).all()
    np.testing.assert_array_equal(b["x"].reshape(-1, 784)[:n], c["x"])
    np.testing.assert_array_equal(b["y"].reshape(-1)[:n], c["y"])
    d = c.batch(16, drop_remainder=True)
    assert d["steps"] == n // 16 and d["mask"].all()
    s1 = c.shuffle_repeat_batch(8, num_epochs=2, seed=1, round=3, client=0)
    s2 = c.shuffle_repeat_batch(8, num_epochs=2, seed=1, round=3, client=0)
    s3 = c.shuffle_repeat_batch(8, num_epochs=2, seed=2, round=3, client=0)
    np.testing.assert_array_equal(s1["y"], s2["y"])
    assert not np.array_equal(s1["y"], s3["y"])
    real = s1["y"].reshape(-1)[s1["mask"].reshape(-1) == 1]
    # Two epochs of every example (a last partial batch wraps into more of them).
    assert 2 * n <= len(real) < 2 * n + 8
    assert (np.bincount(real, minlength=62) >= 2 * np.bincount(c["y"], minlength=62)).all()
    with pytest.raises(fedc.Error):
        c.padded_batch(0)


def test_slices_and_holdout(femnist):
    sl = femnist.slice(2, 5)
    assert sl.client_ids == femnist.client_ids[2:5]
    train, test = femnist.holdout(0.25)
    n0 = femnist.client_examples(0)
    assert train.client_examples(0) == max(1, int(0.75 * n0))
    np.testing.assert_array_equal(train[0]["y"], femnist[0]["y"][:train.client_examples(0)])
    del femnist  # the splits keep their parent alive
    assert len(sl) == 3 and sl[0].num_examples > 0


def test_iterating_loads_each_client():
    ds = fedc.data.synthetic_fedprox(1.0, 1.0, 6, seed=3)
    assert len(ds) == 6 and ds.format == "memory"
    total = 0
    for c in ds:
        assert c["x"].shape == (c.num_examples, 60) and c["y"].dtype == np.int32
        assert c["y"].min() >= 0 and c["y"].max() < 10
        total += c.num_examples
    assert total == ds.num_examples
    z = fedc.data.synthetic_zipf(3, 4, 7, 50, s=1.1, seed=2)
    t = z[1]["tokens"]
    assert t.shape == (4, 7) and t.dtype == np.int32 and 0 <= t.min() and t.max() < 50


def test_samplers_are_seeded():
    a = fedc.data.sample_clients(100, 10, seed=5, round=2)
    assert len(set(a.tolist())) == 10 and (np.diff(a) > 0).all() and a.max() < 100
    np.testing.assert_array_equal(a, fedc.data.sample_clients(100, 10, seed=5, round=2))
    assert not np.array_equal(a, fedc.data.sample_clients(100, 10, seed=5, round=3))
    epoch = np.concatenate([fedc.data.sample_clients_epochs(20, 5, seed=1, round=r) for r in range(4)])
    assert sorted(epoch.tolist()) == list(range(20))
    with pytest.raises(fedc.Error):
        fedc.data.sample_clients(5, 6, seed=0, round=0)


def test_partitioners():
    iid = fedc.data.partition_iid(100, 4, seed=1)
    assert iid.shape == (100,) and sorted(np.bincount(iid).tolist()) == [25, 25, 25, 25]
    labels = np.repeat(np.arange(10), 20)
    sh = fedc.data.partition_shards(labels, 10, 2, seed=0)
    for k in range(10):  # two shards of 10 examples each, one label a shard
        assert (sh == k).sum() == 20 and len(set(labels[sh == k])) <= 2
    dr = fedc.data.partition_dirichlet(labels, 10, 5, 0.1, seed=0)
    assert dr.shape == (200,) and dr.min() >= 0 and dr.max() < 5
    # Few labels per client at alpha 0.1.
    assert np.mean([len(set(labels[dr == k])) for k in range(5)]) < 8


def test_partition_a_dataset():
    central = fedc.data.synthetic_fedprox(0, 0, 1, seed=1)
    n = central.num_examples
    parts = central.partition(fedc.data.partition_iid(n, 3, seed=2), 3)
    assert len(parts) == 3 and parts.num_examples == n and parts.client_ids == ["0", "1", "2"]


def test_open_errors():
    with pytest.raises(fedc.Error) as e:
        fedc.data.open("/nonexistent/data")
    assert e.value.status == fedc.EIO and "/nonexistent/data" in e.value.message
    with pytest.raises(fedc.Error):
        fedc.data.open(HERE, format="xml")


def test_groups_of_clients(tmp_path):
    # fedc train --groups: a Dirichlet draw of the groups' shares, the same from the same
    # seed; fedc.train's options give the same groups (contiguous, Dirichlet, a file)
    a = fedc.data.partition_groups_dirichlet(40, 3, 0.5, seed=4)
    assert a.dtype == np.int32 and a.min() >= 0 and a.max() < 3
    assert (a == fedc.data.partition_groups_dirichlet(40, 3, 0.5, seed=4)).all()
    assert (np.bincount(fedc.data.partition_groups_dirichlet(12, 4, 1e6, seed=1), minlength=4) == 3).all()
    ds = fedc.data.synthetic_zipf(6, 3, 5, 20, seed=1)
    assert fedc.client_groups(ds) == (None, 0)
    assert fedc.client_groups(ds, groups=4) == ([0, 0, 1, 1, 2, 3], 4)
    assert fedc.client_groups(ds, groups=3, groups_alpha=0.5, seed=4)[0] == \
        list(fedc.data.partition_groups_dirichlet(6, 3, 0.5, seed=4))
    f = tmp_path / "groups.csv"
    f.write_text("client_id,group\n" + "".join("%s,%d\n" % (c, i % 2) for i, c in enumerate(ds.client_ids)))
    assert fedc.client_groups(ds, groups_file=str(f)) == ([0, 1, 0, 1, 0, 1], 2)
    f.write_text("nobody,0\n")
    with pytest.raises(fedc.Error, match="groups.csv:1: client \"nobody\" is not a client|has no line"):
        fedc.client_groups(ds, groups_file=str(f))

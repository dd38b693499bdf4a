"""fedc.safetensors against fedc's own writer and reader (fedc train's checkpoint, and
bytes fedc.flower hands to fedc_plan_worker_run)."""

import os

import numpy as np

import fedc
from fedc import safetensors


def test_round_trip_keeps_dtype_shape_bits_and_order():
    rng = np.random.default_rng(1)
    t = {"b/w": rng.standard_normal((3, 4)).astype(np.float32), "a": np.array(2.5, np.float64),
         "i": np.arange(5, dtype=np.int32), "u": np.array([[1, 2]], np.uint8), "m": np.array([True, False]),
         "e": np.zeros((2, 0), np.float32), "t": rng.standard_normal((4, 3)).astype(np.float32).T}
    blob = safetensors.encode(t, {"k": "v"})
    back = safetensors.decode(blob)
    assert list(back) == list(t)
    for k in t:
        assert back[k].dtype == t[k].dtype and back[k].shape == t[k].shape, k
        assert back[k].tobytes() == np.ascontiguousarray(t[k]).tobytes(), k
    n = int(np.frombuffer(blob[:8], "<u8")[0])
    assert (8 + n) % 8 == 0 and b'"__metadata__":{"k":"v"}' in blob[:8 + n]


def test_reads_what_fedc_train_writes(tmp_path):
    data = os.environ.get("FEDC_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
    path = os.path.join(data, "heart-disease-uci")
    if not os.path.exists(path):
        import pytest
        pytest.skip("no heart-disease-uci under FEDC_DATA or ../shared/data")
    fedc.train(path, model="heart", rounds=1, clients_per_round=2, checkpoint_every=1, out_dir=str(tmp_path))
    ck = safetensors.read(os.path.join(tmp_path, "checkpoint.safetensors"))
    m = fedc.models.Model("heart")
    assert [(k, v.dtype, v.shape) for k, v in ck.items()] == \
        [(name, np.dtype(np.float32), spec.shape) for name, spec in m.params]
    assert all(np.isfinite(v).all() and np.abs(v).max() > 0 for v in ck.values())

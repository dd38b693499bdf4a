"""fedc.models (the built-in models by name, traced) and MLIR export from Python."""

import shutil
import subprocess

import numpy as np
import pytest

import fedc

RNG = np.random.default_rng(9)


def logistic_batch(n=6):
    x = RNG.uniform(size=(n, 28, 28, 1)).astype(np.float32)
    y = RNG.integers(0, 62, size=n).astype(np.int32)
    mask = np.ones(n, np.float32)
    mask[-2:] = 0  # padding rows
    return x, y, mask


def test_logistic_matches_numpy():
    m = fedc.models.Model("logistic")
    assert m.name == "logistic" and m.num_classes == 62 and m.size == 48670
    assert m.params == [("dense1/w", fedc.f32[784, 62]), ("dense1/b", fedc.f32[62])]
    assert m.input_spec(6) == fedc.f32[6, 28, 28, 1] and m.label_spec(6) == fedc.i32[6]
    p = m.init(seed=3)
    x, y, mask = logistic_batch()
    out = fedc.program(lambda p, x, y, mask: m.apply(p, x, y, mask))(p, x, y, mask)
    z = x.reshape(6, -1).astype(np.float64) @ p["dense1"]["w"] + p["dense1"]["b"]
    lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
    ce = lse - z[np.arange(6), y]
    np.testing.assert_allclose(out["loss"], (ce * mask).sum() / mask.sum(), rtol=1e-5)
    np.testing.assert_allclose(out["logits"], z, rtol=1e-4, atol=1e-5)
    assert out["count"] == 4 and out["correct"] == ((z.argmax(1) == y) * mask).sum()


def test_grad_through_a_model_and_init_is_seeded():
    m = fedc.models.Model("logistic")
    p = m.init(0)
    assert np.array_equal(p["dense1"]["w"], m.init(0)["dense1"]["w"])
    assert not np.array_equal(p["dense1"]["w"], m.init(1)["dense1"]["w"])
    x, y, mask = logistic_batch()
    g = fedc.grad(lambda p, x, y, mask: m.apply(p, x, y, mask)["loss"])(p, x, y, mask)
    z = x.reshape(6, -1).astype(np.float64) @ p["dense1"]["w"] + p["dense1"]["b"]
    s = np.exp(z - z.max(1, keepdims=True))
    s /= s.sum(1, keepdims=True)
    s[np.arange(6), y] -= 1
    s *= (mask / mask.sum())[:, None]
    np.testing.assert_allclose(g["dense1"]["b"], s.sum(0), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(g["dense1"]["w"], x.reshape(6, -1).T @ s, rtol=1e-4, atol=1e-7)


def test_model_options_and_errors():
    cnn = fedc.models.Model("cnn", num_classes=10)
    assert cnn.params[-1] == ("dense2/b", fedc.f32[10]) and cnn.num_classes == 10
    with pytest.raises(fedc.Error) as e:
        fedc.models.Model("resnet")
    assert "unknown name" in e.value.message and "logistic" in e.value.message
    with pytest.raises(TypeError):
        fedc.models.Model("cnn", classes=10)
    m = fedc.models.Model("logistic")
    with pytest.raises(KeyError):
        fedc.trace(lambda p, x, y, mask: m.apply(p, x, y, mask)["loss"],
                   {"dense1": {"w": fedc.f32[784, 62]}}, *logistic_batch())


@pytest.mark.parametrize("name,options", [("logistic", {}), ("dense", {}), ("cnn", {}),
                                          ("shakespeare_lstm", {"hidden": 8}),
                                          ("stackoverflow_lstm", {"hidden": 8, "num_classes": 20}),
                                          ("stackoverflow_lstm", {"hidden": 8, "num_classes": 20,
                                                                  "tied_embeddings": True})])
def test_haiku_names_cover_every_parameter(name, options):
    # every fedc parameter has one Haiku name, and the two renamings invert each other
    m = fedc.models.Model(name, **options)
    p = m.init(seed=1)
    hk = m.to_haiku(p)
    leaves = [(mod, k) for mod, d in hk.items() for k in d]
    assert len(leaves) == len(set(leaves)) == len(m.params)
    back = m.from_haiku(hk)
    for path, _ in m.params:
        layer, leaf = path.split("/")
        assert back[layer][leaf] is p[layer][leaf]
    if name == "cnn":
        assert hk["conv_dropout_module/conv2_d_1"]["w"] is p["conv2"]["w"]
    m.close()


def test_haiku_names_of_a_model_fedjax_lacks():
    m = fedc.models.Model("heart")
    with pytest.raises(KeyError, match="no FedJAX counterpart"):
        m.to_haiku(m.init(0))
    m.close()


def test_mlir_export():
    f = fedc.program(lambda x, w: fedc.tanh(x @ w))
    text = f.trace(np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)).mlir(func_name="layer")
    assert text.startswith("module {") and "func.func @layer" in text
    fed = fedc.trace(lambda w, x: fedc.mean(fedc.broadcast(w) * x),
                     fedc.server(fedc.f32[2]), fedc.clients(fedc.f32[2]))
    with pytest.raises(fedc.Error) as e:
        fed.mlir()
    assert "clients" in e.value.message
    module = fed.mlir(clients=4)
    assert "tensor<4x2xf32>" in module
    opt = shutil.which("mlir-opt-19")
    if opt:  # the module is valid MLIR
        r = subprocess.run([opt], input=module, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr

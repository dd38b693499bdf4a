"""fedc.import_onnx on ONNX files written here with the protobuf wire format by
hand (the standard library only): an MLP's outputs equal numpy's, its
initializers come back by name, and an unsupported op is refused naming it."""

import struct

import numpy as np
import pytest

import fedc
from fedc import _lib

pytestmark = pytest.mark.skipif(_lib.formats is None, reason="no libfedc_formats.so (FEDC_FORMATS=OFF)")


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    """A protobuf field: int -> varint, bytes/str -> length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value & (1 << 64) - 1)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def tensor(name, array):  # TensorProto: dims 1, data_type 2, name 8, raw_data 9
    dims = b"".join(field(1, d) for d in array.shape)
    return dims + field(2, 1) + field(8, name) + field(9, array.astype("<f4").tobytes())


def node(op, inputs, outputs, name, attrs=b""):  # NodeProto: input 1, output 2, name 3, op_type 4, attribute 5
    return (b"".join(field(1, i) for i in inputs) + b"".join(field(2, o) for o in outputs)
            + field(3, name) + field(4, op) + attrs)


def int_attr(name, value):  # AttributeProto: name 1, i 3, type 20 (INT = 2)
    return field(5, field(1, name) + field(3, value) + field(20, 2))


def value_info(name, dims):  # ValueInfoProto name 1, type 2 -> TypeProto.tensor_type 1 -> elem 1, shape 2
    shape = b"".join(field(1, field(1, d)) for d in dims)
    return field(1, name) + field(2, field(1, field(1, 1) + field(2, shape)))


def model(nodes, inits, inputs, outputs, opset=17):  # ModelProto: ir_version 1, opset_import 8, graph 7
    graph = (b"".join(field(1, n) for n in nodes) + field(2, "g") + b"".join(field(5, t) for t in inits)
             + b"".join(field(11, v) for v in inputs) + b"".join(field(12, v) for v in outputs))
    return field(1, 8) + field(8, field(2, opset)) + field(7, graph)


def test_mlp(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w1 = rng.standard_normal((4, 3)).astype(np.float32)
    b1 = rng.standard_normal(4).astype(np.float32)
    w2 = rng.standard_normal((4, 2)).astype(np.float32)
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model(
        [node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], "fc1", int_attr("transB", 1)),
         node("Relu", ["h"], ["r"], "relu"), node("MatMul", ["r", "w2"], ["y"], "fc2")],
        [tensor("fc1.weight", w1), tensor("fc1.bias", b1), tensor("w2", w2)],
        [value_info("x", [2, 3])], [value_info("y", [2, 2])]))
    program, params = fedc.import_onnx(path)
    assert sorted(params) == ["fc1.bias", "fc1.weight", "w2"]
    np.testing.assert_array_equal(params["fc1.weight"], w1)
    feeds = {"params/" + k: v for k, v in params.items()}
    y = program.run(x=x, **feeds)["y"]
    want = np.maximum(x.astype(np.float64) @ w1.T + b1, 0) @ w2
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    frozen, none = fedc.import_onnx(path, frozen=True)
    assert none == {}
    np.testing.assert_allclose(frozen.run(x=x)["y"], want, rtol=1e-5, atol=1e-6)


def test_refused(tmp_path):
    path = tmp_path / "hardmax.onnx"
    path.write_bytes(model([node("Hardmax", ["x"], ["y"], "odd_one")], [], [value_info("x", [2, 3])],
                           [value_info("y", [2, 3])]))
    with pytest.raises(fedc.Error, match=r"node 'odd_one' \(Hardmax, opset 17\)"):
        fedc.import_onnx(path)
    (tmp_path / "junk.onnx").write_bytes(b"\xff" * 10)
    with pytest.raises(fedc.Error, match="not an ONNX model"):
        fedc.import_onnx(tmp_path / "junk.onnx")

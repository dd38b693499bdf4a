"""Programs: the text format, running on numpy arrays, and the dtype/layout rules."""

import numpy as np
import pytest

import fedc
from fedc.executor import as_input

MATMUL = """fedc program
%0 = input "x" : f32[4,3]
%1 = input "w" : f32[3,2]
%2 = matmul(%0, %1) {transpose_a=0, transpose_b=0} : f32[4,2]
output "y" = %2
"""

FEDERATED = """fedc program
body 0 {
  %0 = input "x" : f32[2]
  %1 = input "y" : f32[2]
  %2 = sub(%0, %1) : f32[2]
  %3 = square(%2) : f32[2]
  %4 = reduce_sum(%3) {axes=[0], keepdims=0} : f32[]
  output "loss" = %4
}
%0 = input "x" : f32[2]@server
%1 = input "y" : f32[2]@clients
%2 = broadcast(%0) : f32[2]@clients
%3 = map(%2, %1) {body=0} : (f32[]@clients)
%4 = result(%3) {index=0} : f32[]@clients
%5 = mean(%4) : f32[]@server
output "loss" = %5
output "per_client" = %4
"""


@pytest.fixture
def mm():
    with fedc.parse(MATMUL) as p:
        yield p


def data():
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    w = (np.arange(6, dtype=np.float32).reshape(3, 2) - 2) / 3
    return x, w


def test_text_round_trip(mm):
    assert mm.text() == MATMUL
    assert fedc.parse(mm.text()).text() == MATMUL
    assert str(mm) == MATMUL
    assert mm.inputs == [("x", fedc.f32[4, 3]), ("w", fedc.f32[3, 2])]
    assert mm.outputs == [("y", fedc.f32[4, 2])]


def test_parse_error_names_line_and_column():
    with pytest.raises(fedc.Error) as e:
        fedc.parse(MATMUL.replace("matmul(", "matmull("))
    assert e.value.status == fedc.EPARSE
    assert "line 4, column 6: unknown op 'matmull'" in e.value.message
    with pytest.raises(fedc.Error) as e:
        fedc.parse(b"fedc program\n%0 = input \"x\"\x00 : f32[]\n")
    assert "NUL" in e.value.message


def test_run_matches_numpy_and_owns_outputs(mm):
    x, w = data()
    y = mm.run(x=x, w=w)["y"]
    np.testing.assert_allclose(y, x @ w, rtol=1e-6)
    assert y.flags.owndata and y.flags.writeable
    y2 = mm({"x": x * 2, "w": w})["y"]  # the next run must not change the first result
    np.testing.assert_allclose(y, x @ w, rtol=1e-6)
    np.testing.assert_allclose(y2, 2 * x @ w, rtol=1e-6)


def test_inputs_bound_without_copy_when_possible():
    x = np.ones((4, 3), np.float32)
    assert as_input("x", x, fedc.f32[4, 3], 0) is x
    # Fortran order, a strided view, a safe dtype change: copied into C order.
    f = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(4, 3))
    cf = as_input("x", f, fedc.f32[4, 3], 0)
    assert cf is not f and cf.flags.c_contiguous and (cf == f).all()
    s = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    cs = as_input("x", s, fedc.f32[4, 3], 0)
    assert cs.flags.c_contiguous and (cs == s).all()
    i = np.arange(12, dtype=np.int32).reshape(4, 3)
    ci = as_input("x", i, fedc.f64[4, 3], 0)
    assert ci.dtype == np.float64 and (ci == i).all()


def test_layouts_give_the_same_results(mm):
    x, w = data()
    want = mm.run(x=x, w=w)["y"]
    big = np.zeros((8, 6), np.float32)
    big[::2, ::2] = x
    for xx in (np.asfortranarray(x), big[::2, ::2], x.T.copy().T, x.tolist()):
        assert np.array_equal(mm.run(x=xx, w=w)["y"], want)
    assert np.array_equal(mm.run(x=x, w=np.asfortranarray(w))["y"], want)


def test_wrong_dtype_is_a_clear_error(mm):
    x, w = data()
    with pytest.raises(fedc.Error) as e:
        mm.run(x=x.astype(np.float64), w=w)
    assert e.value.status == fedc.ETYPE
    assert "input 'x'" in e.value.message and "float64" in e.value.message
    with pytest.raises(fedc.Error) as e:
        mm.run(x=x.astype(np.int32), w=w)  # i32 -> f32 loses digits: refused
    assert e.value.status == fedc.ETYPE
    with pytest.raises(fedc.Error) as e:
        mm.run(x=np.array([["a"] * 3] * 4), w=w)
    assert e.value.status == fedc.ETYPE


def test_wrong_shape_and_names(mm):
    x, w = data()
    with pytest.raises(fedc.Error) as e:
        mm.run(x=x[:3], w=w)
    assert e.value.status == fedc.ESHAPE and "expected shape (4, 3), got (3, 3)" in e.value.message
    with pytest.raises(fedc.Error) as e:
        mm.run(x=x)
    assert "input 'w'" in e.value.message and "not given" in e.value.message
    with pytest.raises(fedc.Error) as e:
        mm.run(x=x, w=w, z=x)
    assert "no input 'z'" in e.value.message


def test_federated_program_takes_the_cohort_from_its_inputs():
    with fedc.parse(FEDERATED) as p:
        x = np.array([1.0, 2.0], np.float32)
        for n in (1, 3, 7):
            y = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
            out = p.run(x=x, y=y, threads=2)
            per = ((x - y) ** 2).sum(axis=1)
            np.testing.assert_allclose(out["per_client"], per, rtol=1e-6)
            np.testing.assert_allclose(out["loss"], per.mean(), rtol=1e-6)
            assert out["per_client"].shape == (n,)
        with pytest.raises(fedc.Error) as e:
            p.run(x=x, y=np.zeros((3, 3), np.float32))
        assert "3 clients x f32[2]@clients" in e.value.message
        with pytest.raises(fedc.Error):
            p.run(x=x, y=np.zeros((3, 2), np.float32), clients=4)


def test_absent_clients_are_left_out_of_aggregates():
    with fedc.parse(FEDERATED) as p:
        x = np.array([1.0, 2.0], np.float32)
        y = np.arange(10, dtype=np.float32).reshape(5, 2)
        per = ((x - y) ** 2).sum(axis=1)
        out = p.run(x=x, y=y, absent=[False, True, False, False, True])
        np.testing.assert_allclose(out["loss"], per[[0, 2, 3]].mean(), rtol=1e-6)
        assert out["per_client"][1] == 0 and out["per_client"][4] == 0  # its map body did not run
        again = p.run(x=x, y=y)  # the pooled executor: every client again
        np.testing.assert_allclose(again["loss"], per.mean(), rtol=1e-6)
        with pytest.raises(fedc.Error, match="absent has 2 entries for a cohort of 5"):
            p.run(x=x, y=y, absent=[True, False])


def test_devices_choose_the_kernels():
    assert fedc.devices()[:2] == ["cpu", "cpu-reference"]
    with fedc.parse(FEDERATED) as p:
        x = np.array([0.3, -1.7], np.float32)
        y = (np.arange(10, dtype=np.float32).reshape(5, 2) / 7) ** 3
        ref = p.run(x=x, y=y, reference_kernels=True)
        fast = p.run(x=x, y=y)
        for name in ("loss", "per_client"):  # the same bits as the older spelling
            assert p.run(x=x, y=y, device="cpu-reference")[name].tobytes() == ref[name].tobytes()
            assert p.run(x=x, y=y, device="cpu", threads=2)[name].tobytes() == fast[name].tobytes()
        with pytest.raises(fedc.Error) as e:
            p.run(x=x, y=y, device="gpu")
        assert e.value.status == fedc.EINVAL
        assert 'no device "gpu"; the devices are cpu, cpu-reference' in e.value.message


def test_run_time_errors_raise():
    text = """fedc program
%0 = input "t" : f32[3,2]
%1 = input "i" : i32[2]
%2 = gather(%0, %1) : f32[2,2]
output "y" = %2
"""
    with fedc.parse(text) as p:
        t = np.zeros((3, 2), np.float32)
        assert p.run(t=t, i=np.array([0, 2], np.int32))["y"].shape == (2, 2)
        with pytest.raises(fedc.Error) as e:
            p.run(t=t, i=np.array([0, 9], np.int32))
        assert "index 9" in e.value.message
        # The executor stays usable after a failed run.
        assert p.run(t=t + 1, i=np.array([1, 1], np.int32))["y"].tolist() == [[1, 1], [1, 1]]


def test_clone_and_verify(mm):
    c = mm.clone()
    assert c.text() == mm.text()
    c.verify()
    mm.close()
    assert c.run(x=np.ones((4, 3), np.float32), w=np.ones((3, 2), np.float32))["y"][0, 0] == 3
    c.close()

"""DrJAX's temperature-sensors example on fedc: what fraction of the sensors read above
a threshold? The server broadcasts the threshold, each client (sensor) computes 1 if
its reading is over it and 0 if not, and the server takes the mean.

DrJAX writes it (drjax/_src/api_test.py, test_temp_sens_example) as

    @drjax.program(placements={"clients": 100})
    def temp_sens_example(threshold, values):
      threshold_at_clients = drjax.broadcast(threshold)
      values_over = drjax.map_fn(one_if_over, (threshold_at_clients, values))
      return drjax.reduce_mean(values_over)

and fedc's Python reads the same; the program it traces runs in C.

Run from a build tree:
    PYTHONPATH=python FEDC_LIBRARY=build/libfedc.so python3 examples/python/temperature_sensors.py
--check (as ctest runs it) compares the results with numpy's and exits non-zero if
they differ.
"""

import sys

import numpy as np

import fedc


def one_if_over(threshold, value):
    # jax.lax.cond(value > threshold, lambda: 1.0, lambda: 0.0) in DrJAX; a traced
    # value has no truth value, so the branch is a select.
    return fedc.select(value > threshold, 1.0, 0.0)


@fedc.program(placements={"clients": 100})
def temp_sens_example(threshold, values):
    threshold_at_clients = fedc.broadcast(threshold)
    values_over = fedc.map(one_if_over, (threshold_at_clients, values))
    return fedc.mean(values_over)


@fedc.program(placements={"clients": 10})
def temp_sens_example_10_clients(threshold, values):
    return fedc.mean(fedc.map(one_if_over, (fedc.broadcast(threshold), values)))


def main():
    check = "--check" in sys.argv[1:]
    rng = np.random.default_rng(2)
    threshold = np.float32(0.5)
    ok = True
    for fn, n in ((temp_sens_example, 100), (temp_sens_example_10_clients, 10)):
        readings = rng.uniform(size=n).astype(np.float32)
        got = fn(threshold, readings)
        # fedc's mean is the sum times the f32 reciprocal of the cohort's size.
        want = np.float32(np.count_nonzero(readings > threshold)) * np.float32(1.0 / n)
        print("%3d sensors: %.4f of them read above %.2f (numpy: %.4f)" % (n, got, threshold, want))
        ok = ok and got.dtype == np.float32 and got.shape == () and got == want
    if check:
        print(temp_sens_example.trace(threshold, np.zeros(100, np.float32)).text(), end="")
    if check and not ok:
        print("FAIL: fedc's results differ from numpy's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Memory: 10,000 runs, and programs traced and closed again, keep RSS bounded."""

import gc
import os

import numpy as np
import pytest

import fedc


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    pytest.skip("no /proc/self/status")


@fedc.program(placements={"clients": 3})
def small(w, x):
    per = fedc.map(lambda w, x: fedc.reduce_sum(x * w), (fedc.broadcast(w), x))
    return {"mean": fedc.mean(per), "per": per}


def test_ten_thousand_runs_do_not_grow_memory():
    w = np.ones(16, np.float32)
    x = np.random.default_rng(5).standard_normal((3, 16)).astype(np.float32)
    want = small(w, x)
    for _ in range(500):  # warm up: allocator pools, numpy's caches
        small(w, x)
    gc.collect()
    before = rss_kib()
    for i in range(10000):
        out = small(w, x)
    gc.collect()
    grown = rss_kib() - before
    assert np.array_equal(out["per"], want["per"])
    # A leak of even one output array (64 bytes) a run would be 640 KiB.
    assert grown < 512, "RSS grew %d KiB over 10,000 runs" % grown


def test_tracing_and_closing_programs_does_not_grow_memory():
    text = small.trace(np.ones(16, np.float32), np.ones((3, 16), np.float32)).text()

    def cycle():
        f = fedc.program(lambda a: fedc.exp(a) * 2)
        f(np.ones(64, np.float32))
        f.close()
        with fedc.parse(text) as p:
            p.text()
        g = fedc.grad(lambda w: fedc.reduce_sum(fedc.tanh(w)))
        g(np.ones(8, np.float32))
    for _ in range(100):
        cycle()
    gc.collect()
    before = rss_kib()
    for _ in range(1000):
        cycle()
    gc.collect()
    grown = rss_kib() - before
    assert grown < 2048, "RSS grew %d KiB over 1,000 trace/run/close cycles" % grown


def test_failing_runs_do_not_leak():
    p = fedc.parse("fedc program\n%0 = input \"t\" : f32[3]\n%1 = input \"i\" : i32[1]\n"
                   "%2 = gather(%0, %1) : f32[1]\noutput \"y\" = %2\n")
    t = np.zeros(3, np.float32)
    bad = np.array([7], np.int32)
    for _ in range(200):
        with pytest.raises(fedc.Error):
            p.run(t=t, i=bad)
    gc.collect()
    before = rss_kib()
    for _ in range(5000):
        with pytest.raises(fedc.Error):
            p.run(t=t, i=bad)
    gc.collect()
    assert rss_kib() - before < 512
    p.close()


if os.environ.get("FEDC_SANITIZED"):  # ASan's quarantine holds freed memory on purpose
    pytestmark = pytest.mark.skip("RSS is not meaningful under AddressSanitizer")

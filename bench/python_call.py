"""What a call through the Python package costs against the same run from C.

A small program (the temperature-sensors round over 16 clients, and a 32x32 matmul
with a tanh) is run many times three ways: from C (bench_program_call: bind once,
fedc_executor_run in a loop), from Python through Program.run (arrays bound and
outputs copied every call), and through a @fedc.program function (its signature
looked up, then Program.run). Prints a table and one JSON line per case.

    python3 bench/python_call.py [BUILD_DIR]      (default build)
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
os.environ.setdefault("FEDC_LIBRARY", os.path.join(BUILD, "libfedc.so"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import fedc  # noqa: E402

CALLS, SETS, CLIENTS = 20000, 5, 16


@fedc.program(placements={"clients": CLIENTS})
def sensors(threshold, values):
    over = fedc.map(lambda t, v: fedc.select(v > t, 1.0, 0.0), (fedc.broadcast(threshold), values))
    return fedc.mean(over)


@fedc.program
def layer(x, w):
    return fedc.tanh(x @ w)


def per_call(fn):
    for _ in range(1000):
        fn()
    sets = []
    for _ in range(SETS):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        sets.append((time.perf_counter() - t0) / CALLS * 1e6)
    return float(np.median(sets))


def from_c(program, clients):
    with tempfile.NamedTemporaryFile("w", suffix=".fedc", delete=False) as f:
        f.write(program.text())
    try:
        out = subprocess.run([os.path.join(BUILD, "bench_program_call"), f.name, str(CALLS),
                              str(SETS), str(clients)], check=True, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("json: ")][-1]
    return json.loads(line[len("json: "):])["us_per_call"]


def main():
    cases = []
    t = np.float32(0.5)
    v = np.random.default_rng(0).uniform(size=CLIENTS).astype(np.float32)
    p = sensors.trace(t, v)
    cases.append(("temperature sensors, 16 clients", p, CLIENTS,
                  lambda: p.run(threshold=t, values=v), lambda: sensors(t, v)))
    x = np.ones((32, 32), np.float32)
    w = np.ones((32, 32), np.float32) / 32
    q = layer.trace(x, w)
    cases.append(("tanh(x @ w), 32x32", q, 0, lambda: q.run(x=x, w=w), lambda: layer(x, w)))
    print("%-34s %10s %12s %14s" % ("program", "C us/call", "Program.run", "@fedc.program"))
    for name, prog, clients, run, call in cases:
        c, r, d = from_c(prog, clients), per_call(run), per_call(call)
        print("%-34s %10.2f %12.2f %14.2f" % (name, c, r, d))
        print("json: " + json.dumps({"bench": "python_call", "case": name, "c_us": c, "run_us": r,
                          "decorated_us": d, "overhead_us": d - c}))


if __name__ == "__main__":
    main()

"""peers_run_on.py: fedc.Program.run_on("xla") and run_on("iree") (python/fedc/
compilers.py) run a program's StableHLO export and give fedc's executor's outputs
within 1e-5 relative: a round of broadcast, a map with a matmul and a weighted
mean, and a program of every step between the levels of groups (2 groups of 3
clients). A compiler it does not know fails naming it. Run by tests/peers.sh
under .peers/jax with python/fedc on this build's libfedc."""
import sys

import numpy as np

import fedc

ROUND = """fedc program
body 0 {
%0 = input "w" : f32[3,2]
%1 = input "x" : f32[4,3]
%2 = matmul(%1, %0) : f32[4,2]
%3 = tanh(%2) : f32[4,2]
output "y" = %3
}
%0 = input "w" : f32[3,2]@server
%1 = input "x" : f32[4,3]@clients
%2 = input "n" : f32[]@clients
%3 = broadcast(%0) : f32[3,2]@clients
%4 = map(%3, %1) {body=0} : (f32[4,2]@clients)
%5 = result(%4) {index=0} : f32[4,2]@clients
%6 = weighted_mean(%5, %2) : f32[4,2]@server
output "y" = %6
"""

LEVELS = """fedc program
%0 = input "w" : f64[2]@server
%1 = input "x" : f64[2]@clients
%2 = input "a" : f64[]@groups
%3 = broadcast_down(%0) : f64[2]@groups
%4 = broadcast_down(%3) : f64[2]@clients
%5 = mul(%4, %1) : f64[2]@clients
%6 = mean_up(%5) : f64[2]@groups
%7 = sum_up(%5) : f64[2]@groups
%8 = mul(%6, %2) : f64[2]@groups
%9 = group_size() {dtype=f64} : f64[]@groups
%10 = weighted_mean_up(%8, %9) : f64[2]@server
%11 = sum_up(%7) : f64[2]@server
%12 = num_groups() {dtype=f64} : f64[]@server
output "top" = %10
output "sums" = %11
output "groups" = %12
output "scaled" = %8
"""


def close(got, want):
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return g.shape == w.shape and bool(np.all(np.abs(g - w) <= 1e-5 * np.abs(w) + 1e-6 * np.max(np.abs(w))))


def main():
    rng = np.random.default_rng(7)
    cases = [("a round (map, matmul, weighted mean)", ROUND, {
        "w": rng.uniform(-1, 1, (3, 2)).astype(np.float32), "x": rng.uniform(-1, 1, (5, 4, 3)).astype(np.float32),
        "n": rng.uniform(1, 3, 5).astype(np.float32)}, None),
        ("the groups level, 2 groups of 3", LEVELS, {
            "w": rng.uniform(-1, 1, 2), "x": rng.uniform(-1, 1, (6, 2)), "a": rng.uniform(0.5, 2, 2)}, [3, 3])]
    bad = 0
    for name, text, inputs, groups in cases:
        p = fedc.parse(text)
        want = p.run(inputs, groups=groups)
        for compiler in ("xla", "iree"):
            got = p.run_on(compiler, inputs, groups=groups)
            wrong = [k for k in want if k not in got or not close(got[k], want[k])]
            bad += bool(wrong)
            print("%s %s on %s: %s" % ("FAIL" if wrong else "ok  ", name, compiler,
                                       "outputs %s differ from fedc's" % wrong if wrong else
                                       "%d outputs equal fedc's executor's" % len(want)))
    try:
        fedc.parse(ROUND).run_on("tpu", cases[0][2])
        print("FAIL run_on(\"tpu\") ran")
        bad += 1
    except fedc.Error as e:
        ok = "use xla or iree" in str(e)
        bad += not ok
        print("%s run_on(\"tpu\"): %s" % ("ok  " if ok else "FAIL", e))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

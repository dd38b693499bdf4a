#!/bin/sh
# numpy interoperability of fedc's .npy files, checked with numpy itself: arrays
# numpy saved (every supported dtype, ranks 0 to 6, format versions 2.0 and 3.0)
# go through `fedc program run`; what fedc writes must np.load to the same values
# and have the very bytes np.save writes; files fedc cannot take (Fortran order,
# int64, big-endian, 7 dimensions) must be refused with the reason. Skips (exit 77,
# which ctest counts as skipped) when no python3 with numpy is found (CI installs
# python3-numpy). Usage:
# npy_python.sh path/to/fedc
set -u
fedc=$1

# The first python3 that has numpy: a pyenv or venv python3 may lack it while the
# system one (/usr/bin/python3, Debian's python3-numpy) has it.
py=""
for candidate in python3 /usr/bin/python3 /usr/local/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import numpy' >/dev/null 2>&1; then
    py=$candidate
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with numpy"
  exit 77
fi

exec "$py" - "$fedc" <<'PYTHON'
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

fedc = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="fedc-npy-py-")
atexit.register(shutil.rmtree, tmp, True)  # even when a check crashes
passed = failed = 0
names = {"float32": "f32", "float64": "f64", "int32": "i32", "uint8": "u8", "bool": "bool"}


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, file=sys.stderr)


def path(name):
    return os.path.join(tmp, name)


def fedc_type(a):
    return "%s[%s]" % (names[a.dtype.name], ",".join(str(d) for d in a.shape))


def program(name, lines):
    p = path(name + ".fedc")
    with open(p, "w") as f:
        f.write("fedc program\n" + "\n".join(lines) + "\n")
    return p


def run(prog, inputs, out, *extra):
    args = [fedc, "program", "run", prog, "--out", out]
    for name, file in inputs.items():
        args += ["--input", "%s=%s" % (name, file)]
    return subprocess.run(args + list(extra), capture_output=True, text=True)


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype in (np.int32, np.uint8):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def saved_bytes(a):
    p = path("reference.npy")
    np.save(p, a)
    with open(p, "rb") as f:
        return f.read()


# numpy 1.24 added the header's growth padding; older ones write shorter headers.
same_bytes_expected = hasattr(np.lib.format, "GROWTH_AXIS_MAX_DIGITS")


def identity(a, name, writer=np.save):
    """a, saved by numpy, through a program whose output is its input."""
    src = path(name + ".npy")
    if writer is np.save:
        np.save(src, a)
    else:
        with open(src, "wb") as f:
            writer(f, a)
    prog = program(name, ['%%0 = input "x" : %s' % fedc_type(a), 'output "y" = %0'])
    r = run(prog, {"x": src}, path(name + "_out"))
    check(r.returncode == 0, "%s: fedc failed: %s" % (name, r.stderr.strip()))
    if r.returncode:
        return
    out = path(name + "_out/y.npy")
    back = np.load(out)
    check(back.dtype == a.dtype and back.shape == a.shape, "%s: np.load gives %s%s" % (name, back.dtype, back.shape))
    check(np.array_equal(back, a, equal_nan=a.dtype.kind == "f"), "%s: values differ" % name)
    if same_bytes_expected:
        with open(out, "rb") as f:
            check(f.read() == saved_bytes(a), "%s: bytes differ from np.save's" % name)


# Every dtype, every rank from 0 to 6, a few odd sizes.
shapes = [(), (5,), (2, 3), (2, 1, 3), (1, 2, 3, 2), (2, 1, 1, 2, 3), (1, 2, 1, 2, 1, 2), (1000,), (3, 70)]
for dtype in (np.float32, np.float64, np.int32, np.uint8, np.bool_):
    for i, shape in enumerate(shapes):
        identity(sample(dtype, shape, i), "%s_%d" % (np.dtype(dtype).name, i))
special = np.array([np.nan, -np.inf, np.inf, -0.0, 1e-45, 3.4028235e38], np.float32)
identity(special, "special")

# Format versions 2.0 and 3.0, as numpy writes them when asked.
for version in ((2, 0), (3, 0)):
    a = sample(np.float64, (3, 4), 7)
    identity(a, "v%d" % version[0], lambda f, a, v=version: np.lib.format.write_array(f, a, version=v))
    with open(path("v%d.npy" % version[0]), "rb") as f:
        check(f.read(8) == b"\x93NUMPY" + bytes(version), "v%d: numpy wrote another version" % version[0])

# A computation, checked against numpy: the mean cross-entropy of logistic regression.
x, w, b = (sample(np.float32, s, 10 + i) / 100 for i, s in enumerate([(8, 5), (5, 3), (3,)]))
labels = np.arange(8, dtype=np.int32) % 3
for n, a in dict(x=x, w=w, b=b, labels=labels).items():
    np.save(path(n + ".npy"), a)
prog = program("logistic", [
    '%0 = input "x" : f32[8,5]', '%1 = input "labels" : i32[8]', '%2 = input "w" : f32[5,3]',
    '%3 = input "b" : f32[3]', "%4 = matmul(%0, %2) {transpose_a=0, transpose_b=0} : f32[8,3]",
    "%5 = add(%4, %3) : f32[8,3]", "%6 = softmax_cross_entropy(%5, %1) : f32[8]",
    "%7 = reduce_mean(%6) {axes=[0], keepdims=0} : f32[]", 'output "loss" = %7', 'output "logits" = %5'])
r = run(prog, {n: path(n + ".npy") for n in ("x", "labels", "w", "b")}, path("logistic_out"))
z = x.astype(np.float64) @ w + b
want = np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(8), labels])
check(r.returncode == 0, "logistic: " + r.stderr.strip())
if r.returncode == 0:
    check(abs(np.load(path("logistic_out/loss.npy")) - want) < 1e-6, "logistic: loss differs from numpy's")
    check(np.allclose(np.load(path("logistic_out/logits.npy")), z, atol=1e-6), "logistic: logits differ")
    printed = re.search(r"^loss: f32\[\] = (\S+) -> ", r.stdout, re.M)
    check(printed and abs(float(printed.group(1)) - want) < 1e-6, "logistic: printed " + r.stdout.strip())

# A federated program: @clients arrays are [clients, ...] on both sides.
ys = sample(np.float32, (5, 2, 3), 20)
np.save(path("ys.npy"), ys)
prog = program("fed", ['%0 = input "y" : f32[2,3]@clients', "%1 = mean(%0) : f32[2,3]@server",
                       "%2 = add(%0, %0) : f32[2,3]@clients", 'output "m" = %1', 'output "twice" = %2'])
r = run(prog, {"y": path("ys.npy")}, path("fed_out"), "--threads", "3")
check(r.returncode == 0, "fed: " + r.stderr.strip())
if r.returncode == 0:
    check(np.allclose(np.load(path("fed_out/m.npy")), ys.mean(0), rtol=1e-6), "fed: mean differs")
    check(np.array_equal(np.load(path("fed_out/twice.npy")), ys + ys), "fed: per-client result differs")


# What fedc must refuse, and why.
def refused(a, name, needle, fortran=False):
    src = path(name + ".npy")
    np.save(src, np.asfortranarray(a) if fortran else a)
    prog = program(name, ['%0 = input "x" : f32[2,3]', 'output "y" = %0'])
    r = run(prog, {"x": src}, path(name + "_out"))
    check(r.returncode == 1 and needle in r.stderr, "%s: exit %d, %s" % (name, r.returncode, r.stderr.strip()))


six = np.arange(6, dtype=np.float32).reshape(2, 3)
refused(six, "fortran", "Fortran-order (column-major) arrays are not supported", fortran=True)
refused(six.astype(np.int64), "int64", "dtype '<i8' is not supported")
refused(six.astype(">f4"), "bigendian", "big-endian dtype '>f4' is not supported; convert it with a.astype('<f4')")
refused(np.zeros((1, 1, 1, 2, 1, 3, 1), np.float32), "rank7", "the array has 7 dimensions")
refused(six.astype(np.float16), "half", "a.astype('<f4')")
refused(np.ascontiguousarray(six.T), "transposed", "expected f32[2,3], got f32[3,2]")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PYTHON

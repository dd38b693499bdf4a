"""peers_export_mpi.py FEDC BUILD PEERS_CASES: the sharded MLIR of `fedc program export --shard clients=D`
run across D processes under Open MPI, through LLVM 22's shard dialect, against fedc's
executor (docs/export.md, "Running it across processes").

For each case (a map's weighted mean and sum; FedAvg rounds of logistic regression and of
the EMNIST CNN with dropout), a program over a cohort of 4 clients on a mesh of 2
devices:
  1. fedc exports it sharded, in the `mesh` spelling LLVM 19 takes;
  2. the same module in LLVM 22's `shard` dialect (to_shard_dialect: the grid, and each
     sharding as a `shard.sharding` value);
  3. mlir-opt-22: sharding-propagation and shard-partition (each device its 2 clients,
     each aggregation a `shard.all_reduce`), then convert-shard-to-mpi (`mpi.allreduce`
     on a communicator split from MPI_COMM_WORLD), bufferization and the lowering to
     LLVM, Open MPI's ABI named by the module's DLTI;
  4. mlir-translate-22 and llc-22 make an object of it, and a driver written here links
     it with libfedc: every rank makes the cohort's inputs (the same on every rank) and
     calls the module on its share of them, runs the program on the whole cohort with
     fedc's executor and compares its block of each output, within 1e-5 * (1 + |x|).
The groups level's cases (2 groups of 4 clients on a 2 x 2 mesh, 4 processes) are one
device's function with fedc's own all-reduces: step 3 is convert-shard-to-mpi alone, their
all-reduces' mesh axes must be those of the levels the program aggregates, and m_levels is
run again with its row all-reduces widened to the whole mesh, which must give wrong values.
Two defects of LLVM 22.1's MPI lowering for Open MPI are worked around in the LLVM IR
(fix_open_mpi). LLVM 22 is Debian's, unpacked into .peers/llvm22 by scripts/install-peers
(libmlir-22 conflicts with the libmlir-19 the MLIR tests use, so it is not installed). Exits
77 (skipped) without it, Open MPI or the data.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".peers", "llvm22", "root")
LLVM22 = os.path.join(ROOT, "usr", "lib", "llvm-22")
LIBS = [os.path.join(LLVM22, "lib"), os.path.join(ROOT, "usr", "lib", "x86_64-linux-gnu")]
CLIENTS, DEVICES = 4, 2
LOWER = ["--one-shot-bufferize=bufferize-function-boundaries allow-return-allocs-from-loops",
         "--convert-linalg-to-loops", "--expand-strided-metadata", "--lower-affine", "--convert-scf-to-cf",
         "--convert-math-to-llvm", "--convert-math-to-libm", "--convert-arith-to-llvm",
         "--finalize-memref-to-llvm", "--convert-to-llvm", "--convert-func-to-llvm", "--convert-cf-to-llvm",
         "--reconcile-unrealized-casts"]

SMALL = """fedc program
body 0 {
  %0 = input "w" : f32[3]
  %1 = input "x" : f32[3]
  %2 = mul(%0, %1) : f32[3]
  %3 = tanh(%2) : f32[3]
  output "y" = %3
}
%0 = input "w" : f32[3]@server
%1 = input "x" : f32[3]@clients
%2 = input "n" : f32[]@clients
%3 = broadcast(%0) : f32[3]@clients
%4 = map(%3, %1) {body=0} : (f32[3]@clients)
%5 = result(%4) {index=0} : f32[3]@clients
%6 = weighted_mean(%5, %2) : f32[3]@server
%7 = sum(%5) : f32[3]@server
output "wm" = %6
output "s" = %7
"""


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def run(args, **kw):
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(LIBS + [os.environ.get("LD_LIBRARY_PATH", "")]))
    r = subprocess.run(args, capture_output=True, text=True, env=env, **kw)
    if r.returncode:
        raise SystemExit("peers_export_mpi: %s failed (%d):\n%s%s" % (" ".join(args[:3]), r.returncode, r.stdout,
                                                                 r.stderr[-3000:]))
    return r.stdout


# ---- the module in LLVM 22's spelling ----

def to_shard_dialect(text):
    """LLVM 19's `mesh.mesh`, `mesh.shard %v to <@mesh, [[axes]]>` and `mesh.all_reduce` as LLVM
    22's `shard.grid`, `shard.shard %v to %sharding` (the sharding a value of its own) and
    `shard.all_reduce`."""
    text = text.replace("mesh.mesh @", "shard.grid @")
    text = re.sub(r"= mesh\.all_reduce (%\S+) on @(\w+) mesh_axes", r"= shard.all_reduce \1 on @\2 grid_axes", text)
    count = [0]

    def value(m):
        indent, result, operand, grid, axes, users, type_ = m.groups()
        count[0] += 1
        s = "%%sharding%d" % count[0]
        return ("%s%s = shard.sharding @%s split_axes = %s : !shard.sharding\n%s%s = shard.shard %s to %s%s : %s"
                % (indent, s, grid, axes, indent, result, operand, s, users or "", type_))
    return re.sub(r"^(\s*)(%\S+) = mesh\.shard (%\S+) to <@(\w+), (\[\[.*?\]\])>( annotate_for_users)? : (.*)$",
                  value, text, flags=re.M)


def for_lowering(text):
    """Open MPI named as the MPI the module calls (its ABI), and the round's function given
    a C interface (_mlir_ciface_program: memrefs by pointer) for the driver."""
    text = text.replace("module {", 'module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">} {', 1)
    return re.sub(r"^(  func\.func @program\(.*) \{$", r"\1 attributes {llvm.emit_c_interface} {", text,
                  count=1, flags=re.M)


def fix_open_mpi(ll):
    """LLVM 22.1's lowering for Open MPI (a) names MPI_SUM `ompi_mpi_sum`, where Open MPI's
    symbol is `ompi_mpi_op_sum`, and (b) reads the communicator MPI_Comm_split writes as
    an i32 and widens it: a pointer cut to 32 bits, on which MPI_Allreduce faults. Both
    fixed here in the LLVM IR."""
    for out in re.findall(r"call i32 @MPI_Comm_split\([^)]*, ptr (%\d+)\)", ll):
        m = re.search(r"(%\d+) = load i32, ptr " + re.escape(out) + r", align 4\n", ll)
        ll = ll.replace(m.group(0), "%s = load i64, ptr %s, align 8\n" % (m.group(1), out))
        ll = re.sub(r"(%\d+) = sext i32 " + re.escape(m.group(1)) + r" to i64", r"\1 = add i64 " + m.group(1) + ", 0", ll)
    return re.sub(r"@ompi_mpi_sum\b", "@ompi_mpi_op_sum", ll)


# ---- the driver ----

C_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i8": "int8_t", "i1": "uint8_t"}


def signature(text):
    """([argument types], [result types]) of @program, each (dims, element type)."""
    m = re.search(r"func\.func @program\((.*?)\) -> (\(.*?\)|tensor<[^>]*>)", text, re.S)

    def t(s):
        parts = s.split("x")
        return [int(d) for d in parts[:-1]], parts[-1]
    return ([t(s) for s in re.findall(r"%\w+: tensor<([^>]*)>", m.group(1))],
            [t(s) for s in re.findall(r"tensor<([^>]*)>", m.group(2))])


def constants(text):
    """The values of the tensor constants a sharded module takes as its last arguments
    (the comment above its function), each a list of its elements, or of one element
    where the constant is a splat."""
    out = []
    for raw, type_ in re.findall(r"//\s+%const\d+ = dense<(.*?)> : tensor<([^>]*)>", text):
        ty = type_.split("x")[-1]
        v = raw.strip('"')
        if raw.startswith('"0x'):  # the elements' bytes, little-endian
            b = bytes.fromhex(v[2:])
            size = {"f32": 4, "f64": 8, "i32": 4, "i8": 1, "i1": 1}[ty]
            fmt = {"f32": "<f", "f64": "<d", "i32": "<i", "i8": "<b", "i1": "<B"}[ty]
            out.append([struct.unpack(fmt, b[k:k + size])[0] for k in range(0, len(b), size)])
        elif v.startswith("0x"):  # one element's bits
            bits = int(v, 16)
            out.append([struct.unpack("<f", struct.pack("<I", bits))[0] if ty == "f32" else bits])
        elif v.startswith("["):
            raise SystemExit("peers_export_mpi: a constant written as a list, which the driver does not read: " + raw)
        else:
            out.append([{"true": 1, "false": 0}[v] if v in ("true", "false") else float(v)])
    return out


def c_literal(v, ty):
    if ty != "f32":
        return str(int(v))
    return "INFINITY" if v == float("inf") else "-INFINITY" if v == float("-inf") else repr(float(v)) + "f"


def block_start(gd, ld, devices):
    """The C expression of the first element of the rank's block of a value of dims `gd`
    whose share on each device has dims `ld`: the blocks of a split leading axis go to the
    devices in order, each to devices / blocks consecutive ranks (a row); whole, 0."""
    if gd == ld:
        return "0"
    row = 1
    for d in gd[1:]:
        row *= d
    return "(int64_t)(rank / %d) * %d" % (devices // (gd[0] // ld[0]), ld[0] * row)


def driver(whole, shard, devices):
    """The C driver of a module whose function has `whole`'s signature before partition
    and `shard`'s on each of `devices` devices. A split argument's blocks (its leading
    axis over all the devices, or a @groups value's over the mesh's rows) go to the
    devices in order, each block to devices / blocks consecutive ranks (a row). Every rank
    checks its block of each output against fedc's executor on the whole cohort."""
    (gargs, gres), (largs, lres) = signature(whole), signature(shard)
    consts = constants(whole)
    inputs = len(gargs) - len(consts)
    ranks = sorted({len(d) for d, _ in gargs + gres})
    o = ["#include <math.h>", "#include <mpi.h>", "#include <stdint.h>", "#include <stdio.h>",
         "#include <stdlib.h>", '#include "fedc/fedc.h"', ""]
    for r in ranks:
        o.append("typedef struct { void *alloc, *aligned; int64_t offset%s; } memref%d;"
                 % ("" if r == 0 else ", sizes[%d], strides[%d]" % (r, r), r))
    o.append("typedef struct { %s } results;" % " ".join("memref%d r%d;" % (len(d), i) for i, (d, _) in enumerate(gres)))
    o.append("void _mlir_ciface_program(results *out, %s);" % ", ".join("memref%d *" % len(d) for d, _ in gargs))
    o.append("""
/* Element k of argument a: the same on every rank; integers 0 or 1 (valid labels,
 * masks and step counts). */
static double value_of(int a, int64_t k) {
    uint64_t s = (uint64_t)(a + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)k * 0xBF58476D1CE4E5B9ull;
    s ^= s >> 31, s *= 0x94D049BB133111EBull, s ^= s >> 29;
    return (double)(s >> 11) * 0x1p-53;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *whole[%d];""" % len(gargs))
    for a, ((gd, ty), (ld, _)) in enumerate(zip(gargs, largs)):
        n = 1
        for d in gd:
            n *= d
        c = C_TYPES[ty]
        if a >= inputs and len(consts[a - inputs]) == 1:  # a splat
            fill = "(%s)%s" % (c, c_literal(consts[a - inputs][0], ty))
        elif a >= inputs:
            assert len(consts[a - inputs]) == n, (a, len(consts[a - inputs]), n)
            o.append("    static const %s c%d[%d] = {%s};" % (c, a, n, ", ".join(c_literal(x, ty)
                                                                                 for x in consts[a - inputs])))
            fill = "c%d[k]" % a
        elif ty in ("f32", "f64"):
            fill = "(%s)value_of(%d, k)" % (c, a)
        else:
            fill = "(%s)(value_of(%d, k) < 0.5 ? 0 : 1)" % (c, a)
        o.append("    %s *w%d = malloc(%d * sizeof *w%d);" % (c, a, max(n, 1), a))
        o.append("    for (int64_t k = 0; k < %d; k++) w%d[k] = %s;" % (n, a, fill))
        o.append("    whole[%d] = w%d;" % (a, a))
        first = block_start(gd, ld, devices)
        strides, acc = [], 1
        for d in reversed(ld):
            strides.insert(0, acc)
            acc *= d
        if ld:
            o.append("    memref%d a%d = {w%d, w%d + %s, 0, {%s}, {%s}};" % (
                len(ld), a, a, a, first, ", ".join(map(str, ld)), ", ".join(map(str, strides))))
        else:
            o.append("    memref0 a%d = {w%d, w%d, 0};" % (a, a, a))
    o.append("    results out;")
    o.append("    _mlir_ciface_program(&out, %s);" % ", ".join("&a%d" % a for a in range(len(gargs))))
    o.append("""    int failed = 0;
    double worst[%d] = {0}, worst_all[%d] = {0};
    { /* fedc's executor on the whole cohort, on every rank */""" % (max(len(gres), 1), max(len(gres), 1)))
    o.append("""
        static char text[1 << 22];
        FILE *f = fopen(argv[1], "rb");
        size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f) fclose(f);
        text[len] = 0;
        fedc_program *p = NULL;
        fedc_executor *ex = NULL;
        int clients = atoi(argv[2]), groups = atoi(argv[3]), sizes[64];
        for (int g = 0; g < groups && g < 64; g++) sizes[g] = clients / groups; /* the export's groups are equal */
        if (!len || groups > 64 || fedc_program_parse(text, &p) ||
            fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = clients, .threads = 1, .groups = groups,
                                                              .group_sizes = groups ? sizes : NULL})) {
            fprintf(stderr, "peers_export_mpi: %s: %s\\n", argv[1], fedc_errmsg());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (int i = 0; i < fedc_program_num_inputs(p); i++)
            if (fedc_executor_bind(ex, fedc_program_input_name(p, i), whole[i])) failed = 1;
        if (failed || fedc_executor_run(ex)) {
            fprintf(stderr, "peers_export_mpi: fedc's executor: %s\\n", fedc_errmsg());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }""")
    for i, ((gd, ty), (ld, _)) in enumerate(zip(gres, lres)):
        n = 1
        for x in ld:  # the rank's block
            n *= x
        o.append("""        {
            const void *want_ = NULL;
            fedc_executor_output(ex, fedc_program_output_name(p, %d), &want_, NULL);
            const %s *want = (const %s *)want_ + %s, *got = out.r%d.aligned;
            for (int64_t k = 0; k < %d; k++) {
                double e = fabs((double)got[k] - (double)want[k]) / (1 + fabs((double)want[k]));
                if (!(e <= worst[%d])) worst[%d] = e;
            }
        }""" % (i, C_TYPES[ty], C_TYPES[ty], block_start(gd, ld, devices), i, n, i, i))
    o.append("""        MPI_Reduce(worst, worst_all, %d, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        for (int i = 0; rank == 0 && i < %d; i++) {
            printf("output %%s: largest difference from fedc's executor over the ranks' blocks %%.3g (of 1 + |x|)\\n",
                   fedc_program_output_name(p, i), worst_all[i]);
            if (!(worst_all[i] <= 1e-5)) failed = 1; /* NaN fails */
        }
        fedc_executor_destroy(ex);
        fedc_program_destroy(p);
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}""" % (max(len(gres), 1), len(gres)))
    return "\n".join(o) + "\n"


# ---- a case ----

def build_and_run(fedc, build, d, tag, whole, spmd, program, clients, devices, groups):
    """The partitioned module `spmd` (LLVM 22's spelling) lowered to MPI and LLVM, linked with
    the driver and run on `devices` processes: (exit status, output)."""
    f = lambda x: os.path.join(d, tag + x)  # noqa: E731
    opt = os.path.join(LLVM22, "bin", "mlir-opt")
    open(f("spmd.mlir"), "w").write(spmd)
    # a @groups value split over the mesh's rows from a whole one is a shard.all_slice, which
    # convert-shard-to-mpi does not lower: LLVM's own lowering of it to the process's slice
    # (a pass mlir-opt registers as a test's; nothing else is rewritten by it)
    run([opt, f("spmd.mlir"), "--test-grid-all-slice-op-lowering", "--convert-shard-to-mpi", "-o", f("mpi.mlir")])
    mpi = open(f("mpi.mlir")).read()
    reduces = len(re.findall(r"= shard\.all_reduce", spmd))
    assert len(re.findall(r"mpi\.allreduce", mpi)) == reduces > 0, (d, reduces)
    open(f("mpi2.mlir"), "w").write(for_lowering(mpi))
    lowered = run([opt, f("mpi2.mlir")] + LOWER)
    # the grid's symbol is left behind, unused, in a module mlir-translate takes no shard op of
    open(f("llvm.mlir"), "w").write("\n".join(l for l in lowered.split("\n") if "shard.grid" not in l))
    run([os.path.join(LLVM22, "bin", "mlir-translate"), "--mlir-to-llvmir", f("llvm.mlir"), "-o", f("round.ll")])
    open(f("fixed.ll"), "w").write(fix_open_mpi(open(f("round.ll")).read()))
    run([os.path.join(LLVM22, "bin", "llc"), "-O1", "-filetype=obj", "-relocation-model=pic", f("fixed.ll"),
         "-o", f("round.o")])
    open(f("driver.c"), "w").write(driver(whole, spmd, devices))
    run(["mpicc", "-O1", "-std=c17", "-I", os.path.join(os.path.dirname(__file__), "..", "include"), f("driver.c"),
         f("round.o"), "-L", build, "-lfedc", os.path.join(LLVM22, "lib", "libmlir_c_runner_utils.so.22.1"),
         "-Wl,-rpath," + ":".join([build] + LIBS), "-lm", "-o", f("driver")])
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(devices), f("driver"), program,
                        str(clients), str(groups)], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr[-3000:]


# The mesh axes of the all-reduces of a case's levels (case.txt's `across`, the device groups
# of a 2 x 4 mesh): along each row, across the rows, over the whole mesh.
AXES = {"{{0,1,2,3},{4,5,6,7}}": "1", "{{0,4},{1,5},{2,6},{3,7}}": "0", "{{0,1,2,3,4,5,6,7}}": "0, 1"}


def check(fedc, build, tmp, name, program, clients=CLIENTS, devices=DEVICES, groups=0, rows=1, across="",
          control=False):
    """The case: `program` over `clients` clients (in `groups` groups) on `devices`
    processes, a mesh of `rows` rows (the groups axis) when it has a groups level: its
    all-reduces over the mesh axes `across` names. With `control`, the same module with
    its all-reduces along the rows widened to the whole mesh must give other values."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    f = lambda x: os.path.join(d, x)  # noqa: E731
    shard = ["--groups", str(groups), "--shard", "groups=%d,clients=%d" % (rows, devices // rows)] if groups else \
        ["--shard", "clients=%d" % devices]
    run([fedc, "program", "export", program, "--to", "mlir", "--clients", str(clients), "-o", f("sharded.mlir")] + shard)
    whole = open(f("sharded.mlir")).read()
    open(f("shard.mlir"), "w").write(to_shard_dialect(whole))
    opt = os.path.join(LLVM22, "bin", "mlir-opt")
    if groups:  # one device's function, its collectives written by fedc: nothing for LLVM to partition
        spmd = re.sub(r"^\s*//.*\n", "", open(f("shard.mlir")).read(), flags=re.M)  # its comment: the whole's
        assert "shard.shard" not in spmd, name
        axes = re.findall(r"= shard\.all_reduce \S+ on @\w+ grid_axes = \[([\d, ]*)\]", spmd)
        want = {AXES[g] for g in across.split()}
        assert set(axes) == want, (name, "all-reduces over the mesh axes", set(axes), "not", want)
    else:
        run([opt, f("shard.mlir"), "--pass-pipeline=builtin.module(func.func(sharding-propagation,shard-partition))",
             "-o", f("spmd.mlir")])
        spmd = open(f("spmd.mlir")).read()
        axes = re.findall(r"= shard\.all_reduce", spmd)
        assert not re.search(r"= shard\.all_gather", spmd), (name, "the partitioned module gathers")
    rc, out = build_and_run(fedc, build, d, "", whole, spmd, program, clients, devices, groups)
    if rc:
        raise SystemExit("peers_export_mpi: %s: the run failed (%d):\n%s" % (name, rc, out))
    mesh = "a %d x %d mesh of " % (rows, devices // rows) if groups else ""
    print("peers_export_mpi: %s, %d clients on %s%d processes, %d all-reduces (MPI_Allreduce%s):\n%s"
          % (name, clients, mesh, devices, len(axes), ", over mesh axes " + "; ".join(sorted(set(axes))) if groups
             else "", out.rstrip()))
    if control:
        wide = re.sub(r"grid_axes = \[1\]", "grid_axes = [0, 1]", spmd)
        rc, out = build_and_run(fedc, build, d, "wide-", whole, wide, program, clients, devices, groups)
        differs = re.findall(r"output (\S+): largest difference from fedc's executor over the ranks' blocks (\S+)", out)
        assert rc and any(float(e) > 1e-5 for _, e in differs), (name, "a whole-mesh all-reduce also passes", out)
        print("peers_export_mpi: %s, its groups' all-reduces over the whole mesh instead: wrong, as it must be (%s)"
              % (name, ", ".join("%s %s" % x for x in differs if float(x[1]) > 1e-5)))


def main():
    fedc, build, cases = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    tools = [os.path.join(LLVM22, "bin", t) for t in ("mlir-opt", "mlir-translate", "llc")]
    missing = [t for t in tools + [os.path.join(LLVM22, "lib", "libmlir_c_runner_utils.so.22.1")]
               if not os.path.exists(t)] + [t for t in ("mpicc", "mpirun") if not shutil.which(t)]
    if missing:
        skip("needs LLVM 22's MLIR tools and llc in .peers/llvm22 (scripts/install-peers) and Open MPI "
             "(libopenmpi-dev, openmpi-bin): missing " + ", ".join(missing))
    femnist = os.path.join(os.environ.get("FEDC_DATA", ""), "femnist-leaf", "train")
    if not os.path.isdir(femnist):
        skip("no FEMNIST at %s (FEDC_DATA: ctest's test_data fixture)" % femnist)
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "small.fedc")
        open(small, "w").write(SMALL)
        if not os.environ.get("PEERS_MPI_ONLY_GROUPS"):  # set: the groups level's cases alone
            check(fedc, build, tmp, "weighted mean and sum of a map", small)
            run([fedc, "plan", "build", "--data", femnist, "--model", "logistic", "--batch-size", "2", "--steps", "2",
                 "--out", os.path.join(tmp, "plan")])
            check(fedc, build, tmp, "FedAvg round of logistic regression", os.path.join(tmp, "plan", "round.fedc"))
            run([fedc, "plan", "build", "--data", femnist, "--model", "cnn", "--batch-size", "2", "--steps", "2",
                 "--out", os.path.join(tmp, "cnn")])  # with dropout: each client's draws from its key
            check(fedc, build, tmp, "FedAvg round of the EMNIST CNN", os.path.join(tmp, "cnn", "round.fedc"))
        # the groups level on a 2 x 2 mesh: peers_cases' sharded cases of 2 groups of 4 clients
        os.makedirs(os.path.join(tmp, "cases"))
        run([cases, os.path.join(tmp, "cases"), "shard"])
        for case in sorted(os.listdir(os.path.join(tmp, "cases"))):
            d = os.path.join(tmp, "cases", case)
            info = dict(line.split("=", 1) for line in open(os.path.join(d, "case.txt")).read().splitlines()
                        if "=" in line)
            if info.get("groups") and (info["name"].startswith("hierfavg") or "groups level" in info["name"]):
                check(fedc, build, tmp, info["name"], os.path.join(d, "program.fedc"), clients=int(info["clients"]),
                      devices=4, groups=int(info["groups"]), rows=2, across=info["across"],
                      control="groups level" in info["name"])
    print("peers_export_mpi: ok")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""`make bench`: fedc's end-to-end benchmarks against PyTorch (issue 7), in one run, one table.

    bench/run                 (what `make bench` runs; BUILD_DIR=build, QUICK=1 for a smoke run)

What it runs, in this order (every command is printed and logged in out/bench/logs/):

 0. the machine's FP32 peak (bench_kernels peak), at the start and again at the end: OpenBLAS's
    sgemm (best of 512^3, 1024^3, 2048^3) and an FMA loop of the widest vector ISA the CPU has
    (AVX-512, else AVX2), each on 1 thread and on all threads; the highest all-thread figure of
    the four (two ways, two times; the FMA loop's also per CPU second, which load does not lower)
    is the MFU's denominator, so that no kernel can exceed it;
 -  the component benchmarks (bench_executor, bench_kernels, bench_thread_scaling,
    bench_data_read, bench_export) and bench/*.sh (MPI scaling), their output to the log (skipped with QUICK=1);
 1+5. FedAvg client training of the EMNIST CNN on FEMNIST-LEAF (10 clients a round, batch 20,
    1 local epoch, dropout, client lr 0.1): `fedc train` with 2 and 1 threads against
    bench/accuracy/fedavg_torch.py (the same job in PyTorch: sequential clients, torch.optim)
    with 1 and 2 threads, runs alternating fedc, torch, fedc, torch; one warm-up set, then
    PAIRS sets (default 5); figure: training examples per second over the rounds, evaluation
    excluded (each program's metrics.jsonl); medians. Workload 5 is fedc's 2-thread median over
    its 1-thread median, beside what this machine gives two jobs that share nothing: the
    1-thread run twice at once as two processes (both runs' examples over the later one's
    seconds), and sgemm's 2-thread peak over its 1-thread peak;
 2. evaluation, forward only, batches of 500: bench_evaluate (2 threads) against
    bench/peers/evaluate_torch.py (1 and 2 threads), alternating, warm-up + PAIRS sets;
 3. FedJAX's EMNIST-62 benchmark at full scale on synthetic data: bench_emnist_full;
 4. large cohorts of a small model: bench_cohort_memory 2 3 100 1000 10000;
 7. workload 1's training at 2 threads, without dropout, of the EMNIST CNN written as PyTorch
    exports it (fedc_test_onnx_train write: "cnn"'s initial parameters at seed 0 in an ONNX file)
    under --model onnx: against the built-in cnn, alternating, warm-up + PAIRS sets; target: the
    imported model within 10% of the built-in's examples per second;
 6. one SGD training step of FedJAX's Shakespeare LSTM (batch 4 and 32, sequence 80):
    bench_lstm_step --no-peer (fedc, the better of 1 and 2 threads) against
    bench/peers/lstm_step_torch.py (1 and 2 threads, given the OpenBLAS kernels fedc chose),
    alternating, warm-up + PAIRS sets; figure: median ms per step of each run (and, as a check
    that a loaded machine does not decide it, the last set's CPU time per step at 1 thread).

The PyTorch peer's figure is the better of its 1- and 2-thread medians. Results: the table on
stdout and out/bench/results.json (every run's figure, the medians, the commands).
"""

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD_DIR", "build")
QUICK = os.environ.get("QUICK", "") not in ("", "0")
PAIRS = int(os.environ.get("PAIRS", "1" if QUICK else "5"))
WARMUP = 0 if QUICK else 1
OUT = os.path.join("out", "bench")
PY = "/usr/bin/python3"
LEAF = "../shared/data/femnist-leaf"
TRAIN_ROUNDS = 1 if QUICK else 5
EVAL_EXAMPLES = 1000 if QUICK else 10000
LSTM_STEPS = 5 if QUICK else 20

log_index = 0


def log_path(label):
    """The next numbered log file's path, relative to the repository root."""
    global log_index
    log_index += 1
    return os.path.join(OUT, "logs", f"{log_index:03d}-{label}.log")


def run(cmd, label):
    """Runs cmd (a list) from the repository root, logs its output, returns (stdout, seconds)."""
    path = log_path(label)
    print(f"  $ {' '.join(cmd)}", flush=True)
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.time() - t0
    with open(os.path.join(ROOT, path), "w") as f:
        f.write(f"$ {' '.join(cmd)}\n{p.stdout}")
    if p.returncode != 0:
        sys.exit(f"bench/run: `{' '.join(cmd)}` failed (exit {p.returncode}); see {path}:\n{p.stdout[-2000:]}")
    return p.stdout, seconds


def json_line(out):
    for line in reversed(out.splitlines()):
        if line.startswith("json: "):
            return json.loads(line[6:])
    sys.exit("bench/run: no json line in the output")


def last_metrics(out_dir):
    with open(os.path.join(ROOT, out_dir, "metrics.jsonl")) as f:
        return json.loads(f.read().splitlines()[-1])


def fedc_train_cmd(threads, d, model="cnn"):
    return [f"./{BUILD}/fedc", "train", "--data", f"{LEAF}/train", "--test-data", f"{LEAF}/test", "--model", model,
            "--algorithm", "fedavg", "--rounds", str(TRAIN_ROUNDS), "--clients-per-round", "10", "--batch-size", "20",
            "--epochs", "1", "--client-lr", "0.1", "--eval-every", "0", "--seed", "0", "--threads", str(threads),
            "--quiet", "--out", d]


def fedc_train(threads, i):
    d = os.path.join(OUT, "runs", f"fedc-t{threads}-{i}")
    cmd = fedc_train_cmd(threads, d)
    run(cmd, f"train-fedc-t{threads}")
    return last_metrics(d)["examples_per_s"], cmd


def fedc_train_model(name, model, i):
    """Workload 7: one model's run of workload 1 at 2 threads, without dropout."""
    d = os.path.join(OUT, "runs", f"fedc-{name}-{i}")
    cmd = fedc_train_cmd(2, d, model) + ["--no-dropout"]
    run(cmd, f"train-{name}")
    return last_metrics(d)["examples_per_s"], cmd


def fedc_train_pair(i):
    """Workload 5's ceiling on this machine: the 1-thread job twice at once, as two processes that
    share nothing; figure: both runs' examples over the later one's seconds (set-up excluded, as
    in every run's figure), so the machine's work over the time it took, as for 2 threads."""
    dirs = [os.path.join(OUT, "runs", f"fedc-pair{k}-{i}") for k in (0, 1)]
    cmds = [fedc_train_cmd(1, d) for d in dirs]
    print(f"  $ ({' '.join(cmds[0])} & {' '.join(cmds[1])})", flush=True)
    logs = [open(os.path.join(ROOT, log_path(f"train-fedc-pair{k}")), "w") for k in (0, 1)]
    procs = [subprocess.Popen(c, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT) for c, f in zip(cmds, logs)]
    failed = [p.wait() != 0 for p in procs]
    for f in logs:
        f.close()
    if any(failed):
        sys.exit(f"bench/run: the two concurrent 1-thread runs of workload 1 failed; see {OUT}/logs/")
    rows = [last_metrics(d) for d in dirs]
    examples = sum(r["examples_per_s"] * r["seconds"] for r in rows)
    return examples / max(r["seconds"] for r in rows), cmds[0] + ["&"] + cmds[1]


def torch_train(threads, i):
    d = os.path.join(OUT, "runs", f"torch-t{threads}-{i}")
    cmd = [PY, "bench/accuracy/fedavg_torch.py", "--data", f"{LEAF}/train", "--test-data", f"{LEAF}/test",
           "--rounds", str(TRAIN_ROUNDS), "--clients-per-round", "10", "--batch-size", "20", "--epochs", "1",
           "--client-lr", "0.1", "--eval-every", "0", "--seed", "0", "--threads", str(threads), "--out", d]
    run(cmd, f"train-torch-t{threads}")
    return last_metrics(d)["examples_per_s"], cmd


def fedc_eval(threads, i):
    cmd = [f"./{BUILD}/bench_evaluate", str(EVAL_EXAMPLES), "500", str(threads), "3"]
    j = json_line(run(cmd, f"eval-fedc-t{threads}")[0])
    return j["examples_per_s"], cmd, j


def torch_eval(threads, i):
    cmd = [PY, "bench/peers/evaluate_torch.py", "--examples", str(EVAL_EXAMPLES), "--batch", "500", "--threads",
           str(threads), "--repeats", "3"]
    return json_line(run(cmd, f"eval-torch-t{threads}")[0])["examples_per_s"], cmd


def fedc_lstm(batch, i):
    cmd = [f"./{BUILD}/bench_lstm_step", str(batch), "--no-peer", "--sets", "1", "--steps", str(LSTM_STEPS)]
    j = json_line(run(cmd, f"lstm-fedc-b{batch}")[0])
    return j["fedc_ms"], cmd, {"cpu_ms": j["fedc_cpu_ms"], "threads": j.get("fedc_threads", 1)}


def torch_lstm(batch, threads, i):
    cmd = [PY, "bench/peers/lstm_step_torch.py", "--batch", str(batch), "--threads", str(threads), "--steps",
                  str(LSTM_STEPS), "--json"]
    j = json_line(run(cmd, f"lstm-torch-b{batch}-t{threads}")[0])
    return j["step_ms"], cmd, {"cpu_ms": j["cpu_ms"]}


def alternate(runners, what):
    """runners: {name: fn(i) -> (figure, cmd, ...)}; runs them in turn, WARMUP + PAIRS times;
    returns {name: {"runs": [...], "median": m, "command": cmd}} without the warm-up runs."""
    res = {name: {"runs": []} for name in runners}
    for i in range(WARMUP + PAIRS):
        print(f"{what}: {'warm-up' if i < WARMUP else f'set {i - WARMUP + 1}/{PAIRS}'}", flush=True)
        for name, fn in runners.items():
            r = fn(i)
            res[name]["command"] = " ".join(r[1])
            if i >= WARMUP:
                res[name]["runs"].append(r[0])
            if len(r) > 2:
                res[name]["extra"] = r[2]
    for v in res.values():
        v["median"] = statistics.median(v["runs"])
    return res


def sgemm_peak():
    cmd = [f"./{BUILD}/bench_kernels", "peak"]
    return json_line(run(cmd, "sgemm-peak")[0]), " ".join(cmd)


def machine():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(), "load_at_start": load}


def components():
    for name, args in [("executor", []), ("kernels", []), ("thread_scaling", []), ("data_read", []), ("export", [])]:
        print(f"component: bench_{name}", flush=True)
        out, _ = run([f"./{BUILD}/bench_{name}"] + args, f"component-{name}")
    # benchmarks that launch processes themselves (mpirun): 1 and 2 ranks, weak scaling
    os.environ["FEDC"] = f"./{BUILD}/fedc"
    for script in sorted(f for f in os.listdir(os.path.join(ROOT, "bench")) if f.endswith(".sh")):
        print(f"component: {script}", flush=True)
        run(["sh", f"bench/{script}"], f"component-{script[:-3]}")


def mfu_text(mfu):
    """The MFU as a percentage; above 1 the peak was measured wrong (a loaded machine), and no
    percentage above 100 is printed."""
    return f"{100 * mfu:.0f}%" if mfu <= 1 else "n/a: above the measured peak (machine loaded?)"


def yes(ok):
    return "met" if ok else "NOT met"


def main():
    os.makedirs(os.path.join(ROOT, OUT, "logs"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, OUT, "runs"), exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    info = machine()
    print(f"fedc benchmarks ({started:%Y-%m-%d %H:%M} UTC, {info['cores']} cores, {info['cpu']}, load "
          f"{' '.join(info['load_at_start'])}){' QUICK' if QUICK else ''}: {WARMUP} warm-up + {PAIRS} sets",
          flush=True)
    peak0, peak_cmd = sgemm_peak()
    # Every run, fedc's and PyTorch's (which uses the same OpenBLAS), gets the kernels fedc
    # chose: Debian's OpenBLAS falls back to SSE3 kernels on CPUs newer than it knows, and
    # fedc moves itself off them (src/kernels/fast_blas.c); the peer must not be left there.
    if not os.environ.get("OPENBLAS_CORETYPE") and peak0.get("blas_core"):
        os.environ["OPENBLAS_CORETYPE"] = peak0["blas_core"]
    print(f"OpenBLAS kernels for fedc and PyTorch: {os.environ.get('OPENBLAS_CORETYPE', 'as OpenBLAS picks')}",
          flush=True)
    if not QUICK:
        components()

    train = alternate({"fedc-t2": lambda i: fedc_train(2, i), "torch-t1": lambda i: torch_train(1, i),
                       "fedc-t1": lambda i: fedc_train(1, i), "torch-t2": lambda i: torch_train(2, i),
                       "fedc-pair": fedc_train_pair},
                      "workload 1+5 (FedAvg training)")
    evals = alternate({"fedc-t2": lambda i: fedc_eval(2, i), "torch-t1": lambda i: torch_eval(1, i),
                       "torch-t2": lambda i: torch_eval(2, i)}, "workload 2 (evaluation)")
    print("workload 3 (EMNIST-62 at full scale)", flush=True)
    full_cmd = [f"./{BUILD}/bench_emnist_full"] + (["1", "0.05"] if QUICK else ["5", "1"]) + ["2"]
    full = json_line(run(full_cmd, "emnist-full")[0])
    print("workload 4 (large cohorts)", flush=True)
    cohort_cmd = [f"./{BUILD}/bench_cohort_memory", "2", "2" if QUICK else "3", "100", "1000", "10000"]
    cohort_out = run(cohort_cmd, "cohort-memory")[0]
    cohort = json_line(cohort_out)
    lstm = {}
    for batch in (4, 32):
        lstm[batch] = alternate({"fedc": lambda i, b=batch: fedc_lstm(b, i),
                                 "torch-t1": lambda i, b=batch: torch_lstm(b, 1, i),
                                 "torch-t2": lambda i, b=batch: torch_lstm(b, 2, i)},
                                f"workload 6 (Shakespeare LSTM step, batch {batch})")
    run([f"./{BUILD}/fedc_test_onnx_train", "write", os.path.join(OUT, "onnx"), "0"], "onnx-cnn-write")
    onnx = alternate({"cnn": lambda i: fedc_train_model("cnn", "cnn", i),
                      "onnx": lambda i: fedc_train_model("onnx", f"onnx:{OUT}/onnx/cnn.onnx", i)},
                     "workload 7 (the EMNIST CNN from ONNX)")
    peak1, _ = sgemm_peak()

    peak_all = max(peak0["gflops_all"], peak1["gflops_all"])
    peak_one = max(peak0["gflops_1"], peak1["gflops_1"])
    fp32_peak = max(peak0["peak_gflops_all"], peak1["peak_gflops_all"], peak_all)
    train_flops = evals["fedc-t2"]["extra"]["train_flops"]
    fedc_train_eps = train["fedc-t2"]["median"]
    peer_train = max(("torch-t1", "torch-t2"), key=lambda k: train[k]["median"])
    peer_eval = max(("torch-t1", "torch-t2"), key=lambda k: evals[k]["median"])
    mfu = fedc_train_eps * train_flops * 1e-9 / fp32_peak
    scaling = train["fedc-t2"]["median"] / train["fedc-t1"]["median"]
    ceiling = train["fedc-pair"]["median"] / train["fedc-t1"]["median"]
    r_train = fedc_train_eps / train[peer_train]["median"]
    r_eval = evals["fedc-t2"]["median"] / evals[peer_eval]["median"]

    rows = [
        ("1. FedAvg training, FEMNIST-LEAF (examples/s)", f"{fedc_train_eps:.0f}",
         f"{train[peer_train]['median']:.0f} ({peer_train[-2:]})", f"{r_train:.2f}x", ">= 3x", yes(r_train >= 3)),
        ("1. model-FLOPs utilisation (of the measured FP32 peak)",
         f"{fedc_train_eps * train_flops * 1e-9:.1f} of {fp32_peak:.1f} GFLOP/s", "", mfu_text(mfu), ">= 70%",
         yes(mfu >= 0.70) if mfu <= 1 else "n/a"),
        ("2. evaluation, batch 500 (examples/s)", f"{evals['fedc-t2']['median']:.0f}",
         f"{evals[peer_eval]['median']:.0f} ({peer_eval[-2:]})", f"{r_eval:.2f}x", ">= 3x", yes(r_eval >= 3)),
        ("3. EMNIST-62 full scale: s/round", f"{full['seconds_per_round']:.3f}", "", "", "reported", ""),
        ("3. projected 1,500 rounds + full test eval", f"{full['projected_seconds'] / 3600:.2f} h "
         f"(eval {full['eval_seconds_full']:.0f} s)", "", "", "reported", ""),
        ("4. cohort 100 -> 10,000: (RSS - data) ratio", f"{cohort['rss_minus_data_mib'][0]:.2f} -> "
         f"{cohort['rss_minus_data_mib'][1]:.2f} MiB", "", f"{cohort['rss_ratio']:.3f}", "<= 1.1",
         yes(cohort['rss_ratio'] <= 1.1)),
        ("4. time per client, 10,000 vs 100 (1 = linear)", f"{cohort['seconds_per_round'][0]:.3f} -> "
         f"{cohort['seconds_per_round'][1]:.3f} s/round", "", f"{cohort['time_per_client_ratio']:.2f}",
         "linear (<= 1)", yes(cohort['time_per_client_ratio'] <= 1.1)),
        ("5. thread scaling of 1: 2 vs 1 thread (ex/s)", f"{train['fedc-t2']['median']:.0f} vs "
         f"{train['fedc-t1']['median']:.0f}", "", f"{scaling:.2f}x", ">= 1.9x", yes(scaling >= 1.9)),
        ("5. ... this machine's ceiling: two 1-thread runs at once", f"{train['fedc-pair']['median']:.0f} vs "
         f"{train['fedc-t1']['median']:.0f}", "", f"{ceiling:.2f}x", "(reported)", ""),
        (f"5. ... sgemm's: {peak0['threads']} threads' peak over 1 thread's", f"{peak_all:.1f} vs {peak_one:.1f} GFLOP/s", "",
         f"{peak_all / peak_one:.2f}x", "(reported)", ""),
    ]
    for batch, res in lstm.items():  # ms per step: lower is better, the ratio is the peer's over fedc's
        peer = min(("torch-t1", "torch-t2"), key=lambda k: res[k]["median"])
        r = res[peer]["median"] / res["fedc"]["median"]
        rows.append((f"6. Shakespeare LSTM step, batch {batch} (ms; fedc best of 1, 2 threads)", f"{res['fedc']['median']:.1f}",
                     f"{res[peer]['median']:.1f} ({peer[-2:]})", f"{r:.2f}x", ">= 1.5x", yes(r >= 1.5)))
        cpu_f, cpu_t = res["fedc"]["extra"]["cpu_ms"], res["torch-t1"]["extra"]["cpu_ms"]  # the last set's
        rows.append(("6. ... its CPU time per step, 1 thread each (ms)", f"{cpu_f:.1f}", f"{cpu_t:.1f} (t1)",
                     f"{cpu_t / cpu_f:.2f}x", "(load-robust)", ""))
    r_onnx = onnx["onnx"]["median"] / onnx["cnn"]["median"]
    rows.append(("7. EMNIST CNN from ONNX vs built-in, no dropout (examples/s)", f"{onnx['onnx']['median']:.0f}",
                 f"{onnx['cnn']['median']:.0f} (fedc cnn)", f"{r_onnx:.2f}x", ">= 0.9x", yes(r_onnx >= 0.9)))
    head = ("workload", "fedc", "PyTorch (best threads)", "ratio", "target", "")
    widths = [max(len(str(r[c])) for r in rows + [head]) for c in range(6)]
    fma = [max(peak0[k], peak1[k]) for k in ("fma_gflops_1", "fma_gflops_all", "fma_cpu_gflops_1", "fma_cpu_gflops_all")]
    print(f"\nFP32 peak in this run: sgemm (best of 512^3, 1024^3, 2048^3) 1 thread {peak_one:.1f} GFLOP/s, "
          f"all {peak0['threads']} threads {peak_all:.1f}; FMA loop ({peak0['fma_isa']}) 1 thread {fma[0]:.1f}, all "
          f"{fma[1]:.1f} (per CPU second {fma[2]:.1f}, {fma[3]:.1f}); the MFU's denominator {fp32_peak:.1f} GFLOP/s; one training example = {train_flops / 1e6:.2f} MFLOP (forward "
          f"{evals['fedc-t2']['extra']['forward_flops'] / 1e6:.2f})")
    print(f"medians of {PAIRS} alternating sets after {WARMUP} warm-up; fedc at 2 threads; load now "
          f"{open('/proc/loadavg').read().split()[0]}\n")
    for r in [head] + rows:
        print(" | ".join(str(v).ljust(w) for v, w in zip(r, widths)))

    results = {"date": started.isoformat(), "quick": QUICK, "pairs": PAIRS, "warmup": WARMUP, "machine": info,
               "blas_core": os.environ.get("OPENBLAS_CORETYPE", ""),
               "sgemm": {"start": peak0, "end": peak1, "gflops_1": peak_one, "gflops_all": peak_all,
                         "command": peak_cmd},
               "fp32_peak_gflops": fp32_peak,
               "train_flops_per_example": train_flops, "training": train, "evaluation": evals,
               "emnist_full": dict(full, command=" ".join(full_cmd)),
               "cohorts": dict(cohort, command=" ".join(cohort_cmd)),
               "lstm_step": {str(b): v for b, v in lstm.items()}, "onnx_cnn": onnx,
               "table": [dict(zip(["workload", "fedc", "peer", "ratio", "target", "status"], r)) for r in rows]}
    with open(os.path.join(ROOT, OUT, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nresults: {OUT}/results.json; logs: {OUT}/logs/")


if __name__ == "__main__":
    main()

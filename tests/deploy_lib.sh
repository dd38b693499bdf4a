# What the deployment's shell tests share (sourced first: a test without python3, which writes
# the data and compares the bits, is skipped).
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 is absent"
  exit 77
fi

# A port nothing listens on now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# same_bits A B: every tensor of checkpoint A is in B with the same bytes.
same_bits() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def load(p):
    d = open(p, "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    h = json.loads(d[8:8 + n])
    h.pop("__metadata__", None)
    return {k: d[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
differ = [k for k in a if a[k] != b.get(k)]
if not a or differ:
    sys.exit("differ: %s" % differ)
PY
}

# writers FILE N [emnist]: N EMNIST-shaped writers of 3 to 8 examples (LEAF JSON), named w0, w1, ...
# or, with "emnist", by EMNIST writer ids of both domains (f2100_00, f0001_00, f2102_00, ...).
writers() {
  python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
n = int(sys.argv[2])
users = ["f%04d_00" % (2100 + c if c % 2 == 0 else c) if sys.argv[3] == "emnist" else "w%d" % c for c in range(n)]
data = {}
for c, u in enumerate(users):
    n = 3 + (c * 5) % 6
    data[u] = {"x": [[((k * 7 + i * 13 + c * 31) % 101) / 100 for k in range(784)] for i in range(n)],
               "y": [(i * 11 + c * 3) % 62 for i in range(n)]}
json.dump({"users": users, "num_samples": [len(data[u]["y"]) for u in users], "user_data": data}, open(sys.argv[1], "w"))
PY
}

# replay METRICS: FEDC_FAULT's load:R:C,C/R:C... for the clients a deployed run left out of each
# round (its metrics' left_out), to replay the run through fedc train; "" when none was.
replay() {
  python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if not json.loads(l)["abandoned"]]
groups = ["%d:%s" % (r["round"], ",".join(map(str, r["left_out"]))) for r in rows if r["left_out"]]
print("load:" + "/".join(groups) if groups else "")
PY
}

# start_clients ADDR DATA LOG C...: client processes C... of DATA with token t, each under timeout
# 300 and its output in LOG$C.log; their pids in $clients
start_clients() {
  sc_addr=$1 sc_data=$2 sc_log=$3
  shift 3
  clients=""
  for c in "$@"; do
    timeout 300 "$fedc" client --connect "$sc_addr" --data "$sc_data" --client "$c" --token t --timeout 30 \
      >"$sc_log$c.log" 2>&1 &
    clients="$clients $!"
  done
}

# held LOG...: waits (60 s at most) until each client log LOG says it holds a task (FEDC_FAULT=slow
# prints so before it sleeps), so that a kill then lands on a client the server has heard from
held() {
  for h_log in "$@"; do
    for h_i in $(seq 1 600); do grep -q "task held" "$h_log" 2>/dev/null && break; sleep 0.1; done
  done
}

# deploy_begin: the test's scratch directory ($out), the server and client processes it starts
# ($server, $pids), killed and removed at exit, and the checks of expect.sh.
deploy_begin() {
  out=$(mktemp -d)
  server="" pids=""
  trap 'kill -9 $server $pids 2>/dev/null; rm -rf "$out"' EXIT
  . "$(dirname "$0")/expect.sh"
}

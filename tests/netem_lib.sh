# What the netem tests share (sourced after deploy_lib.sh): network namespaces for a server and
# its client hosts, joined by tests/netem.py, a network emulator in user space, or by a veth pair.
# Every name carries this process's id, and the test's exit removes them all. A machine where they
# cannot be made (not root, no CAP_NET_ADMIN, no ip or TUN) skips.

netem_skip() { echo "SKIP: $*"; exit 77; }

# netem_begin: the test's scratch directory ($out), the server and other processes it starts
# ($server, $pids), killed, and its namespaces removed, at exit (or on a signal); expect.sh's
# checks. Skips (77) where namespaces cannot be made.
netem_begin() {
  [ "$(id -u)" = 0 ] || netem_skip "network namespaces need root (or CAP_NET_ADMIN): this is uid $(id -u)"
  command -v ip >/dev/null || netem_skip "no ip command (iproute2)"
  netem_prefix=fedc-netem-$$
  netem_names="" netem_relay="" server="" pids=""
  out=$(mktemp -d)
  trap 'kill -9 $server $pids 2>/dev/null; netem_end; rm -rf "$out"' EXIT
  trap 'exit 1' INT TERM HUP
  ip netns add "$netem_prefix-probe" 2>"$out/netns.err" || netem_skip "ip netns add: $(cat "$out/netns.err")"
  ip netns del "$netem_prefix-probe"
  . "$(dirname "$0")/expect.sh"
}

# inns NS COMMAND...: COMMAND in namespace NS
inns() { inns_ns=$1; shift; ip netns exec "$inns_ns" "$@"; }

# netem_ns NAME: a namespace $netem_prefix-NAME, loopback up, removed at exit; its name in $ns
netem_ns() {
  ns=$netem_prefix-$1
  ip netns add "$ns" || netem_skip "ip netns add $ns failed"
  netem_names="$netem_names $ns"
  inns "$ns" ip link set lo up
}

# netem_star H: a server namespace ($srv_ns, address 10.77.0.1) and H host namespaces ($host_ns0,
# ..., addresses 10.77.1.1, 10.77.1.2, ...), each host on a link of its own to the server through
# tests/netem.py; the links' impairments in $out/link.I (netem_link). Skips without TUN.
netem_star() {
  [ -c /dev/net/tun ] || netem_skip "no /dev/net/tun: the network emulator needs TUN"
  netem_ns srv; srv_ns=$ns
  netem_ns router; router_ns=$ns
  ns_hosts=""
  for i in $(seq 0 $(($1 - 1))); do netem_ns h$i; eval host_ns$i=\$ns; ns_hosts="$ns_hosts $ns"; done
  ip netns exec "$router_ns" python3 "${netem_py:-$(dirname "$0")/netem.py}" "$out" "$srv_ns" $ns_hosts >"$out/netem.log" 2>&1 &
  netem_relay=$!
  for i in $(seq 1 100); do [ -e "$out/ready" ] && break; sleep 0.05; done
  [ -e "$out/ready" ] || netem_skip "the network emulator did not start: $(cat "$out/netem.log")"
  inns "$srv_ns" ip addr add 10.77.0.1/16 dev fnS
  inns "$srv_ns" ip link set fnS up
  for i in $(seq 0 $(($1 - 1))); do
    eval h=\$host_ns$i
    inns "$h" ip addr add 10.77.1.$((i + 1))/16 dev fn$i
    inns "$h" ip link set fn$i up
  done
}

# netem_link I SPEC: link I's impairments from now on (netem.py: delay= jitter= loss= reorder= rate= down=)
netem_link() { echo "$2" >"$out/link.$1.new" && mv "$out/link.$1.new" "$out/link.$1"; }

# netem_pair A B: namespaces $netem_prefix-A (10.78.0.1) and -B (10.78.0.2) joined by a veth pair
# (the kernel's: fast, no emulator), their names in $pair_a and $pair_b
netem_pair() {
  netem_ns "$1"; pair_a=$ns
  netem_ns "$2"; pair_b=$ns
  ip link add "fa$$" netns "$pair_a" type veth peer name "fb$$" netns "$pair_b" \
    || netem_skip "ip link add type veth failed"
  inns "$pair_a" ip addr add 10.78.0.1/24 dev "fa$$"
  inns "$pair_b" ip addr add 10.78.0.2/24 dev "fb$$"
  inns "$pair_a" ip link set "fa$$" up
  inns "$pair_b" ip link set "fb$$" up
}

# netem_end: the emulator stopped (its counts written) and every namespace made here removed
netem_end() {
  [ -n "$netem_relay" ] && kill "$netem_relay" 2>/dev/null && wait "$netem_relay" 2>/dev/null
  netem_relay=""
  for netem_n in $netem_names; do
    ip netns pids "$netem_n" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$netem_n" 2>/dev/null
  done
  netem_names=""
}

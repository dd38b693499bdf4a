#!/usr/bin/env python3
"""A network emulator in user space for the deployment's netem tests (tests/deploy_netem.sh).

It does what `tc qdisc ... netem` does (delay with jitter, loss, reordering, a rate cap) and what
`ip link set down` does to a link, to IP packets between a server's network namespace and its
clients' (hosts'), each host on a link of its own: kernels without sch_netem (CONFIG_NET_SCH_NETEM
unset, as on the CI's) still have TUN. Run in a namespace of its own (the router's):

    netem.py DIR SERVER_NS HOST_NS...

makes a TUN device for the server and one per host, moves each into its namespace (the file
descriptors stay here, which is how packets come to this process), writes DIR/ready, and forwards
every packet until killed: from host i to the server and back, each way through link i's
impairments, read from DIR/link.I (re-read when it changes), one line of KEY=VALUE:

    delay=MS jitter=MS loss=PERCENT reorder=PERCENT rate=KBIT down=0|1

delay: each packet held MS, plus or minus a uniform JITTER (so packets can pass each other, as
with netem); reorder: that share of the packets sent at once, not delayed (netem's reorder);
loss: that share dropped; rate: the link's bit rate, packets queued behind each other (1000 at
most, the rest dropped, as netem's limit); down: every packet dropped (a cut cable). The devices:
the server's fnS, addresses 10.77.0.1; host i's fnI, 10.77.1.(i+1); the caller sets them up.
Counts of packets forwarded and dropped per link go to DIR/stats.I, every half second and on exit
(SIGTERM)."""
import fcntl, heapq, os, random, select, signal, struct, subprocess, sys, time

TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000
LIMIT = 1000


def tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


class Link:
    """One host's link: its impairments, both ways, and each way's queue timing."""

    def __init__(self, path):
        self.path, self.mtime, self.spec = path, None, {}
        self.free = [0.0, 0.0]  # when each way's wire is free again (the rate cap)
        self.queued = [0, 0]
        self.sent = self.dropped = 0

    def reread(self):
        try:
            m = os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            m = 0
        if m == self.mtime:
            return
        self.mtime = m
        text = open(self.path).read() if m else ""
        self.spec = {k: float(v) for k, v in (w.split("=") for w in text.split())}

    def when(self, way, size, now, rng):
        """The time the packet leaves, or None: dropped."""
        s = self.spec
        if s.get("down") or rng.random() * 100 < s.get("loss", 0) or self.queued[way] >= LIMIT:
            self.dropped += 1
            return None
        self.sent += 1
        t = now
        if not rng.random() * 100 < s.get("reorder", 0):
            j = s.get("jitter", 0)
            t += max(0.0, s.get("delay", 0) + rng.uniform(-j, j)) / 1000
        if s.get("rate"):
            t = self.free[way] = max(t, self.free[way]) + size * 8 / (s["rate"] * 1000)
        return t


def main():
    out, server_ns, hosts = sys.argv[1], sys.argv[2], sys.argv[3:]
    rng = random.Random(41)
    names = ["fnS"] + ["fn%d" % i for i in range(len(hosts))]
    fds = [tun(n) for n in names]
    for n, ns in zip(names, [server_ns] + hosts):
        subprocess.run(["ip", "link", "set", "dev", n, "netns", ns], check=True)
    links = [Link(os.path.join(out, "link.%d" % i)) for i in range(len(hosts))]
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    open(os.path.join(out, "ready"), "w").close()
    queue, seq, checked, counted = [], 0, 0.0, 0.0
    while not stop:
        now = time.monotonic()
        if now - checked > 0.05:
            for l in links:
                l.reread()
            checked = now
        if now - counted > 0.5:
            write_stats(out, links)
            counted = now
        while queue and queue[0][0] <= now:
            _, _, fd, pkt, link, way = heapq.heappop(queue)
            link.queued[way] -= 1
            try:
                os.write(fd, pkt)
            except OSError:  # the device is down, or gone: the packet is lost
                pass
        wait = min(0.05, max(0.0, queue[0][0] - now)) if queue else 0.05
        try:
            ready, _, _ = select.select(fds, [], [], wait)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in ready:
            for _ in range(64):  # a burst at most, then the others' turn
                try:
                    pkt = os.read(fd, 65536)
                except (BlockingIOError, OSError):
                    break
                if len(pkt) < 20 or pkt[0] >> 4 != 4:
                    continue  # IPv4 only (the test's addresses)
                if fd == fds[0]:  # from the server: to the host its destination names
                    i = pkt[19] - 1
                    if pkt[18] != 1 or not 0 <= i < len(hosts):
                        continue
                    link, way, to = links[i], 0, fds[1 + i]
                else:
                    i = fds.index(fd) - 1
                    link, way, to = links[i], 1, fds[0]
                t = link.when(way, len(pkt), now, rng)
                if t is None:
                    continue
                link.queued[way] += 1
                seq += 1
                heapq.heappush(queue, (t, seq, to, pkt, link, way))
    write_stats(out, links)


def write_stats(out, links):
    for i, l in enumerate(links):
        with open(os.path.join(out, "stats.%d.new" % i), "w") as f:
            f.write("sent=%d dropped=%d\n" % (l.sent, l.dropped))
        os.replace(os.path.join(out, "stats.%d.new" % i), os.path.join(out, "stats.%d" % i))


if __name__ == "__main__":
    main()

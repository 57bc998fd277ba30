package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// network is the brokers' own network: a bridge in the harness's
// namespace holding the client address (.1 of the subnet), and per broker
// a network namespace joined to the bridge by a veth pair, the broker's
// address (.11, .12, ...) on its end.
//
// Faults are tc rules, which need no package beyond iproute2 and only the
// htb qdisc and the u32 classifier of the kernel: every veth end has an htb
// root whose default class passes everything and whose class 1:2 ends in a
// pfifo of limit 0, so a packet a u32 filter puts there is dropped. A
// packet from S to broker D is dropped on the bridge side of D's veth
// (egress towards D, matched on source S); a packet from broker S to the
// client, on the namespace side of S's veth (matched on destination). The
// kernel this was built on has no netem, prio or gact; a slow link is
// netem where the kernel has it, else an htb rate limit with a short queue.
//
// Names are gch<run id><suffix>, the run id the harness's pid in hex, so
// that runs can coexist, each name stays within the 15 bytes of an
// interface name, and a run can tell a dead run's leftovers by the pid.
type network struct {
	id       string
	subnet   string // first three octets
	bridge   string
	ns       []string
	hostVeth []string // bridge side
	nsVeth   []string // namespace side
	brokers  []string // addresses
	client   string
	// netem is whether the kernel has the netem qdisc.
	netem bool
	// slowed are the devices a slow-link fault changed, as "ns dev".
	slowed []string
}

var nameRE = regexp.MustCompile(`^gch([0-9a-f]+)(br|n[0-9]+|h[0-9]+)$`)

// sh runs an ip or tc command, returning its output in the error.
func sh(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// alive reports whether pid is a running chaos harness: /proc/<pid>/stat
// names it chaos and its state is not zombie (a killed harness stays a
// zombie until its parent reaps it).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i || len(s) < j+3 {
		return false
	}
	return s[i+1:j] == "chaos" && s[j+2] != 'Z' && s[j+2] != 'X'
}

// removeLeftovers deletes the namespaces and links of chaos runs that are
// no longer running, and kills what still runs in those namespaces (only
// processes in a namespace named by this harness). It reports what it
// removed.
func removeLeftovers(logf func(string, ...any)) {
	dead := func(name string) bool {
		m := nameRE.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, err := strconv.ParseInt(m[1], 16, 64)
		return err == nil && !alive(int(pid))
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || !dead(f[0]) {
				continue
			}
			if pids, err := exec.Command("ip", "netns", "pids", f[0]).Output(); err == nil {
				for _, p := range strings.Fields(string(pids)) {
					if pid, err := strconv.Atoi(p); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			logf("removing network namespace %s of a run no longer running", f[0])
			sh("ip", "netns", "del", f[0])
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if dead(name) {
				logf("removing link %s of a run no longer running", name)
				sh("ip", "link", "del", name)
			}
		}
	}
}

// pickSubnet returns a 10.77.x subnet no address or route of this machine
// is in, starting from one derived from the pid.
func pickSubnet() (string, error) {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		return "", err
	}
	routes, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return "", err
	}
	used := string(out) + string(routes)
	start := os.Getpid() % 200
	for i := range 200 {
		s := fmt.Sprintf("10.77.%d", 20+(start+i)%200)
		if !strings.Contains(used, s+".") {
			return s, nil
		}
	}
	return "", fmt.Errorf("no free 10.77.x.0/24 subnet")
}

// newNetwork creates the bridge, the namespaces and the veth pairs for n
// brokers. On an error it removes what it made.
func newNetwork(n int) (_ *network, err error) {
	subnet, err := pickSubnet()
	if err != nil {
		return nil, err
	}
	id := strconv.FormatInt(int64(os.Getpid()), 16)
	nw := &network{id: id, subnet: subnet, bridge: "gch" + id + "br", client: subnet + ".1"}
	defer func() {
		if err != nil {
			nw.close()
		}
	}()
	cmds := [][]string{
		{"ip", "link", "add", nw.bridge, "type", "bridge"},
		{"ip", "addr", "add", nw.client + "/24", "dev", nw.bridge},
		{"ip", "link", "set", nw.bridge, "up"},
	}
	for i := range n {
		ns, hv, pv := fmt.Sprintf("gch%sn%d", id, i+1), fmt.Sprintf("gch%sh%d", id, i+1), fmt.Sprintf("gch%sp%d", id, i+1)
		addr := fmt.Sprintf("%s.%d", subnet, 11+i)
		nw.ns, nw.hostVeth, nw.nsVeth, nw.brokers = append(nw.ns, ns), append(nw.hostVeth, hv), append(nw.nsVeth, pv), append(nw.brokers, addr)
		cmds = append(cmds,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", hv, "type", "veth", "peer", "name", pv, "netns", ns},
			[]string{"ip", "link", "set", hv, "master", nw.bridge, "up"},
			[]string{"ip", "-n", ns, "addr", "add", addr + "/24", "dev", pv},
			[]string{"ip", "-n", ns, "link", "set", pv, "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, c := range cmds {
		if err := sh(c...); err != nil {
			return nw, err
		}
	}
	for i := range n {
		for _, d := range [][2]string{{"", nw.hostVeth[i]}, {nw.ns[i], nw.nsVeth[i]}} {
			if err := nw.setupDev(d[0], d[1]); err != nil {
				return nw, err
			}
		}
	}
	// netem is tried once on a device; where the kernel lacks it, a slow
	// link is a rate limit.
	nw.netem = sh("tc", "qdisc", "add", "dev", nw.hostVeth[0], "parent", "1:1", "handle", "10:", "netem", "delay", "1ms") == nil
	if nw.netem {
		sh("tc", "qdisc", "del", "dev", nw.hostVeth[0], "parent", "1:1", "handle", "10:")
	}
	return nw, nil
}

// tc runs a tc command in namespace ns ("" for the harness's own).
func tc(ns string, args ...string) error {
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	return sh(append([]string{"tc"}, args...)...)
}

// setupDev gives dev its htb root: class 1:1 passes everything, class 1:2
// drops everything put into it.
func (nw *network) setupDev(ns, dev string) error {
	for _, c := range [][]string{
		{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"},
		{"class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", "1gbit", "burst", "256k", "cburst", "256k", "quantum", "60000"},
		{"class", "add", "dev", dev, "parent", "1:", "classid", "1:2", "htb", "rate", "8bit", "quantum", "1514"},
		{"qdisc", "add", "dev", dev, "parent", "1:2", "handle", "2:", "pfifo", "limit", "0"},
	} {
		if err := tc(ns, c...); err != nil {
			return err
		}
	}
	return nil
}

// brokerIndex returns the index of address a among the brokers, -1 for
// the client.
func (nw *network) brokerIndex(a string) int {
	for i, b := range nw.brokers {
		if b == a {
			return i
		}
	}
	return -1
}

// drop makes the network drop every packet from address src to address
// dst, until heal.
func (nw *network) drop(src, dst string) error {
	if j := nw.brokerIndex(dst); j >= 0 {
		return tc("", "filter", "add", "dev", nw.hostVeth[j], "parent", "1:", "protocol", "ip", "prio", "1",
			"u32", "match", "ip", "src", src+"/32", "classid", "1:2")
	}
	i := nw.brokerIndex(src)
	if i < 0 {
		return fmt.Errorf("drop %s -> %s: neither is a broker", src, dst)
	}
	return tc(nw.ns[i], "filter", "add", "dev", nw.nsVeth[i], "parent", "1:", "protocol", "ip", "prio", "1",
		"u32", "match", "ip", "dst", dst+"/32", "classid", "1:2")
}

// slow makes the links into and out of broker i slow and lossy: netem
// delay 100 ms ± 50 ms and 5% loss where the kernel has netem, else a rate
// of 256 kbit/s with a queue of 20 packets (queueing delay, tail drops).
func (nw *network) slow(i int) (string, error) {
	what := "netem delay 100ms 50ms loss 5%"
	if !nw.netem {
		what = "htb rate 256kbit, pfifo limit 20"
	}
	for _, d := range [][2]string{{"", nw.hostVeth[i]}, {nw.ns[i], nw.nsVeth[i]}} {
		nw.slowed = append(nw.slowed, d[0]+" "+d[1])
		var err error
		if nw.netem {
			err = tc(d[0], "qdisc", "add", "dev", d[1], "parent", "1:1", "handle", "10:", "netem", "delay", "100ms", "50ms", "loss", "5%")
		} else {
			err = tc(d[0], "class", "change", "dev", d[1], "parent", "1:", "classid", "1:1", "htb", "rate", "256kbit", "ceil", "256kbit", "quantum", "1514")
			if err == nil {
				err = tc(d[0], "qdisc", "add", "dev", d[1], "parent", "1:1", "handle", "10:", "pfifo", "limit", "20")
			}
		}
		if err != nil {
			return what, err
		}
	}
	return what, nil
}

// heal removes every drop rule and slow link.
func (nw *network) heal() error {
	var errs []string
	for i := range nw.brokers {
		for _, d := range [][2]string{{"", nw.hostVeth[i]}, {nw.ns[i], nw.nsVeth[i]}} {
			if err := tc(d[0], "filter", "del", "dev", d[1], "parent", "1:"); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	for _, s := range nw.slowed {
		ns, dev, _ := strings.Cut(s, " ")
		tc(ns, "qdisc", "del", "dev", dev, "parent", "1:1", "handle", "10:")
		if err := tc(ns, "class", "change", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", "1gbit", "burst", "256k", "cburst", "256k", "quantum", "60000"); err != nil {
			errs = append(errs, err.Error())
		}
	}
	nw.slowed = nil
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}

// close removes the namespaces and the bridge (the veth pairs go with
// their namespaces). The brokers must be gone first.
func (nw *network) close() {
	for _, ns := range nw.ns {
		sh("ip", "netns", "del", ns)
	}
	sh("ip", "link", "del", nw.bridge)
}

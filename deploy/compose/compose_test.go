// Package compose checks the Docker Compose files here against each
// other and against the broker's settings: every broker's published ports
// are listener ports published under the same number, its advertised
// listeners name its container (inside) or localhost (outside), node ids
// differ, the etcd members (embedded or external) name each other
// consistently, Prometheus scrapes every broker's admin port under the job
// the alert rules expect, the files mounted exist, and the stop grace
// period covers a controlled shutdown.
//
// This reads the files rather than running them: the images of
// Prometheus, Grafana and etcd cannot be pulled on the machines the tests
// run on. `make compose-check` (check.sh here) runs the brokers of both
// files under podman-compose.
package compose

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// file is the part of a compose file the checks read.
type file struct {
	Services map[string]service `json:"services"`
	Networks map[string]any     `json:"networks"`
	Volumes  map[string]any     `json:"volumes"`
}

type service struct {
	Image           string            `json:"image"`
	Hostname        string            `json:"hostname"`
	Environment     map[string]string `json:"environment"`
	Ports           []string          `json:"ports"`
	Volumes         []string          `json:"volumes"`
	Networks        []string          `json:"networks"`
	StopGracePeriod string            `json:"stop_grace_period"`
	Entrypoint      []string          `json:"entrypoint"`
	Command         []string          `json:"command"`
	DependsOn       []string          `json:"depends_on"`
}

func load(t *testing.T, path string) file {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Anchors and merge keys (<<: *gregor) are resolved by the YAML
	// decoder; the x- extension fields are left for compose.
	var f file
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

func listeners(t *testing.T, what, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(l), "://")
		if !ok {
			t.Fatalf("%s: %q is not NAME://host:port", what, l)
		}
		out[name] = addr
	}
	return out
}

func split(t *testing.T, what, hp string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		t.Fatalf("%s %q: %v", what, hp, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s %q: %v", what, hp, err)
	}
	return h, n
}

// brokers returns the services that run gregor, by name.
func brokers(f file) []string {
	var out []string
	for name, s := range f.Services {
		if _, ok := s.Environment["GREGOR_NODE_ID"]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestComposeFiles(t *testing.T) {
	for _, path := range []string{"compose.yaml", "compose.external-etcd.yaml"} {
		t.Run(path, func(t *testing.T) { checkCompose(t, path) })
	}
}

func checkCompose(t *testing.T, path string) {
	f := load(t, path)
	names := brokers(f)
	if len(names) != 3 {
		t.Fatalf("brokers %v, want 3", names)
	}
	ids := map[string]string{}
	for _, name := range names {
		s := f.Services[name]
		env := s.Environment
		if s.Hostname != name {
			t.Errorf("%s: hostname %q, want the service name", name, s.Hostname)
		}
		if !strings.HasPrefix(s.Image, "${GREGOR_IMAGE:-gregor:dev}") {
			t.Errorf("%s: image %q, want ${GREGOR_IMAGE:-gregor:dev} (what make image builds)", name, s.Image)
		}
		if other, dup := ids[env["GREGOR_NODE_ID"]]; dup {
			t.Errorf("%s and %s have node.id %s", name, other, env["GREGOR_NODE_ID"])
		}
		ids[env["GREGOR_NODE_ID"]] = name

		ls := listeners(t, name+" listeners", env["GREGOR_LISTENERS"])
		adv := listeners(t, name+" advertised.listeners", env["GREGOR_ADVERTISED_LISTENERS"])
		ibl := env["GREGOR_INTER_BROKER_LISTENER_NAME"]
		protocols := map[string]bool{}
		for _, p := range strings.Split(env["GREGOR_LISTENER_SECURITY_PROTOCOL_MAP"], ",") {
			n, _, _ := strings.Cut(p, ":")
			protocols[n] = true
		}
		for lname, addr := range ls {
			if !protocols[lname] {
				t.Errorf("%s: listener %s has no security protocol", name, lname)
			}
			a, ok := adv[lname]
			if !ok {
				t.Errorf("%s: listener %s is not advertised", name, lname)
				continue
			}
			_, lport := split(t, name+" listener", addr)
			ahost, aport := split(t, name+" advertised", a)
			if aport != lport {
				t.Errorf("%s: %s listens on %d but is advertised at %s: it must be published under its own number (a broker dials its own address)", name, lname, lport, a)
			}
			switch {
			case lname == ibl && ahost != name:
				t.Errorf("%s: inter-broker listener %s advertised at %s, want the container's name", name, lname, a)
			case lname != ibl && ahost != "localhost":
				t.Errorf("%s: listener %s for the host advertised at %s, want localhost", name, lname, a)
			}
			if lname != ibl && !slices.Contains(s.Ports, fmt.Sprintf("%d:%d", lport, lport)) {
				t.Errorf("%s: listener %s (port %d) is not published as %d:%d: %v", name, lname, lport, lport, lport, s.Ports)
			}
		}
		if _, ok := ls[ibl]; !ok {
			t.Errorf("%s: inter-broker listener %q is not a listener", name, ibl)
		}
		for _, p := range s.Ports {
			host, cont, _ := strings.Cut(p, ":")
			found := false
			for _, addr := range ls {
				_, lport := split(t, name+" listener", addr)
				found = found || strconv.Itoa(lport) == cont
			}
			if !found || host != cont {
				t.Errorf("%s: published port %q is no listener's port under its own number", name, p)
			}
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+env["GREGOR_LOG_DIRS"]) }) {
			t.Errorf("%s: no volume at log.dirs %s: %v", name, env["GREGOR_LOG_DIRS"], s.Volumes)
		}
		// SIGTERM: leaderships moved (at most broker.session.timeout.ms),
		// then the etcd member stopped (at most 15 s).
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil {
			t.Errorf("%s: stop_grace_period %q: %v", name, s.StopGracePeriod, err)
		}
		session, _ := strconv.Atoi(env["GREGOR_BROKER_SESSION_TIMEOUT_MS"])
		if need := time.Duration(session)*time.Millisecond + 15*time.Second; grace <= need || session == 0 {
			t.Errorf("%s: stop_grace_period %s, want more than %s (broker.session.timeout.ms %d + etcd stop 15 s)", name, grace, need, session)
		}

		if eps := env["GREGOR_ETCD_ENDPOINTS"]; eps != "" {
			checkExternalEtcd(t, f, name, eps)
		} else {
			checkEmbeddedEtcd(t, f, name, env)
		}
	}
	checkPrometheus(t, f, names)
	checkMounts(t, f)
}

// checkEmbeddedEtcd: the member listens on every interface and the
// initial cluster names gregor-<node.id> at the container's name.
func checkEmbeddedEtcd(t *testing.T, f file, name string, env map[string]string) {
	peerHost, peerPort := split(t, name+" etcd.peer.addr", env["GREGOR_ETCD_PEER_ADDR"])
	if peerHost != "0.0.0.0" {
		t.Errorf("%s: etcd.peer.addr %s: the member must listen on every interface to be reached by name", name, env["GREGOR_ETCD_PEER_ADDR"])
	}
	members := map[string]string{}
	for _, e := range strings.Split(env["GREGOR_ETCD_INITIAL_CLUSTER"], ",") {
		n, u, _ := strings.Cut(e, "=")
		members[n] = u
	}
	if len(members) != len(brokers(f)) {
		t.Errorf("%s: initial etcd cluster %v, want one member per broker", name, members)
	}
	want := fmt.Sprintf("http://%s:%d", name, peerPort)
	if got := members["gregor-"+env["GREGOR_NODE_ID"]]; got != want {
		t.Errorf("%s: etcd member gregor-%s at %q, want %s", name, env["GREGOR_NODE_ID"], got, want)
	}
}

// checkExternalEtcd: every endpoint is an etcd service advertising that
// URL to clients, and the etcd members' initial cluster names each other.
func checkExternalEtcd(t *testing.T, f file, name, eps string) {
	for _, ep := range strings.Split(eps, ",") {
		u, err := url.Parse(ep)
		if err != nil {
			t.Fatalf("%s: etcd endpoint %q: %v", name, ep, err)
		}
		es, ok := f.Services[u.Hostname()]
		if !ok {
			t.Errorf("%s: etcd endpoint %s is no service", name, ep)
			continue
		}
		flags := etcdFlags(es)
		if flags["advertise-client-urls"] != ep {
			t.Errorf("etcd %s advertises %q to clients, brokers dial %s", u.Hostname(), flags["advertise-client-urls"], ep)
		}
		if !slices.Contains(f.Services[name].DependsOn, u.Hostname()) {
			t.Errorf("%s does not depend on %s", name, u.Hostname())
		}
	}
	for ename, es := range f.Services {
		flags := etcdFlags(es)
		if flags == nil {
			continue
		}
		if flags["name"] != ename {
			t.Errorf("etcd service %s has --name %q", ename, flags["name"])
		}
		peer := flags["initial-advertise-peer-urls"]
		if !strings.Contains(","+flags["initial-cluster"]+",", ","+ename+"="+peer+",") {
			t.Errorf("etcd %s: initial cluster %q lacks %s=%s", ename, flags["initial-cluster"], ename, peer)
		}
		if n, _ := strconv.Atoi(flags["max-txn-ops"]); n < 16384 {
			t.Errorf("etcd %s: --max-txn-ops %q, want at least 16384 (a topic is created in one transaction)", ename, flags["max-txn-ops"])
		}
	}
}

// etcdFlags returns the --key=value flags of an etcd service's entrypoint
// and command, nil for another service.
func etcdFlags(s service) map[string]string {
	if len(s.Entrypoint) == 0 || s.Entrypoint[0] != "etcd" {
		return nil
	}
	out := map[string]string{}
	for _, a := range append(slices.Clone(s.Entrypoint[1:]), s.Command...) {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = v
	}
	return out
}

// checkPrometheus: the config mounted into the prometheus service scrapes
// every broker's admin port under the job "gregor", and loads the rules.
func checkPrometheus(t *testing.T, f file, names []string) {
	ps, ok := f.Services["prometheus"]
	if !ok {
		t.Fatal("no prometheus service")
	}
	var cfgPath, rulesPath string
	for _, v := range ps.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		switch {
		case strings.HasSuffix(dst, "prometheus.yml:ro") || strings.HasSuffix(dst, "prometheus.yml"):
			cfgPath = src
		case strings.HasPrefix(dst, "/etc/prometheus/alerts.yml"):
			rulesPath = src
		}
	}
	if cfgPath == "" || rulesPath == "" {
		t.Fatalf("prometheus mounts no config or no alert rules: %v", ps.Volumes)
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", cfgPath, err)
	}
	if !slices.Contains(cfg.RuleFiles, "/etc/prometheus/alerts.yml") {
		t.Errorf("prometheus rule_files %v lack the mounted /etc/prometheus/alerts.yml", cfg.RuleFiles)
	}
	var want, got []string
	for _, n := range names {
		_, port := split(t, n+" admin.listener", f.Services[n].Environment["GREGOR_ADMIN_LISTENER"])
		want = append(want, fmt.Sprintf("%s:%d", n, port))
	}
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "gregor" {
			continue
		}
		for _, st := range sc.StaticConfigs {
			got = append(got, st.Targets...)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("prometheus job gregor scrapes %v, want the brokers' admin ports %v", got, want)
	}
}

// checkMounts: every bind-mounted file or dir exists, and every named
// volume is declared.
func checkMounts(t *testing.T, f file) {
	for name, s := range f.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				if _, err := os.Stat(filepath.Clean(src)); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			} else if _, ok := f.Volumes[src]; !ok {
				t.Errorf("%s mounts volume %s, which is not declared", name, src)
			}
		}
		for _, n := range s.Networks {
			if _, ok := f.Networks[n]; !ok {
				t.Errorf("%s is on network %s, which is not declared", name, n)
			}
		}
	}
}

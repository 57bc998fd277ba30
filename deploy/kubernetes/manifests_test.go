// Package kubernetes checks Gregor's Kubernetes manifests (gregor.yaml):
// every object decodes strictly into its Kubernetes API type (an unknown
// or misspelt field is an error, as `kubectl apply --validate=strict`
// makes it), and the settings that must agree across objects do: the
// container's ports and the broker config's listeners, the probes and the
// admin listener, the per-pod advertised listeners and etcd members and
// the headless Service, the grace period and the controlled shutdown.
//
// deploy/ is a Go module of its own so that the Kubernetes API packages
// stay out of the broker's go.mod; `make test` runs its tests.
package kubernetes

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifests are the objects of gregor.yaml, decoded.
type manifests struct {
	configMaps   []corev1.ConfigMap
	services     []corev1.Service
	statefulSets []appsv1.StatefulSet
	pdbs         []policyv1.PodDisruptionBudget
}

// decodeStrict decodes one YAML document into out as the API server's
// strict field validation does: field names are case-sensitive, and a
// field the type does not have or one given twice is an error.
func decodeStrict(doc []byte, out any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, out)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func loadManifests(t *testing.T, path string) manifests {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifests
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var target any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			m.configMaps = append(m.configMaps, corev1.ConfigMap{})
			target = &m.configMaps[len(m.configMaps)-1]
		case "v1 Service":
			m.services = append(m.services, corev1.Service{})
			target = &m.services[len(m.services)-1]
		case "apps/v1 StatefulSet":
			m.statefulSets = append(m.statefulSets, appsv1.StatefulSet{})
			target = &m.statefulSets[len(m.statefulSets)-1]
		case "policy/v1 PodDisruptionBudget":
			m.pdbs = append(m.pdbs, policyv1.PodDisruptionBudget{})
			target = &m.pdbs[len(m.pdbs)-1]
		default:
			t.Fatalf("document %d: unexpected %s %s; add it to the test", i, tm.APIVersion, tm.Kind)
		}
		if err := decodeStrict([]byte(doc), target); err != nil {
			t.Fatalf("document %d (%s): %v", i, tm.Kind, err)
		}
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestDecodeStrictRefusesUnknownFields(t *testing.T) {
	doc := []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  clusterIp: None\n")
	if err := decodeStrict(doc, &corev1.Service{}); err == nil {
		t.Error("a misspelt field (clusterIp) decoded without an error")
	}
	doc = []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  clusterIP: None\n  clusterIP: 10.0.0.1\n")
	if err := decodeStrict(doc, &corev1.Service{}); err == nil {
		t.Error("a field given twice decoded without an error")
	}
}

// brokerConfig is the broker config file of the ConfigMap, as the broker
// reads it: a YAML map of Kafka-style keys.
type brokerConfig map[string]string

func (c brokerConfig) port(t *testing.T, key string) int32 {
	t.Helper()
	v, ok := c[key]
	if !ok {
		t.Fatalf("broker config has no %s", key)
	}
	return hostPort(t, key, v)
}

func hostPort(t *testing.T, what, hp string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(hp)
	if err != nil {
		t.Fatalf("%s %q: %v", what, hp, err)
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		t.Fatalf("%s %q: port: %v", what, hp, err)
	}
	return int32(n)
}

// listeners parses NAME://host:port,... into name -> host:port.
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

// expand does what Kubernetes does to $(VAR) in env values and args: the
// variables defined before are replaced; others are left as they are.
func expand(s string, vars map[string]string) string {
	return regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func TestManifests(t *testing.T) {
	m := loadManifests(t, "gregor.yaml")
	if len(m.configMaps) != 1 || len(m.statefulSets) != 1 || len(m.pdbs) != 1 || len(m.services) != 2 {
		t.Fatalf("want 1 ConfigMap, 2 Services, 1 StatefulSet, 1 PodDisruptionBudget; got %d, %d, %d, %d",
			len(m.configMaps), len(m.services), len(m.statefulSets), len(m.pdbs))
	}
	cm, sts, pdb := m.configMaps[0], m.statefulSets[0], m.pdbs[0]
	spec := sts.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("pod has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	podLabels := sts.Spec.Template.Labels

	// The broker config file: mounted from the ConfigMap at the path the
	// args give to --config, and strict YAML of string-able values.
	i := slices.Index(c.Args, "--config")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("args %v: no --config FILE", c.Args)
	}
	configPath := c.Args[i+1]
	var mounted *corev1.VolumeMount
	for j, vm := range c.VolumeMounts {
		if strings.HasPrefix(configPath, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			mounted = &c.VolumeMounts[j]
		}
	}
	if mounted == nil {
		t.Fatalf("--config %s is on no volume mount", configPath)
	}
	vol := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == mounted.Name })
	if vol < 0 || spec.Volumes[vol].ConfigMap == nil || spec.Volumes[vol].ConfigMap.Name != cm.Name {
		t.Fatalf("volume %s mounted at %s is not the ConfigMap %s", mounted.Name, mounted.MountPath, cm.Name)
	}
	file := strings.TrimPrefix(configPath, strings.TrimSuffix(mounted.MountPath, "/")+"/")
	text, ok := cm.Data[file]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s (from --config %s)", cm.Name, file, configPath)
	}
	var rawCfg map[string]any
	if err := decodeStrict([]byte(text), &rawCfg); err != nil {
		t.Fatalf("broker config: %v", err)
	}
	cfg := brokerConfig{}
	for k, v := range rawCfg {
		cfg[k] = fmt.Sprint(v)
	}

	// Env: names the broker reads, each $(VAR) defined before its use.
	env := map[string]corev1.EnvVar{}
	defined := map[string]bool{}
	for _, e := range c.Env {
		for _, ref := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(e.Value, -1) {
			if !defined[ref[1]] {
				t.Errorf("env %s uses $(%s) before it is defined: Kubernetes would leave it as it is", e.Name, ref[1])
			}
		}
		defined[e.Name] = true
		env[e.Name] = e
	}

	// Ports: the container's equal the broker's listeners, admin listener
	// and etcd member's.
	ls := listeners(t, "listeners", cfg["listeners"])
	wantPorts := map[int32]bool{
		cfg.port(t, "admin.listener"):   true,
		cfg.port(t, "etcd.client.addr"): true,
		cfg.port(t, "etcd.peer.addr"):   true,
	}
	for name, addr := range ls {
		wantPorts[hostPort(t, "listener "+name, addr)] = true
		if host, _, _ := net.SplitHostPort(addr); host != "0.0.0.0" && host != "" && host != "::" {
			t.Errorf("listener %s listens on %s: other pods cannot reach it", name, addr)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		if !wantPorts[p.ContainerPort] {
			t.Errorf("container port %s %d is none of the broker's ports %v", p.Name, p.ContainerPort, wantPorts)
		}
		delete(wantPorts, p.ContainerPort)
		ports[p.Name] = p.ContainerPort
	}
	for p := range wantPorts {
		t.Errorf("broker port %d is not a container port", p)
	}
	resolve := func(what string, p intstr.IntOrString) int32 {
		if p.Type == intstr.String {
			n, ok := ports[p.StrVal]
			if !ok {
				t.Errorf("%s: no container port named %s", what, p.StrVal)
			}
			return n
		}
		return p.IntVal
	}

	// Probes: readiness on /readyz and liveness on /healthz, both on the
	// admin listener's port.
	admin := cfg.port(t, "admin.listener")
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("no %s probe over HTTP", pr.name)
			continue
		}
		if got := resolve(pr.name+" probe", pr.probe.HTTPGet.Port); got != admin || pr.probe.HTTPGet.Path != pr.path {
			t.Errorf("%s probe: GET %s on port %d, want %s on the admin port %d", pr.name, pr.probe.HTTPGet.Path, got, pr.path, admin)
		}
	}

	// Services: the headless one governs the StatefulSet, publishes pods
	// before they are ready (the embedded etcd members need each other to
	// become ready), and every Service port reaches a container port.
	var headless *corev1.Service
	for i, s := range m.services {
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = &m.services[i]
		}
		for k, v := range s.Spec.Selector {
			if podLabels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the pods do not carry", s.Name, k, v)
			}
		}
		for _, p := range s.Spec.Ports {
			if got := resolve("Service "+s.Name+" port "+p.Name, p.TargetPort); got == 0 {
				t.Errorf("Service %s port %s targets no container port", s.Name, p.Name)
			}
		}
	}
	if headless == nil || headless.Name != sts.Spec.ServiceName {
		t.Fatalf("StatefulSet serviceName %q is not a headless Service", sts.Spec.ServiceName)
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service %s does not publish not-ready pods: the brokers' etcd members could not find each other to become ready", headless.Name)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: OrderedReady would wait for gregor-0 to be ready, which needs a majority of etcd members", sts.Spec.PodManagementPolicy)
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	if replicas != 3 {
		t.Errorf("replicas %d, want 3", replicas)
	}

	// Per pod: node.id is the pod's index; advertised listeners name the
	// pod under the headless Service at the listeners' ports; the etcd
	// initial cluster has a member gregor-<node.id> per pod, at that pod's
	// name and the peer port.
	nodeID, ok := env["GREGOR_NODE_ID"]
	if !ok || nodeID.ValueFrom == nil || nodeID.ValueFrom.FieldRef == nil ||
		nodeID.ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Errorf("GREGOR_NODE_ID is not the pod-index label: %+v", nodeID)
	}
	for _, v := range []struct{ name, path string }{{"POD_NAME", "metadata.name"}, {"POD_NAMESPACE", "metadata.namespace"}} {
		if e := env[v.name]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != v.path {
			t.Errorf("%s is not the pod's %s", v.name, v.path)
		}
	}
	peerPort := cfg.port(t, "etcd.peer.addr")
	const ns = "some-namespace"
	for idx := range replicas {
		pod := fmt.Sprintf("%s-%d", sts.Name, idx)
		vars := map[string]string{"POD_NAME": pod, "POD_NAMESPACE": ns}
		podHost := fmt.Sprintf("%s.%s.%s.svc.cluster.local", pod, headless.Name, ns)

		adv := listeners(t, "advertised.listeners", expand(env["GREGOR_ADVERTISED_LISTENERS"].Value, vars))
		for name, addr := range ls {
			a, ok := adv[name]
			if !ok {
				t.Errorf("pod %s: listener %s is not advertised", pod, name)
				continue
			}
			host, _, _ := net.SplitHostPort(a)
			if host != podHost || hostPort(t, "advertised "+name, a) != hostPort(t, "listener "+name, addr) {
				t.Errorf("pod %s advertises %s as %s, want %s at the listener's port", pod, name, a, podHost)
			}
		}

		member := fmt.Sprintf("gregor-%d", idx) // gregor-<node.id>, node.id the pod index
		initial := expand(env["GREGOR_ETCD_INITIAL_CLUSTER"].Value, vars)
		found := false
		for _, entry := range strings.Split(initial, ",") {
			name, raw, _ := strings.Cut(strings.TrimSpace(entry), "=")
			if name != member {
				continue
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("etcd initial cluster entry %q: %v", entry, err)
			}
			found = true
			if u.Hostname() != podHost || hostPort(t, "etcd peer url", u.Host) != peerPort {
				t.Errorf("etcd member %s at %s, want %s:%d", member, u.Host, podHost, peerPort)
			}
		}
		if !found {
			t.Errorf("etcd initial cluster %q has no member %s for pod %s", initial, member, pod)
		}
		if n := len(strings.Split(initial, ",")); n != int(replicas) {
			t.Errorf("etcd initial cluster has %d members, want one per pod (%d)", n, replicas)
		}
	}

	// Data: the claim template is mounted at the log dir (which also holds
	// the etcd member's data).
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("volumeClaimTemplates: %d, want 1", len(sts.Spec.VolumeClaimTemplates))
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Name
	dataMount := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == claim })
	if dataMount < 0 || c.VolumeMounts[dataMount].MountPath != cfg["log.dirs"] {
		t.Errorf("claim %s is not mounted at log.dirs %s", claim, cfg["log.dirs"])
	}

	// Shutdown: SIGTERM makes the broker move its leaderships away (at most
	// broker.session.timeout.ms) and stop its etcd member (at most 15 s, the
	// cluster package's StopTimeout); the grace period must cover both.
	if cfg["controlled.shutdown.enable"] != "true" {
		t.Errorf("controlled.shutdown.enable is %q, want true", cfg["controlled.shutdown.enable"])
	}
	sessionMS, err := strconv.ParseInt(cfg["broker.session.timeout.ms"], 10, 64)
	if err != nil {
		t.Fatalf("broker.session.timeout.ms: %v", err)
	}
	const etcdStopSeconds = 15
	need := (sessionMS+999)/1000 + etcdStopSeconds
	grace := int64(30) // Kubernetes' default
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if grace <= need {
		t.Errorf("terminationGracePeriodSeconds %d, want more than %d (controlled shutdown %d ms + etcd stop %d s)",
			grace, need, sessionMS, etcdStopSeconds)
	}

	// Non-root, as the image is.
	psc, csc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 || psc.FSGroup == nil {
		t.Errorf("pod securityContext %+v: want runAsNonRoot, a non-zero runAsUser and an fsGroup (the volume's owner)", psc)
	}
	if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v: want allowPrivilegeEscalation false", csc)
	}

	// One broker down at a time.
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "1" || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: maxUnavailable %v, minAvailable %v; want maxUnavailable 1", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("PodDisruptionBudget selects %s=%s, which the pods do not carry", k, v)
		}
	}
	if !maps.Equal(sts.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget selector %v differs from the StatefulSet's %v", pdb.Spec.Selector.MatchLabels, sts.Spec.Selector.MatchLabels)
	}
}

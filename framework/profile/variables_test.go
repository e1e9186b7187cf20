package profile

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// countingPorts hands out 40001, 40002, ... so that tests can tell which
// name got which port.
func countingPorts() PortAllocator {
	next := 40000
	return func() (int, error) { next++; return next, nil }
}

func TestExpand(t *testing.T) {
	p := &Profile{Dir: "/profiles"}
	tests := []struct {
		name string
		// steps are expanded in order; instance -1 is the run's own
		// expander (services, cloud driver), n >= 0 CCM instance n.
		steps []struct {
			instance int
			in, want string
		}
	}{
		{"fixed variables", []struct {
			instance int
			in, want string
		}{
			{-1, "${PROFILE_DIR}/bin", "/profiles/bin"},
			{-1, "unix://${RUN_DIR}/cloud.sock", "unix:///run/x/cloud.sock"},
			{-1, "--kubeconfig=${KUBECONFIG}", "--kubeconfig=/run/x/kubeconfig"},
			{-1, "no variables", "no variables"},
			{-1, "tcp://${HOST_IP}:1", "tcp://127.0.0.1:1"},
		}},
		{"instance numbers", []struct {
			instance int
			in, want string
		}{
			{-1, "cloud-${INSTANCE}", "cloud-0"},
			{0, "ccm-${INSTANCE}", "ccm-0"},
			{1, "ccm-${INSTANCE}", "ccm-1"},
			{2, "${INSTANCE}${INSTANCE}", "22"},
		}},
		{"a name keeps its port within an instance", []struct {
			instance int
			in, want string
		}{
			{0, "${FREE_PORT_A} ${FREE_PORT_B} ${FREE_PORT_A}", "40001 40002 40001"},
			{0, "${FREE_PORT}", "40003"},
			{0, "${FREE_PORT} ${FREE_PORT_B}", "40003 40002"},
		}},
		{"instances get ports of their own", []struct {
			instance int
			in, want string
		}{
			{0, "${FREE_PORT_WEBHOOK}", "40001"},
			{1, "${FREE_PORT_WEBHOOK}", "40002"},
			{2, "${FREE_PORT_WEBHOOK}", "40003"},
			{1, "${FREE_PORT_WEBHOOK}", "40002"},
		}},
		{"instances share the ports of the services", []struct {
			instance int
			in, want string
		}{
			{-1, "--listen=127.0.0.1:${FREE_PORT_CLOUD}", "--listen=127.0.0.1:40001"},
			{0, "http://127.0.0.1:${FREE_PORT_CLOUD} ${FREE_PORT}", "http://127.0.0.1:40001 40002"},
			{1, "http://127.0.0.1:${FREE_PORT_CLOUD} ${FREE_PORT}", "http://127.0.0.1:40001 40003"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := p.NewExpander(ExpanderInput{RunDir: "/run/x", Kubeconfig: "/run/x/kubeconfig", FreePort: countingPorts()})
			instances := map[int]*Expander{}
			for i, step := range tt.steps {
				e := run
				if step.instance >= 0 {
					if instances[step.instance] == nil {
						instances[step.instance] = run.ForInstance(step.instance)
					}
					e = instances[step.instance]
				}
				got, err := e.Expand(step.in)
				if err != nil || got != step.want {
					t.Errorf("step %d: instance %d: Expand(%q) = %q, %v; want %q", i, step.instance, step.in, got, err, step.want)
				}
			}
		})
	}
}

func TestExpandClusterVariables(t *testing.T) {
	p := &Profile{Dir: "/profiles"}
	kind := p.NewExpander(ExpanderInput{ClusterName: "ccmc-1", HostIP: "172.18.0.1", Backend: "kind"}).ForInstance(1)
	if got, err := kind.Expand("--kind-cluster=${CLUSTER_NAME} tcp://${HOST_IP}:80"); err != nil || got != "--kind-cluster=ccmc-1 tcp://172.18.0.1:80" {
		t.Errorf("kind: got %q, %v", got, err)
	}
	local := p.NewExpander(ExpanderInput{Backend: "local"})
	_, err := local.Expand("${CLUSTER_NAME}")
	if err == nil || !strings.Contains(err.Error(), "${CLUSTER_NAME}: the local backend has no value for it") {
		t.Errorf("local: ${CLUSTER_NAME} expanded with error %v, want one naming the variable and the backend", err)
	}
}

func TestExpandPortsNeverRepeat(t *testing.T) {
	// An allocator that keeps offering ports already handed out: the
	// expander asks again until it gets a new one, and gives up in the end.
	offers := []int{5000, 5000, 5000, 5001}
	alloc := func() (int, error) {
		if len(offers) == 0 {
			return 5000, nil
		}
		port := offers[0]
		offers = offers[1:]
		return port, nil
	}
	e := (&Profile{}).NewExpander(ExpanderInput{FreePort: alloc}).ForInstance(0)
	got, err := e.Expand("${FREE_PORT_A} ${FREE_PORT_B}")
	if err != nil || got != "5000 5001" {
		t.Fatalf("Expand = %q, %v; want 5000 5001", got, err)
	}
	if _, err := e.Expand("${FREE_PORT_C}"); err == nil || !strings.Contains(err.Error(), "${FREE_PORT_C}") {
		t.Errorf("Expand with no new port left = %v, want an error naming ${FREE_PORT_C}", err)
	}
}

func TestExpandPortError(t *testing.T) {
	e := (&Profile{}).NewExpander(ExpanderInput{FreePort: func() (int, error) { return 0, fmt.Errorf("no sockets") }})
	if _, err := e.ExpandAll([]string{"x", "${FREE_PORT}"}); err == nil || !strings.Contains(err.Error(), "no sockets") {
		t.Errorf("ExpandAll = %v, want the allocator's error", err)
	}
	if _, err := e.Environ(map[string]string{"PORT": "${FREE_PORT}"}); err == nil || !strings.Contains(err.Error(), "env PORT") {
		t.Errorf("Environ = %v, want an error naming env PORT", err)
	}
}

func TestFreeLoopbackPort(t *testing.T) {
	port, err := FreeLoopbackPort()
	if err != nil || port <= 0 {
		t.Fatalf("FreeLoopbackPort = %d, %v", port, err)
	}
}

func TestValidPortProfile(t *testing.T) {
	p, err := Load(filepath.Join("testdata", "valid-ports.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := p.NewExpander(ExpanderInput{FreePort: countingPorts()})
	if _, err := run.ExpandAll(p.Services[0].Command); err != nil {
		t.Fatal(err)
	}
	args := func(n int) []string {
		e := run.ForInstance(n)
		out, err := e.ExpandAll(p.CCM.Binary.Args)
		if err != nil {
			t.Fatal(err)
		}
		env, err := e.Environ(p.CCM.Binary.Env)
		if err != nil {
			t.Fatal(err)
		}
		return append(out, env[len(env)-1])
	}
	first, second := args(0), args(1)
	want0 := []string{"--cloud-endpoint=http://127.0.0.1:40001", "--webhook-port=40002", "--metrics-port=40003", "--identity=ccm-0", "CCM_INSTANCE=0"}
	want1 := []string{"--cloud-endpoint=http://127.0.0.1:40001", "--webhook-port=40004", "--metrics-port=40005", "--identity=ccm-1", "CCM_INSTANCE=1"}
	if !slices.Equal(first, want0) || !slices.Equal(second, want1) {
		t.Errorf("instance 0: %q\ninstance 1: %q\nwant %q and %q", first, second, want0, want1)
	}
}

func TestEnvNames(t *testing.T) {
	got := EnvNames([]string{"PATH=/bin", "HOME=/root", "TOKEN=secret=x", "PATH=/usr/bin", "=odd"})
	if want := []string{"HOME", "PATH", "TOKEN"}; !slices.Equal(got, want) {
		t.Errorf("EnvNames = %q, want %q", got, want)
	}
}

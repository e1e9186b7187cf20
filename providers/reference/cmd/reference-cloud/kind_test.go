package main

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

func TestMachineFromInspect(t *testing.T) {
	ip := func(a string) cloudapi.Address { return cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: a} }
	host := cloudapi.Address{Type: cloudapi.AddressHostname, Address: "ccmc-1-worker"}
	tests := []struct {
		name, json string
		want       []cloudapi.Address
		wantErr    bool
	}{
		{"IPv4", `{"ccmc-1":{"IPAddress":"172.18.0.3","GlobalIPv6Address":""}}`, []cloudapi.Address{ip("172.18.0.3"), host}, false},
		{"dual-stack, IPv4 first", `{"ccmc-1":{"IPAddress":"172.18.0.3","GlobalIPv6Address":"fc00:f853:ccd:e793::3"}}`,
			[]cloudapi.Address{ip("172.18.0.3"), ip("fc00:f853:ccd:e793::3"), host}, false},
		{"IPv6 only", `{"ccmc-1":{"IPAddress":"","GlobalIPv6Address":"fc00::3"}}`, []cloudapi.Address{ip("fc00::3"), host}, false},
		{"no address", `{"ccmc-1":{"IPAddress":"","GlobalIPv6Address":""}}`, nil, true},
		{"not JSON", `<no value>`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := machineFromInspect("ccmc-1-worker", tt.json)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && (m.Name != "ccmc-1-worker" || !reflect.DeepEqual(m.Addresses, tt.want)) {
				t.Errorf("got %+v, want addresses %+v", m, tt.want)
			}
		})
	}
}

// TestKindMachineStartReadsNewAddresses runs kindMachines against a fake
// docker CLI whose container comes back from a start on another address,
// as Docker's does when the old one was handed out meanwhile.
func TestKindMachineStartReadsNewAddresses(t *testing.T) {
	docker, log := fakeDocker(t, `case "$1" in
start) echo "$2" ;;
inspect) echo '{"ccmc-1":{"IPAddress":"172.18.0.7","GlobalIPv6Address":""}}' ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac
`)
	k := newKindMachines(docker, "ccmc-1", t.Logf)
	got, err := k.Start(context.Background(), "ccmc-1-worker")
	if err != nil {
		t.Fatal(err)
	}
	want := []cloudapi.Address{
		{Type: cloudapi.AddressInternalIP, Address: "172.18.0.7"},
		{Type: cloudapi.AddressHostname, Address: "ccmc-1-worker"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Start returned %v, want the container's addresses after the start %v", got, want)
	}
	calls, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || lines[0] != "start ccmc-1-worker" || !strings.HasPrefix(lines[1], "inspect ") {
		t.Errorf("docker calls %q: want a start, then an inspect", lines)
	}

	// A start that fails reports docker's words and no addresses.
	k.docker = filepath.Join(t.TempDir(), "missing-docker")
	if addrs, err := k.Start(context.Background(), "ccmc-1-worker"); err == nil || addrs != nil {
		t.Errorf("Start with no docker CLI: %v, %v; want an error and no addresses", addrs, err)
	}
}

// TestKindMachineSetRoutes checks the docker commands SetRoutes runs: only
// what changed, and nothing again for a table the container already has;
// a start forgets the container's routes (a new network namespace).
func TestKindMachineSetRoutes(t *testing.T) {
	docker, log := fakeDocker(t, `case "$1" in
exec) case "$*" in *" del 10.244.9.0/24") echo "RTNETLINK answers: No such process" >&2; exit 2 ;; esac ;;
start) ;;
inspect) echo '{"ccmc-1":{"IPAddress":"172.18.0.7","GlobalIPv6Address":""}}' ;;
*) exit 1 ;;
esac
`)
	route := func(dest, via string) cloudapi.MachineRoute {
		return cloudapi.MachineRoute{Destination: netip.MustParsePrefix(dest), Via: netip.MustParseAddr(via)}
	}
	k := newKindMachines(docker, "ccmc-1", t.Logf)
	ctx := context.Background()
	steps := []struct {
		name   string
		routes []cloudapi.MachineRoute
		start  bool
		want   []string
	}{
		{"first table", []cloudapi.MachineRoute{route("10.244.1.0/24", "172.18.0.3"), route("fd00:10:244:1::/64", "fc00::3"), route("10.244.9.0/24", "172.18.0.5")}, false, []string{
			"exec w ip -4 route replace 10.244.1.0/24 via 172.18.0.3",
			"exec w ip -4 route replace 10.244.9.0/24 via 172.18.0.5",
			"exec w ip -6 route replace fd00:10:244:1::/64 via fc00::3",
		}},
		{"the same again", []cloudapi.MachineRoute{route("fd00:10:244:1::/64", "fc00::3"), route("10.244.1.0/24", "172.18.0.3"), route("10.244.9.0/24", "172.18.0.5")}, false, nil},
		{"a next hop moved, a route gone (already gone in the container)", []cloudapi.MachineRoute{route("10.244.1.0/24", "172.18.0.8"), route("fd00:10:244:1::/64", "fc00::3")}, false, []string{
			"exec w ip -4 route replace 10.244.1.0/24 via 172.18.0.8",
			"exec w ip -4 route del 10.244.9.0/24",
		}},
		{"after a start, everything again", []cloudapi.MachineRoute{route("10.244.1.0/24", "172.18.0.8")}, true, []string{
			"exec w ip -4 route replace 10.244.1.0/24 via 172.18.0.8",
		}},
	}
	for _, st := range steps {
		if st.start {
			if _, err := k.Start(ctx, "w"); err != nil {
				t.Fatal(err)
			}
		}
		_ = os.Remove(log)
		if err := k.SetRoutes(ctx, "w", st.routes); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		calls, _ := os.ReadFile(log)
		var got []string
		if s := strings.TrimSpace(string(calls)); s != "" {
			got = strings.Split(s, "\n")
		}
		if !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s: docker ran %q, want %q", st.name, got, st.want)
		}
	}
}

// fakeDocker writes a docker CLI that appends each command line to log and
// then runs the shell code cases (a case statement on "$1", say).
func fakeDocker(t *testing.T, cases string) (docker, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	docker = filepath.Join(dir, "docker")
	script := "#!/bin/sh\necho \"$*\" >>" + log + "\n" + cases
	if err := os.WriteFile(docker, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return docker, log
}

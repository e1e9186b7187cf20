package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// Labels kind puts on its node containers.
const (
	kindClusterLabel = "io.x-k8s.kind.cluster"
	kindRoleLabel    = "io.x-k8s.kind.role"
)

const (
	// dockerTimeout bounds one docker command.
	dockerTimeout = time.Minute
	// machineStopGrace is how long a node container gets to stop before
	// Docker kills it: a kubelet stops at once, and the point is that it
	// goes silent.
	machineStopGrace = "5"
)

// kindMachines are the node containers of a kind cluster, reached with
// the docker CLI: the reference cloud adopts them as its instances
// (--kind-cluster), so that stopping an instance stops a real kubelet.
type kindMachines struct {
	docker  string
	cluster string
	// logf gets a line for each route set or removed in a container.
	logf func(format string, args ...any)

	mu sync.Mutex
	// routes are the cloud routes set on each container since it last
	// started: destination -> via. A started container has a new network
	// namespace, so none.
	routes map[string]map[netip.Prefix]netip.Addr
}

func newKindMachines(docker, cluster string, logf func(format string, args ...any)) *kindMachines {
	return &kindMachines{docker: docker, cluster: cluster, logf: logf, routes: map[string]map[netip.Prefix]netip.Addr{}}
}

// containerNetworks is the part of `docker inspect` that holds a
// container's addresses.
type containerNetworks map[string]struct {
	IPAddress         string
	GlobalIPv6Address string
}

// List returns the cluster's nodes (not kind's external load balancer) as
// machines: InternalIPs from their Docker networks, and their hostname.
func (k *kindMachines) List(ctx context.Context) ([]cloudapi.Machine, error) {
	out, err := k.run(ctx, "ps", "--all", "--filter", "label="+kindClusterLabel+"="+k.cluster,
		"--format", `{{.Names}} {{.Label "`+kindRoleLabel+`"}}`)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[1] != "external-load-balancer" {
			names = append(names, f[0])
		}
	}
	slices.Sort(names)
	var machines []cloudapi.Machine
	for _, name := range names {
		m, err := k.inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		machines = append(machines, m)
	}
	return machines, nil
}

// inspect reads a node container's addresses from Docker.
func (k *kindMachines) inspect(ctx context.Context, name string) (cloudapi.Machine, error) {
	raw, err := k.run(ctx, "inspect", "--format", "{{json .NetworkSettings.Networks}}", name)
	if err != nil {
		return cloudapi.Machine{}, err
	}
	return machineFromInspect(name, raw)
}

// machineFromInspect makes a machine of a container's networks: its IPv4
// addresses first, then IPv6, then the hostname (kind's node name).
func machineFromInspect(name, networksJSON string) (cloudapi.Machine, error) {
	var nets containerNetworks
	if err := json.Unmarshal([]byte(networksJSON), &nets); err != nil {
		return cloudapi.Machine{}, fmt.Errorf("container %s: reading its networks: %v", name, err)
	}
	var v4, v6 []cloudapi.Address
	for _, netName := range slices.Sorted(maps.Keys(nets)) {
		n := nets[netName]
		if ip, err := netip.ParseAddr(n.IPAddress); err == nil {
			v4 = append(v4, cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: ip.String()})
		}
		if ip, err := netip.ParseAddr(n.GlobalIPv6Address); err == nil {
			v6 = append(v6, cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: ip.String()})
		}
	}
	if len(v4)+len(v6) == 0 {
		return cloudapi.Machine{}, fmt.Errorf("container %s has no address on any Docker network", name)
	}
	addrs := append(append(v4, v6...), cloudapi.Address{Type: cloudapi.AddressHostname, Address: name})
	return cloudapi.Machine{Name: name, Addresses: addrs}, nil
}

func (k *kindMachines) Stop(ctx context.Context, name string) error {
	_, err := k.run(ctx, "stop", "--time", machineStopGrace, name)
	return err
}

// Start starts the container and reads its addresses again: Docker gives
// a restarted container whichever address on its network is free, often
// not the one it had (the node image's entrypoint then moves the kubelet's
// node IP to the new one: kind/nodeimage, nodeIPFixupScript).
func (k *kindMachines) Start(ctx context.Context, name string) ([]cloudapi.Address, error) {
	k.forgetRoutes(name)
	if _, err := k.run(ctx, "start", name); err != nil {
		return nil, err
	}
	m, err := k.inspect(ctx, name)
	return m.Addresses, err
}

func (k *kindMachines) Delete(ctx context.Context, name string) error {
	k.forgetRoutes(name)
	_, err := k.run(ctx, "rm", "--force", "--volumes", name)
	return err
}

func (k *kindMachines) forgetRoutes(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.routes, name)
}

// SetRoutes runs `ip route replace` in the container for each route it
// lacks or has through another address, and `ip route del` for each it
// was given before and is not given now. Routes the container has of its
// own (kind's, the CNI's) are left alone.
func (k *kindMachines) SetRoutes(ctx context.Context, name string, routes []cloudapi.MachineRoute) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	set := k.routes[name]
	if set == nil {
		set = map[netip.Prefix]netip.Addr{}
		k.routes[name] = set
	}
	want := map[netip.Prefix]netip.Addr{}
	for _, r := range routes {
		want[r.Destination] = r.Via
	}
	for _, dest := range slices.SortedFunc(maps.Keys(want), comparePrefixes) {
		via := want[dest]
		if old, ok := set[dest]; ok && old == via {
			continue
		}
		if _, err := k.run(ctx, "exec", name, "ip", ipFamily(dest), "route", "replace", dest.String(), "via", via.String()); err != nil {
			return err
		}
		set[dest] = via
		k.logf("machine %s: route %s via %s", name, dest, via)
	}
	for _, dest := range slices.SortedFunc(maps.Keys(set), comparePrefixes) {
		if _, ok := want[dest]; ok {
			continue
		}
		// Gone already is as good as deleted.
		if _, err := k.run(ctx, "exec", name, "ip", ipFamily(dest), "route", "del", dest.String()); err != nil && !strings.Contains(err.Error(), "No such process") {
			return err
		}
		delete(set, dest)
		k.logf("machine %s: route %s removed", name, dest)
	}
	return nil
}

func ipFamily(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "-4"
	}
	return "-6"
}

func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

func (k *kindMachines) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, k.docker, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

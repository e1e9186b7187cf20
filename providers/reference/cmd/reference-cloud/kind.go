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
}

// containerNetworks is the part of `docker inspect` that holds a
// container's addresses.
type containerNetworks map[string]struct {
	IPAddress         string
	GlobalIPv6Address string
}

// List returns the cluster's nodes (not kind's external load balancer) as
// machines: InternalIPs from their Docker networks, and their hostname.
func (k kindMachines) List(ctx context.Context) ([]cloudapi.Machine, error) {
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
func (k kindMachines) inspect(ctx context.Context, name string) (cloudapi.Machine, error) {
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

func (k kindMachines) Stop(ctx context.Context, name string) error {
	_, err := k.run(ctx, "stop", "--time", machineStopGrace, name)
	return err
}

// Start starts the container and reads its addresses again: Docker gives
// a restarted container whichever address on its network is free, often
// not the one it had (kind's entrypoint then moves the kubelet's node IP
// to the new one).
func (k kindMachines) Start(ctx context.Context, name string) ([]cloudapi.Address, error) {
	if _, err := k.run(ctx, "start", name); err != nil {
		return nil, err
	}
	m, err := k.inspect(ctx, name)
	return m.Addresses, err
}

func (k kindMachines) Delete(ctx context.Context, name string) error {
	_, err := k.run(ctx, "rm", "--force", "--volumes", name)
	return err
}

func (k kindMachines) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, k.docker, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

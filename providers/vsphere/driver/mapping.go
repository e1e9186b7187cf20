package driver

import (
	"fmt"
	"net"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

// This file states how the vSphere CCM (k8s.io/cloud-provider-vsphere
// v1.36.0) turns a VM into a Node's fields, so that the driver reports an
// instance as that CCM reads it. Each rule names the upstream function it
// follows; the code is the driver's own.

// providerID is what the CCM writes into spec.providerID: "vsphere://"
// and the VM's BIOS UUID (summary.config.uuid), lower-cased and trimmed
// (pkg/common/connectionmanager/search.go, WhichVCandDCByNodeID, takes the
// UUID so; pkg/cloudprovider/vsphere/instances_v2.go, getProviderID,
// prefixes it).
func providerID(biosUUID string) string {
	return "vsphere://" + strings.ToLower(strings.TrimSpace(biosUUID))
}

// guestOS maps the guest IDs this driver creates VMs with to the name the
// CCM's table gives them (pkg/cloudprovider/vsphere/types.go,
// GuestOSLookup). The CCM's table knows many more; a VM this driver did not
// create may have one of those, and is then reported as "unknown", which
// the CCM would say only of an ID missing from its table.
var guestOS = map[string]string{
	"otherLinux64Guest": "linux",
	"otherLinuxGuest":   "linux",
}

// guestIDFor is the guest ID this driver creates VMs of an OS with.
var guestIDFor = map[string]string{"linux": "otherLinux64Guest"}

// instanceType is the CCM's instance type: vsphere-vm.cpu-N.mem-Mgb.os-OS
// from summary.config.numCpu, memorySizeMB / 1024 (rounded down) and the
// guest OS (pkg/cloudprovider/vsphere/nodemanager.go, DiscoverNode).
func instanceType(numCPU, memoryMB int32, guestID string) string {
	os, ok := guestOS[guestID]
	if !ok {
		os = "unknown"
	}
	return fmt.Sprintf("vsphere-vm.cpu-%d.mem-%dgb.os-%s", numCPU, memoryMB/1024, os)
}

// parseInstanceType reads an instance type in the CCM's format back into
// the VM size to create; the memory is a whole number of GiB.
func parseInstanceType(s string) (cpus, memoryMB int32, guestID string, err error) {
	var gb int32
	var os string
	if _, err := fmt.Sscanf(s, "vsphere-vm.cpu-%d.mem-%dgb.os-%s", &cpus, &gb, &os); err != nil || cpus < 1 || gb < 1 {
		return 0, 0, "", fmt.Errorf("instance type %q: want vsphere-vm.cpu-N.mem-Mgb.os-linux (the CCM's format, nodemanager.go)", s)
	}
	guestID, ok := guestIDFor[os]
	if !ok {
		return 0, 0, "", fmt.Errorf("instance type %q: this driver makes only os-linux VMs", s)
	}
	return cpus, gb * 1024, guestID, nil
}

// guestNIC is one entry of a VM's guest.net.
type guestNIC struct {
	network        string
	deviceConfigID int32
	ips            []string
}

// addressRules are the cloud config's rules for picking node addresses
// from guest IPs ([Global] ip-family, [Nodes]).
type addressRules struct {
	families                         []string
	internalNetwork, externalNetwork string
	internalSubnets, externalSubnets []*net.IPNet
	excludeInternal, excludeExternal []*net.IPNet
}

func rulesOf(c *config) addressRules {
	return addressRules{
		families:        c.ipFamilies,
		internalNetwork: c.internalNetwork, externalNetwork: c.externalNetwork,
		internalSubnets: c.internalSubnets, externalSubnets: c.externalSubnets,
		excludeInternal: c.excludeInternal, excludeExternal: c.excludeExternal,
	}
}

type candidate struct {
	ip      net.IP
	address string
	network string
}

// addresses are the node addresses the CCM makes of a VM's guest
// information (pkg/cloudprovider/vsphere/nodemanager.go, DiscoverNode and
// discoverIPs):
//
//   - Hostname: guest.hostName. The CCM adds no InternalDNS or ExternalDNS.
//   - The IPs of guest.net, in order, except those of NICs that are not
//     virtual NICs (deviceConfigId -1, collectNonVNICDevices) and those that
//     are loopback, link-local or unspecified (excludeLocalhostIPs).
//   - For each IP family of ip-family, in its order: at most one InternalIP
//     and one ExternalIP. The InternalIP is the first IP of the family in
//     the first internal subnet that has one, else the first on the
//     internal network (by name, case-insensitive); the ExternalIP the same
//     with the external subnets and network; subnets excluded for a type
//     never give it. When neither is found so, the first IP of the family
//     is both. Other IPs of the family are not addresses at all.
//
// The CCM refuses a VM as a whole (the node stays uninitialized) when its
// host name is empty, when it has no guest.net or no IP left, or when a
// family of ip-family gives neither address; the driver still reports what
// the VM has. It does not model guestinfo.metadata, whose statically
// configured addresses the CCM puts first (sortStaticallyConfiguredAddressesFirst):
// the VMs this driver makes have none.
func (r addressRules) addresses(hostName string, nics []guestNIC) []driverproto.Address {
	out := []driverproto.Address{}
	add := func(typ, address string) {
		for _, a := range out {
			if a.Type == typ && a.Address == address {
				return
			}
		}
		out = append(out, driverproto.Address{Type: typ, Address: address})
	}
	if hostName != "" {
		add("Hostname", hostName)
	}
	var candidates []candidate
	for _, nic := range nics {
		if nic.deviceConfigID == -1 {
			continue
		}
		for _, a := range nic.ips {
			ip := net.ParseIP(a)
			if ip == nil || ip.IsUnspecified() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
				continue
			}
			candidates = append(candidates, candidate{ip: ip, address: a, network: nic.network})
		}
	}
	for _, family := range r.families {
		var ofFamily []candidate
		for _, c := range candidates {
			if matchesFamily(c.ip, family) {
				ofFamily = append(ofFamily, c)
			}
		}
		internals := without(ofFamily, r.excludeInternal)
		externals := without(ofFamily, r.excludeExternal)
		if len(internals) == 0 && len(externals) == 0 {
			continue
		}
		internal := inSubnets(internals, r.internalSubnets)
		external := inSubnets(externals, r.externalSubnets)
		if internal == nil && r.internalNetwork != "" {
			internal = onNetwork(internals, r.internalNetwork)
		}
		if external == nil && r.externalNetwork != "" {
			external = onNetwork(externals, r.externalNetwork)
		}
		if internal == nil && external == nil {
			if len(internals) > 0 {
				internal = &internals[0]
			}
			if len(externals) > 0 {
				external = &externals[0]
			}
		}
		if internal != nil {
			add("InternalIP", internal.address)
		}
		if external != nil {
			add("ExternalIP", external.address)
		}
	}
	return out
}

// matchesFamily compares the family name as the CCM does: exactly "ipv4"
// or "ipv6" (nodemanager.go, matchesFamily).
func matchesFamily(ip net.IP, family string) bool {
	switch family {
	case "ipv4":
		return ip.To4() != nil
	case "ipv6":
		return ip.To4() == nil && ip.To16() != nil
	}
	return false
}

func without(cs []candidate, excluded []*net.IPNet) []candidate {
	var out []candidate
	for _, c := range cs {
		keep := true
		for _, n := range excluded {
			if n.Contains(c.ip) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

func inSubnets(cs []candidate, subnets []*net.IPNet) *candidate {
	for _, n := range subnets {
		for i := range cs {
			if n.Contains(cs[i].ip) {
				return &cs[i]
			}
		}
	}
	return nil
}

func onNetwork(cs []candidate, network string) *candidate {
	for i := range cs {
		if strings.EqualFold(cs[i].network, network) {
			return &cs[i]
		}
	}
	return nil
}

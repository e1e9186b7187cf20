package cloud

import (
	"fmt"
	"strconv"
	"strings"
)

// cloudConfig renders the CCM's INI cloud config (the "legacy" INI format
// of k8s.io/cloud-provider-vsphere, pkg/common/config/types_ini_legacy.go
// and pkg/cloudprovider/vsphere/config/types_ini_legacy.go, read with gcfg):
// the vCenter and its CA, the credentials, the datacenter, the tag
// categories of region and zone ([Labels]) and the two node networks
// ([Nodes]), which make the CCM take a node's InternalIP from its NIC on
// the internal network and its ExternalIP from its NIC on the external one
// (nodemanager.go, discoverIPs).
func cloudConfig(o *Options, host, port, caFile, datacenter string) string {
	var b strings.Builder
	line := func(key, value string) { fmt.Fprintf(&b, "%s = %s\n", key, strconv.Quote(value)) }
	fmt.Fprintf(&b, "; The cloud config of the vSphere CCM for the simulated vCenter at https://%s/sdk,\n", netJoin(host, port))
	b.WriteString("; written by vsphere-cloud (providers/vsphere). The cloud driver reads it too.\n\n")
	b.WriteString("[Global]\n")
	line("user", o.User)
	line("password", o.Password)
	line("port", port)
	b.WriteString("insecure-flag = false\n")
	line("ca-file", caFile)
	line("ip-family", o.IPFamily)
	fmt.Fprintf(&b, "\n[VirtualCenter %s]\n", strconv.Quote(host))
	line("datacenters", datacenter)
	b.WriteString("\n[Labels]\n")
	line("region", o.RegionCategory)
	line("zone", o.ZoneCategory)
	b.WriteString("\n[Nodes]\n")
	line("internal-vm-network-name", o.InternalNetwork)
	line("external-vm-network-name", o.ExternalNetwork)
	return b.String()
}

func netJoin(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

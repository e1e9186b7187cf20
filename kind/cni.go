package kind

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
)

// CNIConfigPath is where each node's static CNI configuration goes.
const CNIConfigPath = "/etc/cni/net.d/10-ccm-conformance.conflist"

// cniConfig is the static CNI configuration of a node whose podCIDRs are
// cidrs: Debian's ptp and host-local plugins (kindnetd is not built here)
// and portmap for hostPort. Pod traffic leaves unmasqueraded, so that
// pods on other nodes see its source; the nodes route each other's pod
// networks (nodeRoutes).
func cniConfig(cidrs []string) ([]byte, error) {
	if len(cidrs) == 0 {
		return nil, fmt.Errorf("no podCIDRs")
	}
	var ranges [][]map[string]string
	var routes []map[string]string
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("podCIDR %q: %w", c, err)
		}
		ranges = append(ranges, []map[string]string{{"subnet": p.Masked().String()}})
		if p.Addr().Is4() {
			routes = append(routes, map[string]string{"dst": "0.0.0.0/0"})
		} else {
			routes = append(routes, map[string]string{"dst": "::/0"})
		}
	}
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "ccm-conformance",
		"plugins": []any{
			map[string]any{
				"type":   "ptp",
				"ipMasq": false,
				"mtu":    1500,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": ranges,
					"routes": routes,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// routedNode is what nodeRoutes needs of a node.
type routedNode struct {
	Name     string
	PodCIDRs []string
	// IPs are the node container's addresses on the kind network.
	IPs []string
}

// nodeRoutes returns, for each node, the `ip route replace` argument lists
// that send the other nodes' pod networks to those nodes, one family
// through an address of the same family.
func nodeRoutes(nodes []routedNode) (map[string][][]string, error) {
	out := map[string][][]string{}
	for _, n := range nodes {
		var routes [][]string
		for _, other := range nodes {
			if other.Name == n.Name {
				continue
			}
			for _, c := range other.PodCIDRs {
				p, err := netip.ParsePrefix(c)
				if err != nil {
					return nil, fmt.Errorf("node %s: podCIDR %q: %w", other.Name, c, err)
				}
				via := ""
				for _, ip := range other.IPs {
					a, err := netip.ParseAddr(ip)
					if err == nil && a.Is4() == p.Addr().Is4() {
						via = a.String()
						break
					}
				}
				if via == "" {
					return nil, fmt.Errorf("node %s has no address of the family of its podCIDR %s", other.Name, c)
				}
				fam := "-4"
				if !p.Addr().Is4() {
					fam = "-6"
				}
				routes = append(routes, []string{"ip", fam, "route", "replace", p.Masked().String(), "via", via})
			}
		}
		sort.Slice(routes, func(i, j int) bool { return routes[i][4] < routes[j][4] })
		out[n.Name] = routes
	}
	return out, nil
}

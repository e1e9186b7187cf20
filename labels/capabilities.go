// Package labels is the vocabulary that specs, profiles and reports share:
// the capability labels a profile claims and a spec needs, the
// ReleaseBlocking label of the specs that decide a last-known-good verdict,
// and the needs that say on which backends such a spec blocks. It imports
// nothing of the harness, so the reports stand on it without standing on
// the framework.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package labels

import "sort"

// Capability is something a CCM may or may not do. Specs carry the
// capabilities they need as ginkgo labels with exactly these names, so a
// label filter and a profile speak the same words.
type Capability string

// The capabilities a profile can claim.
const (
	// InstancesV2: the CCM initializes nodes (providerID, addresses,
	// instance type) through cloudprovider.InstancesV2.
	InstancesV2 Capability = "InstancesV2"
	// Zones: the CCM sets topology.kubernetes.io/zone and /region.
	Zones Capability = "Zones"
	// NodeIPAnnotation: the CCM honours alpha.kubernetes.io/provided-node-ip.
	NodeIPAnnotation Capability = "NodeIPAnnotation"
	// IPv6: the cloud gives instances IPv6 addresses.
	IPv6 Capability = "IPv6"
	// DualStack: nodes can have an IPv4 and an IPv6 address at once.
	DualStack Capability = "DualStack"
	// NodeLifecycle: the CCM deletes Nodes of deleted instances and taints
	// Nodes of stopped ones.
	NodeLifecycle Capability = "NodeLifecycle"
	// LoadBalancer: the CCM provisions Services of type LoadBalancer.
	LoadBalancer Capability = "LoadBalancer"
	// LoadBalancerUDP: load balancers carry UDP ports.
	LoadBalancerUDP Capability = "LoadBalancerUDP"
	// LoadBalancerMixedProtocol: one load balancer carries a Service's TCP
	// and UDP ports together. Upstream lets a CCM refuse such a Service
	// (KEP-1435, sig-network/1435-mixed-protocol-lb: the cloud provider
	// need not accept it, only handle it; the AWS and GCE CCMs answer
	// "mixed protocol is not supported"), so it is a capability of its own.
	LoadBalancerMixedProtocol Capability = "LoadBalancerMixedProtocol"
	// LoadBalancerSourceRanges: loadBalancerSourceRanges reach the cloud.
	LoadBalancerSourceRanges Capability = "LoadBalancerSourceRanges"
	// LoadBalancerHealthCheckNodePort: for a Service with
	// externalTrafficPolicy Local, the cloud load balancer health-checks
	// the Service's healthCheckNodePort (and the cloud driver reports it).
	LoadBalancerHealthCheckNodePort Capability = "LoadBalancerHealthCheckNodePort"
	// LoadBalancerSessionAffinity: for a Service with sessionAffinity
	// ClientIP, the cloud load balancer sends every connection of one
	// client address to the same node.
	LoadBalancerSessionAffinity Capability = "LoadBalancerSessionAffinity"
	// DataPath: traffic can be sent through load balancers from where the
	// harness runs.
	DataPath Capability = "DataPath"
	// Routes: the CCM's route controller programs cloud routes for podCIDRs.
	Routes Capability = "Routes"
	// LeaderMigration: the CCM supports --enable-leader-migration.
	LeaderMigration Capability = "LeaderMigration"
)

var knownCapabilities = map[Capability]string{
	InstancesV2:                     "node initialization through InstancesV2",
	Zones:                           "zone and region labels",
	NodeIPAnnotation:                "alpha.kubernetes.io/provided-node-ip",
	IPv6:                            "IPv6 instance addresses",
	DualStack:                       "dual-stack nodes",
	NodeLifecycle:                   "deleting and tainting nodes of gone or stopped instances",
	LoadBalancer:                    "Services of type LoadBalancer",
	LoadBalancerUDP:                 "UDP load balancers",
	LoadBalancerMixedProtocol:       "TCP and UDP ports of one Service in one load balancer",
	LoadBalancerSourceRanges:        "loadBalancerSourceRanges",
	LoadBalancerHealthCheckNodePort: "health checks of healthCheckNodePort for externalTrafficPolicy Local",
	LoadBalancerSessionAffinity:     "one client to one node for sessionAffinity ClientIP",
	DataPath:                        "traffic through load balancers",
	Routes:                          "cloud routes for podCIDRs",
	LeaderMigration:                 "leader migration",
}

// Known reports whether c is a capability the harness knows.
func (c Capability) Known() bool {
	_, ok := knownCapabilities[c]
	return ok
}

// Description says in a few words what the capability covers.
func (c Capability) Description() string { return knownCapabilities[c] }

// Capabilities lists every known capability, sorted.
func Capabilities() []Capability {
	out := make([]Capability, 0, len(knownCapabilities))
	for c := range knownCapabilities {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

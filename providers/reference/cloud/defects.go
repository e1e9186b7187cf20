package cloud

import (
	"fmt"
	"slices"
	"strings"
)

// A Defect is a deliberate bug the reference CCM can be started with
// (--reference-defects=a,b), so that the conformance harness can check that
// its suites catch a CCM that gets something wrong. A CCM without defects
// is the default and what every suite must pass.
type Defect string

// Every defect the CCM knows. Each one breaks a single behaviour.
const (
	// DefectWrongZone reports every zone with the suffix "-wrong".
	DefectWrongZone Defect = "wrong-zone"
	// DefectNoIPv6 drops IPv6 addresses from node metadata.
	DefectNoIPv6 Defect = "no-ipv6"
	// DefectStaleAddresses keeps the first addresses reported for a node
	// and ignores later changes in the cloud.
	DefectStaleAddresses Defect = "stale-addresses"
	// DefectKeepLBOnDelete makes EnsureLoadBalancerDeleted report success
	// without deleting anything: the cloud load balancer is leaked.
	DefectKeepLBOnDelete Defect = "keep-lb-on-delete"
	// DefectBackendsAllInstances makes every instance of the cloud a load
	// balancer backend, instead of the nodes the service controller chose.
	DefectBackendsAllInstances Defect = "backends-all-instances"
	// DefectDropNotReadyBackends leaves NotReady nodes out of a load
	// balancer's backends whenever it is created or updated, as a cloud
	// that filters on readiness would; the service controller keeps them.
	DefectDropNotReadyBackends Defect = "drop-notready-backends"
	// DefectIgnoreAutoscalerTaint puts the nodes tainted
	// ToBeDeletedByClusterAutoscaler back among a load balancer's
	// backends, as a CCM that picks its own nodes without that rule would.
	// (It reads the Nodes through the client Initialize is given.)
	DefectIgnoreAutoscalerTaint Defect = "ignore-autoscaler-taint"
	// DefectIgnoreSourceRanges opens load balancers to every client,
	// whatever the Service's loadBalancerSourceRanges say.
	DefectIgnoreSourceRanges Defect = "ignore-source-ranges"
	// DefectWrongRouteCIDR creates routes for a CIDR block 128 blocks after
	// the requested one (10.244.1.0/24 becomes 10.244.129.0/24), and
	// reports success when asked again.
	DefectWrongRouteCIDR Defect = "wrong-route-cidr"
	// DefectKeepRoutes makes DeleteRoute do nothing.
	DefectKeepRoutes Defect = "keep-routes"
	// DefectInstanceExistsAlways reports every instance as existing, so
	// nodes of deleted instances are never removed.
	DefectInstanceExistsAlways Defect = "instance-exists-always"
	// DefectNoShutdown never reports an instance as shut down, so nodes
	// of stopped instances never get the shutdown taint.
	DefectNoShutdown Defect = "no-shutdown"
	// DefectStoppedInstanceGone reports a stopped instance as not
	// existing, as a cloud whose instance list leaves stopped ones out
	// would, so the Nodes of stopped instances are deleted.
	DefectStoppedInstanceGone Defect = "stopped-instance-gone"
	// DefectZoneCGone reports instances in zone-c as not existing, as a
	// CCM that searches only some of its region's zones would, so that
	// the NotReady Nodes of instances there are deleted.
	DefectZoneCGone Defect = "instances-gone-in-zone-c"
	// DefectServiceOutsideMigration runs service-lb-controller under the
	// CCM's main lease even when the leader migration configuration
	// migrates it, so it runs while another manager holds the migration
	// lease. (The reference-ccm main applies it.)
	DefectServiceOutsideMigration Defect = "service-outside-migration-lease"

	// The defects below make the mutant corpus (docs/mutants.md): each is
	// a mistake a CCM author under deadline could make, and each is
	// caught by at least one spec.

	// DefectNoProviderID leaves the providerID out of instance metadata.
	DefectNoProviderID Defect = "no-provider-id"
	// DefectNoInstanceType leaves the instance type out of instance
	// metadata.
	DefectNoInstanceType Defect = "no-instance-type"
	// DefectWindowsNoInstanceType leaves the instance type out of the
	// metadata of Windows nodes (kubernetes.io/os=windows), as a CCM
	// whose Windows code path reads it from a source that only Linux
	// guests fill would.
	DefectWindowsNoInstanceType Defect = "windows-no-instance-type"
	// DefectInternalIPsOnly reports only a node's InternalIP addresses,
	// dropping its ExternalIP, Hostname and DNS names.
	DefectInternalIPsOnly Defect = "internal-ips-only"
	// DefectTrustNodeIP adds the node IP a kubelet announces
	// (alpha.kubernetes.io/provided-node-ip) to the node's addresses when
	// the cloud does not list it, instead of leaving the node tainted.
	DefectTrustNodeIP Defect = "trust-node-ip"
	// DefectInstancesCachedAtStart looks instances up by name in the list
	// the cloud gave when the CCM started, never refreshed, so a machine
	// that joins later is never found.
	DefectInstancesCachedAtStart Defect = "instances-cached-at-start"
	// DefectErrorMeansGone reports an instance as gone whenever the cloud
	// answers a lookup with an error, so the lifecycle controller deletes
	// NotReady Nodes during a cloud outage.
	DefectErrorMeansGone Defect = "error-means-gone"
	// DefectWrongIngressIP reports the address after the cloud's ingress
	// IP as the Service's ingress, as a CCM that computes the address
	// instead of reading it would.
	DefectWrongIngressIP Defect = "wrong-ingress-ip"
	// DefectPortsFixedAtCreate keeps the ports a load balancer was
	// created with and ignores later changes to the Service's ports.
	DefectPortsFixedAtCreate Defect = "ports-fixed-at-create"
	// DefectDropUDPPorts gives the cloud only a Service's TCP ports.
	DefectDropUDPPorts Defect = "drop-udp-ports"
	// DefectWrongNodePort forwards each port to the node port after the
	// Service's (an off-by-one), so no traffic reaches a backend.
	DefectWrongNodePort Defect = "wrong-node-port"
	// DefectNodePortFallback forwards a port without a node port
	// (allocateLoadBalancerNodePorts: false) to the Service's port on the
	// nodes instead of to none.
	DefectNodePortFallback Defect = "node-port-fallback"
	// DefectIgnoreHealthCheckPort never gives the cloud the Service's
	// healthCheckNodePort.
	DefectIgnoreHealthCheckPort Defect = "ignore-health-check-port"
	// DefectIgnoreSessionAffinity never gives the cloud a Service's
	// sessionAffinity ClientIP, so its load balancer spreads one client's
	// connections over the nodes.
	DefectIgnoreSessionAffinity Defect = "ignore-session-affinity"
	// DefectServeEveryClass runs a loop of the CCM's own that gives every
	// Service of type LoadBalancer a cloud load balancer, whatever its
	// loadBalancerClass says.
	DefectServeEveryClass Defect = "serve-every-class"
	// DefectOldServiceNameRule refuses a Service whose name is not a
	// DNS-1035 label (a letter first), the rule of Service names before
	// Kubernetes v1.36, as a CCM that builds cloud names from Service
	// names and guards them with that rule would.
	DefectOldServiceNameRule Defect = "old-service-name-rule"
	// DefectCreateRouteFails makes every CreateRoute fail, as a cloud
	// whose route quota is used up would.
	DefectCreateRouteFails Defect = "create-route-fails"
	// DefectMigrationLeaseTriedOnce tries to take a lease only once an
	// hour (leader election retry period 1h, lease 3h), so a CCM that
	// finds the migration lease held at start never takes it over.
	// (The reference-ccm main applies it.)
	DefectMigrationLeaseTriedOnce Defect = "migration-lease-tried-once"
	// DefectRecreateLBOnUpdate deletes a Service's load balancer and makes
	// a new one whenever the Service changes, as a CCM that cannot update
	// a listener in place would: the ingress moves on every update.
	DefectRecreateLBOnUpdate Defect = "recreate-lb-on-update"
	// DefectPruneUnmadeRoutes deletes, whenever it lists the routes, every
	// route of the cloud that this CCM process did not create: an
	// operator's route, another cluster's, one outside the cluster CIDR.
	DefectPruneUnmadeRoutes Defect = "prune-unmade-routes"
	// DefectLBNamedByServiceName names a Service's cloud load balancer
	// after the Service's name alone, so Services of one name in two
	// namespaces share one load balancer, and deleting either deletes it.
	DefectLBNamedByServiceName Defect = "lb-named-by-service-name"
	// DefectLBNamedPerProcess puts a tag of its own process into every
	// load balancer name, as a CCM that keeps the names it made in memory
	// would: after a restart it finds none of its load balancers, makes a
	// second one for each Service (a new ingress) and leaks the first.
	DefectLBNamedPerProcess Defect = "lb-named-per-process"
)

// KnownDefects returns every defect, in the order of the list above.
func KnownDefects() []Defect {
	return []Defect{
		DefectWrongZone, DefectNoIPv6, DefectStaleAddresses,
		DefectKeepLBOnDelete, DefectBackendsAllInstances, DefectDropNotReadyBackends, DefectIgnoreAutoscalerTaint,
		DefectIgnoreSourceRanges,
		DefectWrongRouteCIDR, DefectKeepRoutes,
		DefectInstanceExistsAlways, DefectNoShutdown, DefectStoppedInstanceGone, DefectZoneCGone,
		DefectServiceOutsideMigration,
		DefectNoProviderID, DefectNoInstanceType, DefectWindowsNoInstanceType, DefectInternalIPsOnly, DefectTrustNodeIP,
		DefectInstancesCachedAtStart, DefectErrorMeansGone,
		DefectWrongIngressIP, DefectPortsFixedAtCreate, DefectDropUDPPorts, DefectWrongNodePort,
		DefectNodePortFallback, DefectIgnoreHealthCheckPort, DefectIgnoreSessionAffinity, DefectServeEveryClass, DefectOldServiceNameRule,
		DefectCreateRouteFails, DefectMigrationLeaseTriedOnce,
		DefectRecreateLBOnUpdate, DefectPruneUnmadeRoutes, DefectLBNamedByServiceName, DefectLBNamedPerProcess,
	}
}

// Defects is a set of defects. A pointer to it is a pflag.Value that
// takes comma-separated names and rejects unknown ones.
type Defects map[Defect]bool

// Has reports whether d is in the set.
func (s Defects) Has(d Defect) bool { return s[d] }

// String returns the names, sorted and comma-separated.
func (s Defects) String() string {
	names := make([]string, 0, len(s))
	for d := range s {
		names = append(names, string(d))
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// Set adds the comma-separated defects in value to the set.
func (s *Defects) Set(value string) error {
	if *s == nil {
		*s = Defects{}
	}
	for name := range strings.SplitSeq(value, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(KnownDefects(), Defect(name)) {
			return fmt.Errorf("unknown defect %q (known: %s)", name, knownDefectNames())
		}
		(*s)[Defect(name)] = true
	}
	return nil
}

// Type names the flag's value type in --help.
func (s *Defects) Type() string { return "names" }

func knownDefectNames() string {
	var names []string
	for _, d := range KnownDefects() {
		names = append(names, string(d))
	}
	return strings.Join(names, ", ")
}

package profile

import "github.com/ccm-conformance/ccm-conformance/labels"

// Capability is something a CCM may or may not do; its home is package
// labels, which the reports share. The names below are the profile's
// short spellings of the same values.
type Capability = labels.Capability

// The capabilities a profile can claim (labels.Capabilities lists them).
const (
	InstancesV2                     = labels.InstancesV2
	Zones                           = labels.Zones
	NodeIPAnnotation                = labels.NodeIPAnnotation
	IPv6                            = labels.IPv6
	DualStack                       = labels.DualStack
	NodeLifecycle                   = labels.NodeLifecycle
	LoadBalancer                    = labels.LoadBalancer
	LoadBalancerUDP                 = labels.LoadBalancerUDP
	LoadBalancerMixedProtocol       = labels.LoadBalancerMixedProtocol
	LoadBalancerSourceRanges        = labels.LoadBalancerSourceRanges
	LoadBalancerHealthCheckNodePort = labels.LoadBalancerHealthCheckNodePort
	LoadBalancerSessionAffinity     = labels.LoadBalancerSessionAffinity
	DataPath                        = labels.DataPath
	Routes                          = labels.Routes
	LeaderMigration                 = labels.LeaderMigration
)

// Capabilities lists every known capability, sorted.
func Capabilities() []Capability { return labels.Capabilities() }

func capabilityNames() []string {
	caps := Capabilities()
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = string(c)
	}
	return out
}

package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TimeoutName names one wait of the harness. A profile overrides a default
// under `timeouts:` with the same name.
type TimeoutName string

// The named waits. Each has a default that fits a real cloud; the reference
// profile shortens them for the local cluster.
const (
	// PollInterval is how often a wait that cannot watch asks again.
	PollInterval TimeoutName = "pollInterval"
	// CCMReady bounds the wait for the CCM's /healthz after it starts.
	CCMReady TimeoutName = "ccmReady"
	// ServiceReady bounds the wait for a profile service's readyFile.
	ServiceReady TimeoutName = "serviceReady"
	// NodeInitialize bounds the wait for a new Node to lose the
	// node.cloudprovider.kubernetes.io/uninitialized taint.
	NodeInitialize TimeoutName = "nodeInitialize"
	// NodeAddressUpdate bounds the wait for an address changed in the cloud
	// to reach the Node (the CCM's --node-status-update-frequency plus slack).
	NodeAddressUpdate TimeoutName = "nodeAddressUpdate"
	// NodeIPRejection is how long a Node whose provided node IP the cloud
	// does not know must stay tainted and uninitialized.
	NodeIPRejection TimeoutName = "nodeIPRejection"
	// NodeDeletion bounds the wait for the CCM to delete the Node of a
	// deleted instance.
	NodeDeletion TimeoutName = "nodeDeletion"
	// NodeShutdown bounds the wait for the shutdown taint to appear on, or
	// leave, the Node of a stopped or restarted instance.
	NodeShutdown TimeoutName = "nodeShutdown"
	// LoadBalancerCreate bounds the wait for a LoadBalancer Service's ingress.
	LoadBalancerCreate TimeoutName = "loadBalancerCreate"
	// LoadBalancerUpdate bounds the wait for a Service or node-set change to
	// reach the cloud load balancer.
	LoadBalancerUpdate TimeoutName = "loadBalancerUpdate"
	// LoadBalancerDelete bounds the wait for a cloud load balancer to go.
	LoadBalancerDelete TimeoutName = "loadBalancerDelete"
	// LoadBalancerIgnore is how long a Service the CCM must leave alone
	// (one with a loadBalancerClass) is watched for a load balancer.
	LoadBalancerIgnore TimeoutName = "loadBalancerIgnore"
	// NodeKeep is how long a NotReady node whose instance the cloud cannot
	// vouch for (its API answers errors) is watched to see it is kept.
	NodeKeep TimeoutName = "nodeKeep"
	// RouteSync bounds the wait for cloud routes to match the nodes' podCIDRs.
	RouteSync TimeoutName = "routeSync"
	// CloudDriverCall bounds one call of the cloud driver.
	CloudDriverCall TimeoutName = "cloudDriverCall"
	// LeaderElectionLease is the lease duration the leader migration specs
	// give the CCMs they start (--leader-elect-lease-duration); the renew
	// deadline and retry period are derived from it. Short leases make
	// handovers fast, but every process must renew within two thirds of one.
	LeaderElectionLease TimeoutName = "leaderElectionLease"
	// LeaderMigrationHold is how long a CCM that must keep away from the
	// migrated controllers (another manager holds the migration lease, or
	// the configuration gives them to kube-controller-manager) is watched.
	LeaderMigrationHold TimeoutName = "leaderMigrationHold"
	// LeaderMigrationHandover bounds the wait for a CCM to take a migration
	// lease whose holder stopped and to start the migrated controllers: a
	// lease duration, a retry period, and the controllers' start.
	LeaderMigrationHandover TimeoutName = "leaderMigrationHandover"
	// LeftoversGone bounds the wait, after a world's last spec, for what
	// the specs made to be gone (namespaces finishing their deletion, the
	// load balancers and routes of deleted Services and nodes) before the
	// run fails naming what is left.
	LeftoversGone TimeoutName = "leftoversGone"
)

var timeoutDefaults = map[TimeoutName]time.Duration{
	PollInterval:            2 * time.Second,
	CCMReady:                2 * time.Minute,
	ServiceReady:            1 * time.Minute,
	NodeInitialize:          5 * time.Minute,
	NodeAddressUpdate:       6 * time.Minute,
	NodeIPRejection:         1 * time.Minute,
	NodeDeletion:            5 * time.Minute,
	NodeShutdown:            5 * time.Minute,
	LoadBalancerCreate:      15 * time.Minute,
	LoadBalancerUpdate:      10 * time.Minute,
	LoadBalancerDelete:      10 * time.Minute,
	LoadBalancerIgnore:      1 * time.Minute,
	NodeKeep:                2 * time.Minute,
	RouteSync:               5 * time.Minute,
	CloudDriverCall:         30 * time.Second,
	LeaderElectionLease:     15 * time.Second, // upstream's default for controller managers
	LeaderMigrationHold:     1 * time.Minute,
	LeaderMigrationHandover: 1 * time.Minute,
	LeftoversGone:           10 * time.Minute, // as loadBalancerDelete
}

// Timeouts maps timeout names to Go durations ("90s", "2m").
type Timeouts map[TimeoutName]string

// UnmarshalJSON keeps a value that is not a string (a number written
// without a unit, say) as it was written, so that validation can name its
// key instead of the decoder failing on the whole map.
func (t *Timeouts) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*t = nil
		return nil
	}
	var raw map[TimeoutName]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("timeouts: want a map of names to durations such as 90s or 2m")
	}
	out := make(Timeouts, len(raw))
	for name, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			s = string(bytes.TrimSpace(v))
		}
		out[name] = s
	}
	*t = out
	return nil
}

// TimeoutNames lists every named wait, sorted.
func TimeoutNames() []TimeoutName {
	out := make([]TimeoutName, 0, len(timeoutDefaults))
	for n := range timeoutDefaults {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// DefaultTimeout returns the built-in default of a named wait.
func DefaultTimeout(n TimeoutName) time.Duration { return timeoutDefaults[n] }

func (t Timeouts) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := make([]string, 0, len(timeoutDefaults))
	for _, n := range TimeoutNames() {
		names = append(names, string(n))
	}
	for name, value := range t {
		p := path.Child(string(name))
		if _, ok := timeoutDefaults[name]; !ok {
			errs = append(errs, field.NotSupported(path, string(name), names))
			continue
		}
		d, err := time.ParseDuration(value)
		if err != nil {
			reason := "not a duration such as 90s or 2m"
			if isNumber(value) {
				reason = fmt.Sprintf("a number without a unit; write a duration such as %ss or %sm", value, value)
			}
			errs = append(errs, field.Invalid(p, value, reason))
			continue
		}
		if d <= 0 {
			errs = append(errs, field.Invalid(p, value, "must be positive"))
			continue
		}
		if floor, ok := negativeWindowFloors[name]; ok && d < floor {
			errs = append(errs, field.Invalid(p, value, fmt.Sprintf("a negative window below its floor of %s: a spec that waits this long for something not to happen passes whatever the CCM does (docs/profile.md, \"Negative windows\")", floor)))
		}
	}
	return errs
}

// negativeWindowFloors are the shortest the negative windows may be: the
// waits in which a spec checks that something does not happen. Each starts
// once a positive control shows the CCM has acted (docs/suites.md); the
// floor keeps it long enough for the CCM's own loop to act again within it
// (docs/profile.md gives the reason for each value). A shorter window
// passes a CCM that does nothing wrong only because it was not watched.
var negativeWindowFloors = map[TimeoutName]time.Duration{
	NodeIPRejection:     1 * time.Second,
	LoadBalancerIgnore:  1 * time.Second,
	NodeKeep:            10 * time.Second,
	LeaderMigrationHold: 2 * time.Second,
}

func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	dot := false
	for _, r := range s {
		switch {
		case r == '.' && !dot:
			dot = true
		case r < '0' || r > '9':
			return false
		}
	}
	return true
}

// Timeout returns the profile's value for a named wait, or its default.
func (p *Profile) Timeout(n TimeoutName) time.Duration {
	if v, ok := p.Timeouts[n]; ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	d, ok := timeoutDefaults[n]
	if !ok {
		panic(fmt.Sprintf("profile: unknown timeout name %q", n))
	}
	return d
}

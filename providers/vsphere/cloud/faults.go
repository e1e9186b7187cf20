package cloud

import (
	"fmt"
	"sort"
	"sync"

	"github.com/vmware/govmomi/simulator"

	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/simctl"
)

// faultMethods maps each fault target to the SOAP methods it fails.
//
// instances: every way the vSphere CCM finds a node's VM. Its
// InstanceExists, InstanceMetadata (NodeAddressesByProviderID) and, for a
// VM it has not discovered yet, InstanceShutdown run DiscoverNode, which
// finds the VM with SearchIndex.FindByUuid, or by the node's name with
// FindAllByDnsName and then FindByIp (pkg/common/vclib/datacenter.go,
// GetVMByUUID, GetVMByDNSName, GetVMByIP). The other SearchIndex lookups
// of VMs are included so that no way round is left. InstanceShutdown of a
// VM the CCM has discovered reads its power state with the property
// collector (vclib/virtualmachine.go, IsActive), which no fault touches:
// failing the property collector would fail every client, the driver
// included.
//
// The cloud driver never calls SearchIndex, so these faults never reach it.
var faultMethods = map[string][]string{
	simctl.TargetInstances: {"FindByUuid", "FindAllByUuid", "FindByDnsName", "FindAllByDnsName", "FindByIp", "FindAllByIp"},
}

// faults keeps the error rate of each target as the simulator's own fault
// injection rules (simulator.FaultInjectionRule).
type faults struct {
	svc *simulator.Service

	mu    sync.Mutex
	rates map[string]float64
}

func (f *faults) set(target string, rate float64) error {
	if _, ok := faultMethods[target]; !ok {
		return fmt.Errorf("unknown fault target %q: this cloud has only %q (it has no load balancers or routes)", target, simctl.TargetInstances)
	}
	if rate < 0 || rate > 1 {
		return fmt.Errorf("error rate %v: want a value from 0 to 1", rate)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if rate == 0 {
		delete(f.rates, target)
	} else {
		f.rates[target] = rate
	}
	f.apply()
	return nil
}

func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.rates)
	f.apply()
}

// apply replaces the simulator's rules with those of f.rates; the caller
// holds f.mu.
func (f *faults) apply() {
	f.svc.ClearFaultRules()
	targets := make([]string, 0, len(f.rates))
	for t := range f.rates {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		for _, m := range faultMethods[t] {
			f.svc.AddFaultRule(&simulator.FaultInjectionRule{
				MethodName:  m,
				ObjectType:  "SearchIndex",
				ObjectName:  "*",
				Probability: f.rates[t],
				FaultType:   simulator.FaultTypeGeneric, // a SystemError fault
				Message:     "ccm-conformance: injected fault on " + t,
				Enabled:     true,
			})
		}
	}
}

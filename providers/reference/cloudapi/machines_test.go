package cloudapi

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// fakeMachines records what the cloud asks of its machines and fails the
// names in fail; a machine named in restartAddrs comes back from a start
// with those addresses.
type fakeMachines struct {
	mu           sync.Mutex
	calls        []string
	fail         map[string]bool
	restartAddrs map[string][]Address
	// tables are the route tables last set, by machine.
	tables map[string][]MachineRoute
}

func (f *fakeMachines) SetRoutes(_ context.Context, name string, routes []MachineRoute) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tables == nil {
		f.tables = map[string][]MachineRoute{}
	}
	f.tables[name] = routes
	return nil
}

func (f *fakeMachines) table(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.tables[name] {
		out = append(out, r.Destination.String()+" via "+r.Via.String())
	}
	return out
}

func (f *fakeMachines) act(verb, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, verb+" "+name)
	if f.fail[name] {
		return errors.New("the engine said no")
	}
	return nil
}

func (f *fakeMachines) Stop(_ context.Context, name string) error { return f.act("stop", name) }
func (f *fakeMachines) Start(_ context.Context, name string) ([]Address, error) {
	if err := f.act("start", name); err != nil {
		return nil, err
	}
	return f.restartAddrs[name], nil
}
func (f *fakeMachines) Delete(_ context.Context, name string) error { return f.act("delete", name) }

func TestAdoptedMachines(t *testing.T) {
	ctx := context.Background()
	moved := []Address{{Type: AddressInternalIP, Address: "172.18.0.9"}, {Type: AddressHostname, Address: "kind-worker"}}
	machines := &fakeMachines{fail: map[string]bool{"broken": true}, restartAddrs: map[string][]Address{"kind-worker": moved}}
	s, c := newTestCloud(t, Options{Machines: machines, DisableDataPath: true})
	adopted, err := s.Adopt([]Machine{
		{Name: "kind-worker", Addresses: []Address{{Type: AddressInternalIP, Address: "172.18.0.3"}, {Type: AddressHostname, Address: "kind-worker"}}},
		{Name: "broken", Addresses: []Address{{Type: AddressInternalIP, Address: "172.18.0.4"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(adopted) != 2 || adopted[0].State != StateRunning || adopted[0].Zone == adopted[1].Zone || !strings.HasPrefix(adopted[0].ProviderID, providerIDPrefix) {
		t.Fatalf("adopted %+v: want two running instances in different zones with the cloud's providerIDs", adopted)
	}
	worker, broken := adopted[0], adopted[1]

	// A simulated instance next to them has no machine to act on.
	sim, err := c.CreateInstance(ctx, CreateInstanceRequest{Name: "simulated"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StopInstance(ctx, sim.ID); err != nil {
		t.Fatal(err)
	}

	got, err := c.StopInstance(ctx, worker.ID)
	if err != nil || got.State != StateStopped {
		t.Fatalf("stopping %s: %+v, %v", worker.Name, got, err)
	}
	if got, err = c.StartInstance(ctx, worker.ID); err != nil || got.State != StateRunning {
		t.Fatalf("starting %s: %+v, %v", worker.Name, got, err)
	}
	// The machine came back on another address: the instance has it.
	if in, err := c.GetInstance(ctx, worker.ID); err != nil || !reflect.DeepEqual(in.Addresses, moved) {
		t.Errorf("%s after a restart: addresses %v, %v; want the machine's new ones %v", worker.Name, in.Addresses, err, moved)
	}
	// A machine that fails to stop leaves its instance running, and the
	// caller learns why.
	if _, err := c.StopInstance(ctx, broken.ID); err == nil || !strings.Contains(err.Error(), "stopping the machine of instance broken: the engine said no") {
		t.Errorf("stopping broken: %v, want the machine's error", err)
	}
	if in, err := c.GetInstance(ctx, broken.ID); err != nil || in.State != StateRunning {
		t.Errorf("broken after a failed stop: %+v, %v; want running", in, err)
	}
	// A real machine's addresses are its own.
	if _, err := c.SetAddresses(ctx, worker.ID, []Address{{Type: AddressInternalIP, Address: "10.0.0.1"}}); !IsConflict(err) {
		t.Errorf("setting the addresses of %s: %v, want a conflict", worker.Name, err)
	}
	if err := c.DeleteInstance(ctx, worker.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInstance(ctx, worker.ID); !IsNotFound(err) {
		t.Errorf("%s after delete: %v, want not found", worker.Name, err)
	}
	want := []string{"stop kind-worker", "start kind-worker", "stop broken", "delete kind-worker"}
	if !reflect.DeepEqual(machines.calls, want) {
		t.Errorf("machine calls %q, want %q", machines.calls, want)
	}
	if _, err := s.Adopt([]Machine{{Name: "simulated"}}); err == nil {
		t.Error("adopting a name the cloud has was accepted")
	}
	if _, err := s.Adopt([]Machine{{Name: "bad", Addresses: []Address{{Type: AddressInternalIP, Address: "not-an-ip"}}}}); err == nil {
		t.Error("adopting a machine with a malformed address was accepted")
	}
}

// The cloud's routes are programmed into its machines: each running
// machine gets the routes to the others, through the target's address of
// the destination's family, and loses them when the route or the target
// goes; a restarted machine's new address is the new next hop.
func TestMachineRoutes(t *testing.T) {
	ctx := context.Background()
	ip := func(a string) Address { return Address{Type: AddressInternalIP, Address: a} }
	machines := &fakeMachines{restartAddrs: map[string][]Address{"w2": {ip("172.18.0.9")}}}
	s, c := newTestCloud(t, Options{Machines: machines, DisableDataPath: true})
	adopted, err := s.Adopt([]Machine{
		{Name: "cp", Addresses: []Address{ip("172.18.0.2"), ip("fc00::2")}},
		{Name: "w1", Addresses: []Address{ip("172.18.0.3")}},
		{Name: "w2", Addresses: []Address{ip("172.18.0.4"), {Type: AddressHostname, Address: "w2"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []CreateRouteRequest{
		{Name: "cp-4", NodeName: "cp", DestinationCIDR: "10.244.0.0/24"},
		{Name: "cp-6", NodeName: "cp", DestinationCIDR: "fd00:10:244::/64"},
		{Name: "w1-4", NodeName: "w1", DestinationCIDR: "10.244.1.0/24"},
		{Name: "w1-6", NodeName: "w1", DestinationCIDR: "fd00:10:244:1::/64"}, // w1 has no IPv6 address
		{Name: "w2-4", NodeName: "w2", DestinationCIDR: "10.244.2.0/24"},
		{Name: "gone", NodeName: "not-a-machine", DestinationCIDR: "10.244.9.0/24"},
	} {
		if _, err := c.CreateRoute(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, want map[string][]string) {
		t.Helper()
		for name, w := range want {
			if got := machines.table(name); !reflect.DeepEqual(got, w) {
				t.Errorf("%s: machine %s has routes %q, want %q", when, name, got, w)
			}
		}
	}
	check("after the creates", map[string][]string{
		"cp": {"10.244.1.0/24 via 172.18.0.3", "10.244.2.0/24 via 172.18.0.4"},
		"w1": {"10.244.0.0/24 via 172.18.0.2", "fd00:10:244::/64 via fc00::2", "10.244.2.0/24 via 172.18.0.4"},
		"w2": {"10.244.0.0/24 via 172.18.0.2", "fd00:10:244::/64 via fc00::2", "10.244.1.0/24 via 172.18.0.3"},
	})

	w2 := adopted[2].ID
	if _, err := c.StopInstance(ctx, w2); err != nil {
		t.Fatal(err)
	}
	check("w2 stopped", map[string][]string{"cp": {"10.244.1.0/24 via 172.18.0.3"}})
	if _, err := c.StartInstance(ctx, w2); err != nil {
		t.Fatal(err)
	}
	check("w2 started on another address", map[string][]string{
		"cp": {"10.244.1.0/24 via 172.18.0.3", "10.244.2.0/24 via 172.18.0.9"},
		"w2": {"10.244.0.0/24 via 172.18.0.2", "fd00:10:244::/64 via fc00::2", "10.244.1.0/24 via 172.18.0.3"},
	})
	if err := c.DeleteRoute(ctx, "w1-4"); err != nil {
		t.Fatal(err)
	}
	check("w1's route deleted", map[string][]string{"cp": {"10.244.2.0/24 via 172.18.0.9"}})
}

package cloudapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
)

// Machines are real machines behind some of the cloud's instances (the
// node containers of a kind cluster, say). The cloud adopts each as an
// instance (Server.Adopt), and stopping, starting or deleting such an
// instance stops, starts or deletes its machine before the cloud says so,
// so that a kubelet on it really goes silent.
type Machines interface {
	Stop(ctx context.Context, name string) error
	// Start starts the machine and returns the addresses it has now,
	// which need not be those it had before it stopped (Docker hands a
	// restarted container whichever address is free); the instance takes
	// them.
	Start(ctx context.Context, name string) ([]Address, error)
	Delete(ctx context.Context, name string) error
	// SetRoutes makes routes the machine's whole table of cloud routes:
	// it adds or changes what is missing and removes the cloud routes it
	// set before that are no longer wanted. The cloud calls it with a
	// running machine's table whenever a route, or an address a route
	// goes through, may have changed.
	SetRoutes(ctx context.Context, name string, routes []MachineRoute) error
}

// MachineRoute is a cloud route as a machine carries it: traffic to
// Destination goes through Via, the address of the route's target machine
// of Destination's family.
type MachineRoute struct {
	Destination netip.Prefix
	Via         netip.Addr
}

// Machine is one real machine, as the cloud adopts it.
type Machine struct {
	// Name is the instance's name (its node's name).
	Name string
	// Addresses are the machine's, in the order a node lists them.
	Addresses []Address
}

// Adopt makes each machine an instance, running, in the zones and with
// the instance type created instances get by default, and a providerID of
// the cloud's own. A name the cloud already has is refused.
func (s *Server) Adopt(machines []Machine) ([]Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var adopted []Instance
	for _, m := range machines {
		if err := validateName("machine name", m.Name, 253); err != nil {
			return adopted, err
		}
		if _, ok := s.idByName[m.Name]; ok {
			return adopted, conflict("instance %q already exists", m.Name)
		}
		if err := validateMachineAddresses(m.Name, m.Addresses); err != nil {
			return adopted, err
		}
		zone := defaultZones[s.zoneSeq%len(defaultZones)]
		s.zoneSeq++
		s.instanceSeq++
		id := fmt.Sprintf("i-%04d", s.instanceSeq)
		rec := &instanceRecord{seq: s.instanceSeq, machine: true, Instance: Instance{
			ID:           id,
			Name:         m.Name,
			ProviderID:   ProviderID(zone, id),
			Zone:         zone,
			Region:       defaultRegion,
			InstanceType: defaultInstanceType,
			State:        StateRunning,
			Addresses:    slices.Clone(m.Addresses),
		}}
		s.instances[id] = rec
		s.idByName[m.Name] = id
		adopted = append(adopted, rec.copy())
	}
	return adopted, nil
}

func validateMachineAddresses(name string, addrs []Address) error {
	for _, a := range addrs {
		if err := validateAddress(a); err != nil {
			return fmt.Errorf("machine %s: %w", name, err)
		}
	}
	return nil
}

// onMachine runs act on the machine behind the instance of the request,
// if it has one, without holding s.mu (a machine may take seconds to
// stop). The instance's record is changed by the caller afterwards.
func (s *Server) onMachine(r *http.Request, what string, act func(context.Context, Machines, string) error) error {
	s.mu.Lock()
	rec, err := s.instance(r)
	var name string
	if err == nil && rec.machine {
		name = rec.Name
	}
	s.mu.Unlock()
	if err != nil || name == "" || s.opts.Machines == nil {
		return err
	}
	if err := act(r.Context(), s.opts.Machines, name); err != nil {
		return &apiError{http.StatusBadGateway, fmt.Sprintf("%s the machine of instance %s: %v", what, name, err)}
	}
	return nil
}

// machineRoutes are the route tables of the running machines: each gets
// the cloud's routes to other machines, through the target's address of
// the destination's family. A route whose target is no running machine,
// or has no address of that family, is on no machine's table.
func (s *Server) machineRoutes() map[string][]MachineRoute {
	s.mu.Lock()
	defer s.mu.Unlock()
	via := map[string][]netip.Addr{} // running machines' addresses, by name
	for _, rec := range s.instances {
		if !rec.machine || rec.State != StateRunning {
			continue
		}
		via[rec.Name] = nil
		for _, a := range rec.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == AddressInternalIP {
				via[rec.Name] = append(via[rec.Name], ip)
			}
		}
	}
	records := slices.Collect(maps.Values(s.routes))
	slices.SortFunc(records, func(a, b *routeRecord) int { return cmp.Compare(a.seq, b.seq) })
	tables := map[string][]MachineRoute{}
	for name := range via {
		tables[name] = []MachineRoute{}
	}
	for _, rec := range records {
		dest, err := netip.ParsePrefix(rec.DestinationCIDR)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(via[rec.NodeName], func(a netip.Addr) bool { return a.Is4() == dest.Addr().Is4() })
		if i < 0 {
			continue
		}
		for name := range tables {
			if name != rec.NodeName {
				tables[name] = append(tables[name], MachineRoute{Destination: dest, Via: via[rec.NodeName][i]})
			}
		}
	}
	return tables
}

// syncMachineRoutes gives every running machine its route table. One sync
// runs at a time, so that tables are applied in the order they were
// computed; s.mu is not held while the machines change (that takes a
// docker exec each).
func (s *Server) syncMachineRoutes(ctx context.Context) error {
	if s.opts.Machines == nil {
		return nil
	}
	s.routeSyncMu.Lock()
	defer s.routeSyncMu.Unlock()
	tables := s.machineRoutes()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		if err := s.opts.Machines.SetRoutes(ctx, name, tables[name]); err != nil {
			errs = append(errs, fmt.Errorf("machine %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &apiError{http.StatusBadGateway, fmt.Sprintf("programming the cloud's routes into its machines: %v", err)}
	}
	return nil
}

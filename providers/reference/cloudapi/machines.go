package cloudapi

import (
	"context"
	"fmt"
	"net/http"
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

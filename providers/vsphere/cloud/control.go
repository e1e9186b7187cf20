package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/simctl"
)

var errNoVM = errors.New("no such virtual machine")

// controlHandler serves the control channel (package simctl).
func (c *Cloud) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT "+simctl.PathGuest+"{name}", func(w http.ResponseWriter, r *http.Request) {
		var g simctl.Guest
		if err := json.NewDecoder(r.Body).Decode(&g); err != nil {
			simctl.WriteError(w, http.StatusBadRequest, fmt.Errorf("decoding the guest information: %w", err))
			return
		}
		name := r.PathValue("name")
		if err := c.SetGuest(r.Context(), name, g); err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, errNoVM) {
				status = http.StatusNotFound
			}
			simctl.WriteError(w, status, err)
			return
		}
		c.opts.Logf("guest of VM %s: host name %q, networks %v", name, g.HostName, g.Networks)
		simctl.WriteJSON(w, struct{}{})
	})
	mux.HandleFunc("PUT "+simctl.PathFaults+"{target}", func(w http.ResponseWriter, r *http.Request) {
		var f simctl.Fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			simctl.WriteError(w, http.StatusBadRequest, fmt.Errorf("decoding the fault: %w", err))
			return
		}
		target := r.PathValue("target")
		if err := c.faults.set(target, f.ErrorRate); err != nil {
			simctl.WriteError(w, http.StatusBadRequest, err)
			return
		}
		c.opts.Logf("fault on %s: error rate %v (methods %v)", target, f.ErrorRate, faultMethods[target])
		simctl.WriteJSON(w, struct{}{})
	})
	mux.HandleFunc("DELETE "+simctl.PathFaults, func(w http.ResponseWriter, r *http.Request) {
		c.faults.clear()
		c.opts.Logf("faults cleared")
		simctl.WriteJSON(w, struct{}{})
	})
	mux.HandleFunc("GET "+simctl.PathCalls, func(w http.ResponseWriter, r *http.Request) {
		after := int64(0)
		if s := r.URL.Query().Get("after"); s != "" {
			var err error
			if after, err = strconv.ParseInt(s, 10, 64); err != nil || after < 0 {
				simctl.WriteError(w, http.StatusBadRequest, fmt.Errorf("after %q: want 0 or a sequence number", s))
				return
			}
		}
		simctl.WriteJSON(w, c.calls.since(after))
	})
	return mux
}

// SetGuest replaces what the guest of the VM named name reports: its host
// name and the IP addresses of its NICs, by network. It writes the
// simulator's object directly, as VMware Tools would report from inside the
// guest; watchers of guest.* (a property collector's WaitForUpdates) are
// told.
func (c *Cloud) SetGuest(ctx context.Context, name string, g simctl.Guest) error {
	for network, ips := range g.Networks {
		for _, ip := range ips {
			if _, err := netip.ParseAddr(ip); err != nil {
				return fmt.Errorf("network %q: %w", network, err)
			}
		}
	}
	var vms []mo.VirtualMachine
	if err := retrieveAll(ctx, c.inproc, c.inproc.ServiceContent.RootFolder, "VirtualMachine", []string{"name"}, &vms); err != nil {
		return err
	}
	i := slices.IndexFunc(vms, func(vm mo.VirtualMachine) bool { return vm.Name == name })
	if i < 0 {
		return fmt.Errorf("%w named %q", errNoVM, name)
	}
	vm, ok := c.model.Map().Get(vms[i].Self).(*simulator.VirtualMachine)
	if !ok {
		return fmt.Errorf("%w named %q (%s)", errNoVM, name, vms[i].Self.Value)
	}
	defer c.calls.names.invalidate()

	sctx := *c.model.Service.Context // a locking context of its own
	sctx.Context = ctx
	var err error
	sctx.WithLock(vm, func() {
		if vm.Guest == nil {
			err = fmt.Errorf("VM %s has no guest information", name)
			return
		}
		nets := slices.Clone(vm.Guest.Net)
		found := map[string]bool{}
		primary := ""
		for i := range nets {
			ips, ok := g.Networks[nets[i].Network]
			found[nets[i].Network] = found[nets[i].Network] || ok
			nets[i].IpAddress = slices.Clone(ips)
			nets[i].IpConfig = ipConfig(ips)
			if primary == "" && len(ips) > 0 {
				primary = ips[0]
			}
		}
		for network := range g.Networks {
			if !found[network] {
				err = fmt.Errorf("VM %s has no NIC on network %q", name, network)
				return
			}
		}
		sctx.Update(vm, []types.PropertyChange{
			{Name: "guest.net", Val: nets},
			{Name: "guest.hostName", Val: g.HostName},
			{Name: "guest.ipAddress", Val: primary},
			{Name: "summary.guest.hostName", Val: g.HostName},
			{Name: "summary.guest.ipAddress", Val: primary},
		})
	})
	return err
}

// ipConfig is guest.net[].ipConfig for the addresses, as VMware Tools
// reports it next to ipAddress.
func ipConfig(ips []string) *types.NetIpConfigInfo {
	if len(ips) == 0 {
		return nil
	}
	cfg := &types.NetIpConfigInfo{}
	for _, ip := range ips {
		prefix := int32(64)
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			prefix = 24
		}
		cfg.IpAddress = append(cfg.IpAddress, types.NetIpConfigInfoIpAddress{IpAddress: ip, PrefixLength: prefix, State: "preferred"})
	}
	return cfg
}

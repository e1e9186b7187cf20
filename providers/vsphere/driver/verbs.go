package driver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/simctl"
)

// guestInfoTimeout bounds the wait for a new VM's guest to report its host
// name and addresses (VMware Tools after boot; at once in the simulator).
const guestInfoTimeout = 2 * time.Minute

// ---- info ----

func (d *driver) info(context.Context, []byte) (any, error) {
	return driverproto.Info{ProtocolVersion: driverproto.Version, Provider: "vsphere", Verbs: offered(d.getenv)}, nil
}

// ---- instances ----

type instanceResponse struct {
	Instance driverproto.Instance `json:"instance"`
}

// toInstance states what the vCenter holds for a VM in the protocol's
// terms, each field as the CCM derives it (mapping.go).
func (d *driver) toInstance(vm *mo.VirtualMachine, zr zoneRegion) driverproto.Instance {
	in := driverproto.Instance{ID: vm.Self.Value, Name: vm.Name, Zone: zr.zone, Region: zr.region, State: "stopped", Addresses: []driverproto.Address{}}
	sc := vm.Summary.Config
	in.ProviderID = providerID(sc.Uuid)
	in.InstanceType = instanceType(sc.NumCpu, sc.MemorySizeMB, sc.GuestId)
	if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn {
		in.State = "running"
	}
	if vm.Guest != nil {
		nics := make([]guestNIC, len(vm.Guest.Net))
		for i, n := range vm.Guest.Net {
			nics[i] = guestNIC{network: n.Network, deviceConfigID: n.DeviceConfigId, ips: n.IpAddress}
		}
		in.Addresses = rulesOf(d.cfg).addresses(vm.Guest.HostName, nics)
	}
	return in
}

func (d *driver) listInstances(ctx context.Context, _ []byte) (any, error) {
	vms, err := d.vc.vms(ctx)
	if err != nil {
		return nil, err
	}
	z, err := d.vc.zones(ctx)
	if err != nil {
		return nil, err
	}
	var hosts []types.ManagedObjectReference
	for _, vm := range vms {
		if vm.Runtime.Host != nil && !slices.Contains(hosts, *vm.Runtime.Host) {
			hosts = append(hosts, *vm.Runtime.Host)
		}
	}
	if err := z.prefetch(ctx, hosts); err != nil {
		return nil, err
	}
	resp := struct {
		Instances []driverproto.Instance `json:"instances"`
	}{Instances: []driverproto.Instance{}}
	for i := range vms {
		zr, err := z.of(ctx, &vms[i])
		if err != nil {
			return nil, err
		}
		resp.Instances = append(resp.Instances, d.toInstance(&vms[i], zr))
	}
	return resp, nil
}

// instance reads the VM named name as an Instance.
func (d *driver) instance(ctx context.Context, name string) (*mo.VirtualMachine, driverproto.Instance, error) {
	vm, err := d.vc.vmByName(ctx, name)
	if err != nil {
		return nil, driverproto.Instance{}, err
	}
	z, err := d.vc.zones(ctx)
	if err != nil {
		return nil, driverproto.Instance{}, err
	}
	zr, err := z.of(ctx, vm)
	if err != nil {
		return nil, driverproto.Instance{}, err
	}
	return vm, d.toInstance(vm, zr), nil
}

func (d *driver) getInstance(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	_, in, err := d.instance(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return instanceResponse{Instance: in}, nil
}

// placement is a cluster to create a VM in.
type placement struct {
	cluster mo.ClusterComputeResource
	zone    string
}

// place picks the cluster for a new VM: one in the requested zone, or the
// zone with the fewest VMs.
func (d *driver) place(ctx context.Context, zone string) (*placement, error) {
	var clusters []mo.ClusterComputeResource
	if err := d.vc.retrieve(ctx, d.vc.dc.HostFolder, "ClusterComputeResource", []string{"name", "resourcePool", "host"}, &clusters); err != nil {
		return nil, err
	}
	slices.SortFunc(clusters, func(a, b mo.ClusterComputeResource) int { return strings.Compare(a.Name, b.Name) })
	z, err := d.vc.zones(ctx)
	if err != nil {
		return nil, err
	}
	var options []placement
	for _, cl := range clusters {
		if len(cl.Host) == 0 || cl.ResourcePool == nil {
			continue
		}
		// A VM there gets the zone of its host, as the CCM reads it.
		zr, _, err := z.lookup(ctx, cl.Host[0])
		if err != nil {
			return nil, err
		}
		options = append(options, placement{cluster: cl, zone: zr.zone})
	}
	var known []string
	for _, o := range options {
		if zone != "" && o.zone == zone {
			return &o, nil
		}
		known = append(known, o.zone)
	}
	if zone != "" {
		return nil, fmt.Errorf("zone %q: no cluster of datacenter %s is in it (zones: %s)", zone, d.vc.dc.Name, strings.Join(known, ", "))
	}
	if len(options) == 0 {
		return nil, fmt.Errorf("datacenter %s has no cluster with hosts", d.vc.dc.Name)
	}
	vms, err := d.vc.vms(ctx)
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for i := range vms {
		zr, err := z.of(ctx, &vms[i])
		if err != nil {
			return nil, err
		}
		count[zr.zone]++
	}
	best := &options[0]
	for i := range options {
		if count[options[i].zone] < count[best.zone] {
			best = &options[i]
		}
	}
	return best, nil
}

func (d *driver) createInstance(ctx context.Context, request []byte) (_ any, err error) {
	req, err := driverproto.Decode[driverproto.CreateInstanceRequest](request)
	if err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, fmt.Errorf("the request has no name")
	}
	families := req.IPFamilies
	if len(families) == 0 {
		families = []string{"IPv4"}
	}
	for i, f := range families {
		if f != "IPv4" && f != "IPv6" || slices.Index(families, f) != i {
			return nil, fmt.Errorf("ipFamilies %v: want IPv4 and/or IPv6, each once", families)
		}
	}
	if slices.Contains(families, "IPv6") && d.control == nil {
		return nil, fmt.Errorf("an IPv6 instance needs the simulator's control channel ($%s): govmomi's simulator applies only the IPv4 part of a guest customization", ControlEnv)
	}
	cpus, memoryMB, guestID := int32(2), int32(4096), guestIDFor["linux"]
	if req.InstanceType != "" {
		if cpus, memoryMB, guestID, err = parseInstanceType(req.InstanceType); err != nil {
			return nil, err
		}
	}
	if _, err := d.vc.vmByName(ctx, req.Name); err == nil {
		return nil, fmt.Errorf("instance %q already exists", req.Name)
	} else if !errors.Is(err, driverproto.ErrNotFound) {
		return nil, err
	}
	cfg := d.cfg
	if cfg.internalNetwork == "" || cfg.externalNetwork == "" {
		return nil, fmt.Errorf("the cloud config names no internal-vm-network-name and external-vm-network-name ([Nodes]): the networks a new VM's NICs go on")
	}
	where, err := d.place(ctx, req.Zone)
	if err != nil {
		return nil, err
	}
	pools, err := d.vc.pools(ctx)
	if err != nil {
		return nil, err
	}

	// Addresses first: one of each family per NIC, from the pool of the
	// NIC's network, held under the VM's name.
	cleanup := []func(context.Context){}
	defer func() {
		if err != nil {
			ctx := context.WithoutCancel(ctx)
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i](ctx)
			}
		}
	}()
	networks := []string{cfg.internalNetwork, cfg.externalNetwork}
	addrs := map[string][]string{}
	for _, network := range networks {
		pool, ok := pools[network]
		if !ok {
			return nil, fmt.Errorf("datacenter %s has no IP pool on network %q", d.vc.dc.Name, network)
		}
		cleanup = append(cleanup, func(ctx context.Context) { _ = d.vc.release(ctx, pool, req.Name) })
		for _, f := range families {
			ip, err := d.vc.allocate(ctx, pool, f, req.Name)
			if err != nil {
				return nil, err
			}
			addrs[network] = append(addrs[network], ip)
		}
	}

	var nets []mo.Network
	if err := d.vc.retrieve(ctx, d.vc.dc.Self, "Network", []string{"name"}, &nets); err != nil {
		return nil, err
	}
	var devices object.VirtualDeviceList
	for i, network := range networks {
		j := slices.IndexFunc(nets, func(n mo.Network) bool { return n.Name == network })
		if j < 0 {
			return nil, fmt.Errorf("datacenter %s has no network %q", d.vc.dc.Name, network)
		}
		backing, err := object.NewNetwork(d.vc.c, nets[j].Self).EthernetCardBackingInfo(ctx)
		if err != nil {
			return nil, err
		}
		card, err := devices.CreateEthernetCard("vmxnet3", backing)
		if err != nil {
			return nil, err
		}
		card.GetVirtualDevice().Key = int32(-100 - i)
		devices = append(devices, card)
	}
	changes, err := devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd)
	if err != nil {
		return nil, err
	}
	if len(d.vc.dc.Datastore) == 0 {
		return nil, fmt.Errorf("datacenter %s has no datastore", d.vc.dc.Name)
	}
	var ds mo.Datastore
	if err := property.DefaultCollector(d.vc.c).RetrieveOne(ctx, d.vc.dc.Datastore[0], []string{"name"}, &ds); err != nil {
		return nil, fmt.Errorf("reading datastore %s: %w", d.vc.dc.Datastore[0].Value, err)
	}
	spec := types.VirtualMachineConfigSpec{
		Name: req.Name, GuestId: guestID, NumCPUs: cpus, MemoryMB: int64(memoryMB),
		Files:        &types.VirtualMachineFileInfo{VmPathName: "[" + ds.Name + "]"},
		DeviceChange: changes,
	}
	task, err := object.NewFolder(d.vc.c, d.vc.dc.VmFolder).CreateVM(ctx, spec, object.NewResourcePool(d.vc.c, *where.cluster.ResourcePool), nil)
	if err != nil {
		return nil, fmt.Errorf("creating VM %s in cluster %s: %w", req.Name, where.cluster.Name, err)
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating VM %s in cluster %s: %w", req.Name, where.cluster.Name, err)
	}
	vm := object.NewVirtualMachine(d.vc.c, info.Result.(types.ManagedObjectReference))
	cleanup = append(cleanup, func(ctx context.Context) { _ = destroy(ctx, vm) })

	// The guest's identity and IPv4 addresses by guest customization, as a
	// template's VMs get them; IPv6 through the control channel below.
	cust := types.CustomizationSpec{
		Identity:         &types.CustomizationLinuxPrep{HostName: &types.CustomizationFixedName{Name: req.Name}},
		GlobalIPSettings: types.CustomizationGlobalIPSettings{},
	}
	for _, network := range networks {
		settings := types.CustomizationIPSettings{Ip: &types.CustomizationDhcpIpGenerator{}}
		for _, ip := range addrs[network] {
			a := netip.MustParseAddr(ip)
			if a.Is4() {
				settings.Ip = &types.CustomizationFixedIp{IpAddress: ip}
				settings.SubnetMask = "255.255.255.0"
			} else {
				settings.IpV6Spec = &types.CustomizationIPSettingsIpV6AddressSpec{
					Ip: []types.BaseCustomizationIpV6Generator{&types.CustomizationFixedIpV6{IpAddress: ip, SubnetMask: 64}},
				}
			}
		}
		cust.NicSettingMap = append(cust.NicSettingMap, types.CustomizationAdapterMapping{Adapter: settings})
	}
	if err := waitTask(ctx, "customizing VM "+req.Name, func() (*object.Task, error) { return vm.Customize(ctx, cust) }); err != nil {
		return nil, err
	}
	if err := waitTask(ctx, "powering on VM "+req.Name, func() (*object.Task, error) { return vm.PowerOn(ctx) }); err != nil {
		return nil, err
	}
	if slices.Contains(families, "IPv6") {
		if err := d.control.SetGuest(ctx, req.Name, simctl.Guest{HostName: req.Name, Networks: addrs}); err != nil {
			return nil, err
		}
	}
	if err := waitGuest(ctx, d.vc, vm.Reference(), req.Name, addrs); err != nil {
		return nil, err
	}
	_, in, err := d.instance(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return instanceResponse{Instance: in}, nil
}

// waitGuest waits until the VM's guest reports host name and, on each
// network's NIC, at least the addresses given: until then the CCM cannot
// find the VM (nodemanager.go, DiscoverNode wants a host name and a
// non-loopback IP).
func waitGuest(ctx context.Context, vc *vcenter, vm types.ManagedObjectReference, hostName string, addrs map[string][]string) error {
	ctx, cancel := context.WithTimeout(ctx, guestInfoTimeout)
	defer cancel()
	var seenHost string
	var seenNets []types.GuestNicInfo
	err := property.Wait(ctx, property.DefaultCollector(vc.c), vm, []string{"guest.hostName", "guest.net"}, func(changes []types.PropertyChange) bool {
		for _, c := range changes {
			switch c.Name {
			case "guest.hostName":
				seenHost, _ = c.Val.(string)
			case "guest.net":
				if v, ok := c.Val.(types.ArrayOfGuestNicInfo); ok {
					seenNets = v.GuestNicInfo
				}
			}
		}
		if seenHost != hostName {
			return false
		}
		for network, want := range addrs {
			i := slices.IndexFunc(seenNets, func(n types.GuestNicInfo) bool { return n.Network == network })
			if i < 0 {
				return false
			}
			for _, ip := range want {
				if !slices.Contains(seenNets[i].IpAddress, ip) {
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("waiting for the guest of VM %s to report host name %s and addresses %v (saw %q, %v): %w", hostName, hostName, addrs, seenHost, seenNets, err)
	}
	return nil
}

func waitTask(ctx context.Context, what string, start func() (*object.Task, error)) error {
	task, err := start()
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// destroy powers a VM off if it is on and destroys it.
func destroy(ctx context.Context, vm *object.VirtualMachine) error {
	state, err := vm.PowerState(ctx)
	if err != nil {
		return fmt.Errorf("reading the power state of VM %s: %w", vm.Reference().Value, err)
	}
	if state == types.VirtualMachinePowerStatePoweredOn {
		if err := waitTask(ctx, "powering off VM "+vm.Reference().Value, func() (*object.Task, error) { return vm.PowerOff(ctx) }); err != nil {
			return err
		}
	}
	return waitTask(ctx, "destroying VM "+vm.Reference().Value, func() (*object.Task, error) { return vm.Destroy(ctx) })
}

func (d *driver) deleteInstance(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	vm, err := d.vc.vmByName(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	if err := destroy(ctx, object.NewVirtualMachine(d.vc.c, vm.Self)); err != nil {
		return nil, fmt.Errorf("deleting instance %q: %w", req.Name, err)
	}
	pools, err := d.vc.pools(ctx)
	if err != nil {
		return nil, err
	}
	for _, network := range []string{d.cfg.internalNetwork, d.cfg.externalNetwork} {
		if pool, ok := pools[network]; ok {
			if err := d.vc.release(ctx, pool, req.Name); err != nil {
				return nil, err
			}
		}
	}
	return struct{}{}, nil
}

// power turns the VM named in the request to state, if it is not there.
func (d *driver) power(ctx context.Context, request []byte, on bool) (any, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	vm, err := d.vc.vmByName(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	isOn := vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
	if isOn == on {
		return struct{}{}, nil
	}
	o := object.NewVirtualMachine(d.vc.c, vm.Self)
	if on {
		err = waitTask(ctx, "powering on instance "+req.Name, func() (*object.Task, error) { return o.PowerOn(ctx) })
	} else {
		err = waitTask(ctx, "powering off instance "+req.Name, func() (*object.Task, error) { return o.PowerOff(ctx) })
	}
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (d *driver) stopInstance(ctx context.Context, request []byte) (any, error) {
	return d.power(ctx, request, false)
}

func (d *driver) startInstance(ctx context.Context, request []byte) (any, error) {
	return d.power(ctx, request, true)
}

// setAddresses makes the VM's guest report the addresses, as the CCM
// reads them back: the Hostname as guest.hostName, InternalIPs on the NIC
// of the internal network and ExternalIPs on the NIC of the external one,
// in order. A list without a Hostname leaves the guest without a host name.
// The CCM makes no DNS addresses, and a guest has no place for them.
func (d *driver) setAddresses(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.SetAddressesRequest](request)
	if err != nil {
		return nil, err
	}
	if _, err := d.vc.vmByName(ctx, req.Name); err != nil {
		return nil, err
	}
	g := simctl.Guest{Networks: map[string][]string{d.cfg.internalNetwork: {}, d.cfg.externalNetwork: {}}}
	for _, a := range req.Addresses {
		switch a.Type {
		case "Hostname":
			if g.HostName != "" {
				return nil, fmt.Errorf("addresses: two Hostnames (%s, %s); a guest reports one host name", g.HostName, a.Address)
			}
			g.HostName = a.Address
		case "InternalIP", "ExternalIP":
			if _, err := netip.ParseAddr(a.Address); err != nil {
				return nil, fmt.Errorf("addresses: %s %q: %w", a.Type, a.Address, err)
			}
			network := d.cfg.internalNetwork
			if a.Type == "ExternalIP" {
				network = d.cfg.externalNetwork
			}
			g.Networks[network] = append(g.Networks[network], a.Address)
		default:
			return nil, fmt.Errorf("addresses: type %q: the vSphere CCM reports only Hostname, InternalIP and ExternalIP (nodemanager.go, DiscoverNode), and a guest reports nothing else", a.Type)
		}
	}
	if err := d.control.SetGuest(ctx, req.Name, g); err != nil {
		if errors.Is(err, simctl.ErrNotFound) {
			return nil, fmt.Errorf("instance %q: %w: %w", req.Name, driverproto.ErrNotFound, err)
		}
		return nil, err
	}
	_, in, err := d.instance(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return instanceResponse{Instance: in}, nil
}

// ---- faults ----

func (d *driver) injectFault(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.FaultRequest](request)
	if err != nil {
		return nil, err
	}
	if req.Target != simctl.TargetInstances {
		return nil, fmt.Errorf("unknown fault target %q (known: %s; the vSphere CCM makes load balancers and routes only through NSX-T, which is not simulated)", req.Target, simctl.TargetInstances)
	}
	if req.ErrorRate < 0 || req.ErrorRate > 1 {
		return nil, fmt.Errorf("errorRate %v: want a value from 0 to 1", req.ErrorRate)
	}
	if err := d.control.SetFault(ctx, req.Target, simctl.Fault{ErrorRate: req.ErrorRate}); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (d *driver) clearFaults(ctx context.Context, _ []byte) (any, error) {
	if err := d.control.ClearFaults(ctx); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// ---- call log ----

// listCalls returns the SOAP calls the simulated vCenter served after a
// sequence number, without the driver's own (by its User-Agent), each
// under its SOAP method's name; optionally only some methods.
func (d *driver) listCalls(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.CallsRequest](request)
	if err != nil {
		return nil, err
	}
	if req.After < 0 {
		return nil, fmt.Errorf("after %d: want 0 or a sequence number", req.After)
	}
	logged, err := d.control.Calls(ctx, req.After)
	if err != nil {
		return nil, err
	}
	resp := struct {
		Calls []driverproto.Call `json:"calls"`
		Last  int64              `json:"last"`
	}{Calls: []driverproto.Call{}, Last: max(req.After, logged.Last)}
	for _, c := range logged.Calls {
		if c.UserAgent == UserAgent {
			continue
		}
		if len(req.Operations) > 0 && !slices.Contains(req.Operations, c.Method) {
			continue
		}
		resp.Calls = append(resp.Calls, driverproto.Call{Seq: c.Seq, Time: c.Time, Operation: c.Method, Caller: c.Caller, Resource: c.Resource, Error: c.Error})
	}
	return resp, nil
}

package driver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

// vcenter is the driver's session with the vCenter for one call.
type vcenter struct {
	c   *vim25.Client
	sm  *session.Manager
	cfg *config
	dc  mo.Datacenter

	user, password string // the driver's own credentials

	rest *rest.Client // logged in on first use of the tagging API
}

// connect logs in as user, with the driver's User-Agent, and finds the
// datacenter of the cloud config.
func connect(ctx context.Context, cfg *config, user, password string) (*vcenter, error) {
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(cfg.host, cfg.port), Path: "/sdk"}
	sc := soap.NewClient(u, cfg.insecure)
	if cfg.caFile != "" {
		if err := sc.SetRootCAs(cfg.caFile); err != nil {
			return nil, fmt.Errorf("the vCenter's CA %s: %w", cfg.caFile, err)
		}
	}
	sc.UserAgent = UserAgent
	c, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("connecting to the vCenter at %s: %w", u, err)
	}
	v := &vcenter{c: c, sm: session.NewManager(c), cfg: cfg, user: user, password: password}
	if err := v.sm.Login(ctx, url.UserPassword(user, password)); err != nil {
		return nil, fmt.Errorf("logging in to the vCenter at %s as %s: %w", u, user, err)
	}
	var dcs []mo.Datacenter
	if err := v.retrieve(ctx, c.ServiceContent.RootFolder, "Datacenter", []string{"name", "vmFolder", "hostFolder", "datastore"}, &dcs); err != nil {
		v.close()
		return nil, err
	}
	switch {
	case len(cfg.datacenters) > 1:
		v.close()
		return nil, fmt.Errorf("the cloud config names datacenters %v; this driver serves one", cfg.datacenters)
	case len(cfg.datacenters) == 1:
		i := slices.IndexFunc(dcs, func(dc mo.Datacenter) bool { return dc.Name == cfg.datacenters[0] })
		if i < 0 {
			v.close()
			return nil, fmt.Errorf("the vCenter has no datacenter %q", cfg.datacenters[0])
		}
		v.dc = dcs[i]
	case len(dcs) == 1:
		v.dc = dcs[0]
	default:
		v.close()
		return nil, fmt.Errorf("the vCenter has %d datacenters and the cloud config names none", len(dcs))
	}
	return v, nil
}

func (v *vcenter) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v.rest != nil {
		_ = v.rest.Logout(ctx)
	}
	_ = v.sm.Logout(ctx)
}

// retrieve reads props of every object of kind under container, through a
// container view and the property collector.
func (v *vcenter) retrieve(ctx context.Context, container types.ManagedObjectReference, kind string, props []string, dst any) error {
	cv, err := view.NewManager(v.c).CreateContainerView(ctx, container, []string{kind}, true)
	if err != nil {
		return fmt.Errorf("a view of %s objects: %w", kind, err)
	}
	defer func() { _ = cv.Destroy(context.WithoutCancel(ctx)) }()
	if err := cv.Retrieve(ctx, []string{kind}, props, dst); err != nil {
		return fmt.Errorf("reading %s objects: %w", kind, err)
	}
	return nil
}

// vmProps are the properties an Instance is made of.
var vmProps = []string{
	"name", "config.template", "summary.config.uuid", "summary.config.numCpu", "summary.config.memorySizeMB",
	"summary.config.guestId", "runtime.powerState", "runtime.host", "resourcePool", "guest.hostName", "guest.net",
}

// vms lists the datacenter's VMs (not templates), by name.
func (v *vcenter) vms(ctx context.Context) ([]mo.VirtualMachine, error) {
	var all []mo.VirtualMachine
	if err := v.retrieve(ctx, v.dc.VmFolder, "VirtualMachine", vmProps, &all); err != nil {
		return nil, err
	}
	out := all[:0]
	for _, vm := range all {
		if vm.Config == nil || !vm.Config.Template {
			out = append(out, vm)
		}
	}
	slices.SortFunc(out, func(a, b mo.VirtualMachine) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// vmByName finds the VM named name; driverproto.ErrNotFound when there is none.
func (v *vcenter) vmByName(ctx context.Context, name string) (*mo.VirtualMachine, error) {
	if name == "" {
		return nil, fmt.Errorf("the request has no name")
	}
	vms, err := v.vms(ctx)
	if err != nil {
		return nil, err
	}
	var found []mo.VirtualMachine
	for _, vm := range vms {
		if vm.Name == name {
			found = append(found, vm)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("instance %q: %w: datacenter %s has no VM of that name", name, driverproto.ErrNotFound, v.dc.Name)
	case 1:
		return &found[0], nil
	}
	return nil, fmt.Errorf("instance %q: datacenter %s has %d VMs of that name", name, v.dc.Name, len(found))
}

// zoneRegion is the topology of a VM as the CCM reads it.
type zoneRegion struct{ zone, region string }

// zones finds zones and regions as the CCM does (pkg/cloudprovider/
// vsphere/zones.go, GetZoneByProviderID, and pkg/common/connectionmanager/
// zones.go, LookupZoneByMoref): from the VM's host up through its
// ancestors, the nearest object with a tag of the zone category and the one
// with a tag of the region category; failing that, from the VM's resource
// pool, then from the VM itself. Without both categories in [Labels] the
// CCM reports no zone and no region.
type zones struct {
	v                  *vcenter
	tm                 *tags.Manager
	zoneCat, regionCat string // category IDs
	tagName, tagCat    map[string]string
	attached           map[types.ManagedObjectReference][]string
	ancestors          map[types.ManagedObjectReference][]types.ManagedObjectReference // nearest first
}

func (v *vcenter) zones(ctx context.Context) (*zones, error) {
	z := &zones{v: v, tagName: map[string]string{}, tagCat: map[string]string{},
		attached: map[types.ManagedObjectReference][]string{}, ancestors: map[types.ManagedObjectReference][]types.ManagedObjectReference{}}
	if v.cfg.zoneCategory == "" || v.cfg.regionCategory == "" {
		return z, nil
	}
	if v.rest == nil {
		rc := rest.NewClient(v.c)
		if err := rc.Login(ctx, url.UserPassword(v.user, v.password)); err != nil {
			return nil, fmt.Errorf("logging in to the tagging API: %w", err)
		}
		v.rest = rc
	}
	z.tm = tags.NewManager(v.rest)
	cats, err := z.tm.GetCategories(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading tag categories: %w", err)
	}
	for _, c := range cats {
		switch c.Name {
		case v.cfg.zoneCategory:
			z.zoneCat = c.ID
		case v.cfg.regionCategory:
			z.regionCat = c.ID
		}
	}
	all, err := z.tm.GetTags(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading tags: %w", err)
	}
	for _, t := range all {
		z.tagName[t.ID], z.tagCat[t.ID] = t.Name, t.CategoryID
	}
	return z, nil
}

// prefetch reads the ancestors of refs and the tags of all of them at once.
func (z *zones) prefetch(ctx context.Context, refs []types.ManagedObjectReference) error {
	if z.tm == nil {
		return nil
	}
	var need []types.ManagedObjectReference
	for _, ref := range refs {
		if _, ok := z.ancestors[ref]; ok {
			continue
		}
		entities, err := mo.Ancestors(ctx, z.v.c, z.v.c.ServiceContent.PropertyCollector, ref)
		if err != nil {
			return fmt.Errorf("the ancestors of %s: %w", ref.Value, err)
		}
		var chain []types.ManagedObjectReference
		for i := len(entities) - 1; i >= 0; i-- {
			chain = append(chain, entities[i].Self)
			if _, ok := z.attached[entities[i].Self]; !ok && !slices.Contains(need, entities[i].Self) {
				need = append(need, entities[i].Self)
			}
		}
		z.ancestors[ref] = chain
	}
	if len(need) == 0 {
		return nil
	}
	objs := make([]mo.Reference, len(need))
	for i, ref := range need {
		objs[i] = ref
		z.attached[ref] = nil
	}
	list, err := z.tm.ListAttachedTagsOnObjects(ctx, objs)
	if err != nil {
		return fmt.Errorf("reading attached tags: %w", err)
	}
	for _, a := range list {
		z.attached[a.ObjectID.Reference()] = a.TagIDs
	}
	return nil
}

// lookup is LookupZoneByMoref's search from ref upwards: tags of the zone
// category set the zone, of the region category the region, a later one of
// the same category replacing an earlier, until both are set.
func (z *zones) lookup(ctx context.Context, ref types.ManagedObjectReference) (zoneRegion, bool, error) {
	if err := z.prefetch(ctx, []types.ManagedObjectReference{ref}); err != nil {
		return zoneRegion{}, false, err
	}
	var zr zoneRegion
	for _, obj := range z.ancestors[ref] {
		for _, id := range z.attached[obj] {
			switch z.tagCat[id] {
			case z.zoneCat:
				zr.zone = z.tagName[id]
			case z.regionCat:
				zr.region = z.tagName[id]
			}
			if zr.zone != "" && zr.region != "" {
				return zr, true, nil
			}
		}
	}
	return zoneRegion{}, false, nil
}

// of is the zone and region of a VM; both empty when the CCM would find
// none (it then fails to initialize the node).
func (z *zones) of(ctx context.Context, vm *mo.VirtualMachine) (zoneRegion, error) {
	if z.tm == nil {
		return zoneRegion{}, nil
	}
	var refs []types.ManagedObjectReference
	if vm.Runtime.Host != nil {
		refs = append(refs, *vm.Runtime.Host)
	}
	if vm.ResourcePool != nil {
		refs = append(refs, *vm.ResourcePool)
	}
	refs = append(refs, vm.Self)
	for _, ref := range refs {
		zr, ok, err := z.lookup(ctx, ref)
		if err != nil || ok {
			return zr, err
		}
	}
	return zoneRegion{}, nil
}

// pools finds the IP pools of the datacenter by the network they are
// associated with.
func (v *vcenter) pools(ctx context.Context) (map[string]types.IpPool, error) {
	res, err := methods.QueryIpPools(ctx, v.c, &types.QueryIpPools{This: *v.c.ServiceContent.IpPoolManager, Dc: v.dc.Self})
	if err != nil {
		return nil, fmt.Errorf("reading the IP pools of datacenter %s: %w", v.dc.Name, err)
	}
	out := map[string]types.IpPool{}
	for _, p := range res.Returnval {
		for _, a := range p.NetworkAssociation {
			out[a.NetworkName] = p
		}
	}
	return out, nil
}

// allocate takes an address of the family from a pool for allocationID.
func (v *vcenter) allocate(ctx context.Context, pool types.IpPool, family, allocationID string) (string, error) {
	this, dc := *v.c.ServiceContent.IpPoolManager, v.dc.Self
	if family == "IPv6" {
		res, err := methods.AllocateIpv6Address(ctx, v.c, &types.AllocateIpv6Address{This: this, Dc: dc, PoolId: pool.Id, AllocationId: allocationID})
		if err != nil {
			return "", fmt.Errorf("allocating an IPv6 address from pool %s: %w", pool.Name, err)
		}
		return res.Returnval, nil
	}
	res, err := methods.AllocateIpv4Address(ctx, v.c, &types.AllocateIpv4Address{This: this, Dc: dc, PoolId: pool.Id, AllocationId: allocationID})
	if err != nil {
		return "", fmt.Errorf("allocating an IPv4 address from pool %s: %w", pool.Name, err)
	}
	return res.Returnval, nil
}

// release gives back what allocationID holds in the pool.
func (v *vcenter) release(ctx context.Context, pool types.IpPool, allocationID string) error {
	_, err := methods.ReleaseIpAllocation(ctx, v.c, &types.ReleaseIpAllocation{
		This: *v.c.ServiceContent.IpPoolManager, Dc: v.dc.Self, PoolId: pool.Id, AllocationId: allocationID,
	})
	if err != nil {
		return fmt.Errorf("releasing the addresses of %s in pool %s: %w", allocationID, pool.Name, err)
	}
	return nil
}

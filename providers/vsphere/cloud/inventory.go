package cloud

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// clusterZone is a cluster and the zone tag it carries.
type clusterZone struct {
	name, zone string
}

// inventory is what buildInventory made, for the log and the config.
type inventory struct {
	datacenter string
	clusters   []clusterZone
}

func (inv *inventory) describeClusters() string {
	parts := make([]string, len(inv.clusters))
	for i, c := range inv.clusters {
		parts[i] = c.name + "=" + c.zone
	}
	return strings.Join(parts, ", ")
}

// buildInventory creates the simulator's model and configures it the way
// a vSphere administrator would, through the public API of a short-lived
// server of its own (so that none of it reaches the call log): the external
// network, the IP pools, the tag categories and tags.
func buildInventory(ctx context.Context, o *Options) (*simulator.Model, *inventory, error) {
	m := simulator.VPX()
	m.Datacenter = 1
	m.Cluster = len(o.Zones)
	m.ClusterHost = o.HostsPerCluster
	m.Host = 0      // no standalone hosts: every host is in a zone
	m.Machine = 0   // the driver makes the node VMs
	m.Portgroup = 0 // no distributed switch: NICs use standard networks
	m.Autostart = false
	if err := m.Create(); err != nil {
		return nil, nil, fmt.Errorf("creating the simulator's model: %w", err)
	}
	m.Service.RegisterEndpoints = true // the vAPI (tagging) endpoints
	m.Service.Listen = &url.URL{Host: "127.0.0.1:0"}
	setup := m.Service.NewServer()
	defer setup.Close()

	inv, err := configure(ctx, setup.URL, o)
	if err != nil {
		m.Remove()
		return nil, nil, err
	}
	return m, inv, nil
}

func configure(ctx context.Context, u *url.URL, o *Options) (*inventory, error) {
	c, err := govmomi.NewClient(ctx, u, true)
	if err != nil {
		return nil, fmt.Errorf("logging in to set up the inventory: %w", err)
	}
	defer func() { _ = c.Logout(context.WithoutCancel(ctx)) }()
	vc := c.Client

	var dcs []mo.Datacenter
	if err := retrieveAll(ctx, vc, vc.ServiceContent.RootFolder, "Datacenter", []string{"name", "networkFolder"}, &dcs); err != nil {
		return nil, err
	}
	if len(dcs) != 1 {
		return nil, fmt.Errorf("the model has %d datacenters, want 1", len(dcs))
	}
	dc := dcs[0]

	var clusters []mo.ClusterComputeResource
	if err := retrieveAll(ctx, vc, dc.Self, "ClusterComputeResource", []string{"name", "host"}, &clusters); err != nil {
		return nil, err
	}
	if len(clusters) != len(o.Zones) {
		return nil, fmt.Errorf("the model has %d clusters for %d zones", len(clusters), len(o.Zones))
	}
	slices.SortFunc(clusters, func(a, b mo.ClusterComputeResource) int { return strings.Compare(a.Name, b.Name) })
	if len(clusters[0].Host) == 0 {
		return nil, fmt.Errorf("cluster %s has no hosts", clusters[0].Name)
	}

	// The external network: a port group on the standard switch. The
	// simulator makes it a network of the datacenter.
	ns, err := object.NewHostSystem(vc, clusters[0].Host[0]).ConfigManager().NetworkSystem(ctx)
	if err != nil {
		return nil, fmt.Errorf("the network system of host %s: %w", clusters[0].Host[0].Value, err)
	}
	if err := ns.AddPortGroup(ctx, types.HostPortGroupSpec{Name: o.ExternalNetwork, VswitchName: "vSwitch0"}); err != nil {
		return nil, fmt.Errorf("adding port group %q: %w", o.ExternalNetwork, err)
	}
	var networks []mo.Network
	if err := retrieveAll(ctx, vc, dc.NetworkFolder, "Network", []string{"name"}, &networks); err != nil {
		return nil, err
	}
	netRefs := map[string]types.ManagedObjectReference{}
	for _, n := range networks {
		netRefs[n.Name] = n.Self
	}
	for _, name := range []string{o.InternalNetwork, o.ExternalNetwork} {
		if _, ok := netRefs[name]; !ok {
			return nil, fmt.Errorf("datacenter %s has no network %q", dc.Name, name)
		}
	}

	// The IP pools node addresses come from.
	pools := []struct {
		name, network      string
		v4Subnet, v4Gw, v4 string
		v6Subnet, v6Gw, v6 string
	}{
		{InternalPool, o.InternalNetwork, "10.64.0.0", "10.64.0.1", "10.64.0.2#250", "fd00:64::", "fd00:64::1", "fd00:64::2#250"},
		// TEST-NET-3 and the IPv6 documentation range: addresses no
		// real network routes, as the reference cloud's ExternalIPs.
		{ExternalPool, o.ExternalNetwork, "203.0.113.0", "203.0.113.1", "203.0.113.10#200", "2001:db8:64::", "2001:db8:64::1", "2001:db8:64::10#200"},
	}
	enabled := true
	ipm := *vc.ServiceContent.IpPoolManager
	for _, p := range pools {
		pool := types.IpPool{
			Name: p.name,
			Ipv4Config: &types.IpPoolIpPoolConfigInfo{
				SubnetAddress: p.v4Subnet, Netmask: "255.255.255.0", Gateway: p.v4Gw, Range: p.v4, IpPoolEnabled: &enabled,
			},
			Ipv6Config: &types.IpPoolIpPoolConfigInfo{
				SubnetAddress: p.v6Subnet, Netmask: "ffff:ffff:ffff:ffff::", Gateway: p.v6Gw, Range: p.v6, IpPoolEnabled: &enabled,
			},
			NetworkAssociation: []types.IpPoolAssociation{{Network: ptr(netRefs[p.network]), NetworkName: p.network}},
		}
		res, err := methods.CreateIpPool(ctx, vc, &types.CreateIpPool{This: ipm, Dc: dc.Self, Pool: pool})
		if err != nil {
			return nil, fmt.Errorf("creating IP pool %s: %w", p.name, err)
		}
		// The simulator keeps the pool as it was sent, without the ID it
		// gave it, so QueryIpPools would answer ID 0: give it its ID.
		pool.Id = res.Returnval
		if _, err := methods.UpdateIpPool(ctx, vc, &types.UpdateIpPool{This: ipm, Dc: dc.Self, Pool: pool}); err != nil {
			return nil, fmt.Errorf("updating IP pool %s: %w", p.name, err)
		}
	}

	// Region and zones are tags, as the CCM's [Labels] section expects.
	rc := rest.NewClient(vc)
	if err := rc.Login(ctx, url.UserPassword("setup", "setup")); err != nil {
		return nil, fmt.Errorf("logging in to the tagging API: %w", err)
	}
	defer func() { _ = rc.Logout(context.WithoutCancel(ctx)) }()
	tm := tags.NewManager(rc)
	regionCat, err := tm.CreateCategory(ctx, &tags.Category{Name: o.RegionCategory, Cardinality: "SINGLE", AssociableTypes: []string{"Datacenter"}})
	if err != nil {
		return nil, fmt.Errorf("creating tag category %s: %w", o.RegionCategory, err)
	}
	zoneCat, err := tm.CreateCategory(ctx, &tags.Category{Name: o.ZoneCategory, Cardinality: "SINGLE", AssociableTypes: []string{"ClusterComputeResource"}})
	if err != nil {
		return nil, fmt.Errorf("creating tag category %s: %w", o.ZoneCategory, err)
	}
	attach := func(category, name string, ref types.ManagedObjectReference) error {
		id, err := tm.CreateTag(ctx, &tags.Tag{Name: name, CategoryID: category})
		if err != nil {
			return fmt.Errorf("creating tag %s: %w", name, err)
		}
		if err := tm.AttachTag(ctx, id, ref); err != nil {
			return fmt.Errorf("attaching tag %s to %s: %w", name, ref.Value, err)
		}
		return nil
	}
	if err := attach(regionCat, o.Region, dc.Self); err != nil {
		return nil, err
	}
	inv := &inventory{datacenter: dc.Name}
	for i, cl := range clusters {
		if err := attach(zoneCat, o.Zones[i], cl.Self); err != nil {
			return nil, err
		}
		inv.clusters = append(inv.clusters, clusterZone{name: cl.Name, zone: o.Zones[i]})
	}
	return inv, nil
}

func ptr[T any](v T) *T { return &v }

// retrieveAll reads props of every object of kind under container.
func retrieveAll(ctx context.Context, c *vim25.Client, container types.ManagedObjectReference, kind string, props []string, dst any) error {
	v, err := view.NewManager(c).CreateContainerView(ctx, container, []string{kind}, true)
	if err != nil {
		return fmt.Errorf("a view of %s objects: %w", kind, err)
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	if err := v.Retrieve(ctx, []string{kind}, props, dst); err != nil {
		return fmt.Errorf("reading %s objects: %w", kind, err)
	}
	return nil
}

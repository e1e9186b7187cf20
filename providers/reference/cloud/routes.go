package cloud

import (
	"context"
	"fmt"
	"math/big"
	"net/netip"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// routes implements cloudprovider.Routes. The route controller (enabled
// with --configure-cloud-routes and --allocate-node-cidrs) makes one route
// per node pod CIDR and deletes routes whose node or CIDR is gone.
type routes struct {
	client  *cloudapi.Client
	defects Defects

	// made holds the names of the routes this process created, for
	// DefectPruneUnmadeRoutes.
	mu   sync.Mutex
	made map[string]bool
}

var _ cloudprovider.Routes = (*routes)(nil)

// ListRoutes returns every route of the cloud. The simulated cloud holds
// one cluster, so clusterName does not filter.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	list, err := r.client.ListRoutes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	out := make([]*cloudprovider.Route, 0, len(list))
	for _, rt := range list {
		if r.defects.Has(DefectPruneUnmadeRoutes) && !r.madeHere(rt.Name) {
			if err := r.client.DeleteRoute(ctx, rt.Name); err != nil && !cloudapi.IsNotFound(err) {
				return nil, fmt.Errorf("pruning route %s: %w", rt.Name, err)
			}
			continue
		}
		out = append(out, &cloudprovider.Route{
			Name:            rt.Name,
			TargetNode:      types.NodeName(rt.NodeName),
			DestinationCIDR: rt.DestinationCIDR,
		})
	}
	return out, nil
}

// CreateRoute routes route.DestinationCIDR to route.TargetNode. The cloud
// names the route; nameHint (the node UID) is not used, since one node can
// have a route per IP family.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	cidr := route.DestinationCIDR
	if r.defects.Has(DefectCreateRouteFails) {
		return fmt.Errorf("creating route %s to node %s: route quota exceeded", cidr, route.TargetNode)
	}
	if r.defects.Has(DefectWrongRouteCIDR) {
		shifted, err := farBlock(cidr)
		if err != nil {
			return err
		}
		cidr = shifted
		// Quietly wrong: a second try finds its own route and reports
		// success, so the CCM believes the route is in place.
		if existing, err := r.client.ListRoutes(ctx); err == nil {
			for _, rt := range existing {
				if rt.DestinationCIDR == cidr && rt.NodeName == string(route.TargetNode) {
					return nil
				}
			}
		}
	}
	created, err := r.client.CreateRoute(ctx, cloudapi.CreateRouteRequest{NodeName: string(route.TargetNode), DestinationCIDR: cidr})
	if err != nil {
		return fmt.Errorf("creating route %s to node %s: %w", cidr, route.TargetNode, err)
	}
	r.mu.Lock()
	if r.made == nil {
		r.made = map[string]bool{}
	}
	r.made[created.Name] = true
	r.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Created route", "route", created.Name, "node", route.TargetNode, "destinationCIDR", created.DestinationCIDR)
	return nil
}

// madeHere reports whether this process created the route.
func (r *routes) madeHere(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.made[name]
}

// DeleteRoute deletes a route by name; one that is already gone is not an
// error.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	if r.defects.Has(DefectKeepRoutes) {
		return nil
	}
	err := r.client.DeleteRoute(ctx, route.Name)
	if err != nil && !cloudapi.IsNotFound(err) {
		return fmt.Errorf("deleting route %s (%s to node %s): %w", route.Name, route.DestinationCIDR, route.TargetNode, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted route", "route", route.Name, "node", route.TargetNode, "destinationCIDR", route.DestinationCIDR)
	return nil
}

// farBlock returns the CIDR block of the same size wrongBlockOffset blocks
// after cidr: far enough that no other node of a test cluster has it.
func farBlock(cidr string) (string, error) {
	for range wrongBlockOffset - 1 {
		next, err := nextBlock(cidr)
		if err != nil {
			return "", err
		}
		cidr = next
	}
	return nextBlock(cidr)
}

// wrongBlockOffset is how far the wrong-route-cidr defect shifts a route.
const wrongBlockOffset = 128

// nextBlock returns the CIDR block of the same size right after cidr:
// 10.244.1.0/24 gives 10.244.2.0/24. It wraps around at the end of the
// address space.
func nextBlock(cidr string) (string, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", fmt.Errorf("route CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	bits := p.Addr().BitLen()
	raw := p.Addr().AsSlice()
	n := new(big.Int).SetBytes(raw)
	n.Add(n, new(big.Int).Lsh(big.NewInt(1), uint(bits-p.Bits())))
	n.Mod(n, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
	out := n.FillBytes(make([]byte, len(raw)))
	addr, _ := netip.AddrFromSlice(out)
	return netip.PrefixFrom(addr, p.Bits()).String(), nil
}

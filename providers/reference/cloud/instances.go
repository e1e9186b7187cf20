package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// instances implements cloudprovider.InstancesV2 and cloudprovider.Zones.
type instances struct {
	client  *cloudapi.Client
	defects Defects

	// firstAddresses holds, per node, the addresses first reported; only
	// the stale-addresses defect uses it.
	mu             sync.Mutex
	firstAddresses map[string][]v1.NodeAddress
	// cached holds the instances listed when the CCM started; only the
	// instances-cached-at-start defect uses it.
	cached []cloudapi.Instance
}

var (
	_ cloudprovider.InstancesV2 = (*instances)(nil)
	_ cloudprovider.Zones       = (*instances)(nil)
)

func newInstances(client *cloudapi.Client, defects Defects) *instances {
	return &instances{client: client, defects: defects, firstAddresses: map[string][]v1.NodeAddress{}}
}

// lookup finds a node's instance: by providerID when the node has one
// (the normal case once the node is initialized), else by node name.
// It wraps cloudprovider.InstanceNotFound when the cloud has no such
// instance, and returns any other cloud error as is, so that the
// controllers keep the node and retry rather than deleting it.
func (i *instances) lookup(ctx context.Context, node *v1.Node) (*cloudapi.Instance, error) {
	if node.Spec.ProviderID != "" {
		return i.lookupByProviderID(ctx, node.Spec.ProviderID)
	}
	return i.lookupByName(ctx, types.NodeName(node.Name))
}

func (i *instances) lookupByProviderID(ctx context.Context, providerID string) (*cloudapi.Instance, error) {
	_, id, err := cloudapi.ParseProviderID(providerID)
	if err != nil {
		return nil, err
	}
	in, err := i.client.GetInstance(ctx, id)
	if cloudapi.IsNotFound(err) {
		return nil, fmt.Errorf("instance %s (providerID %s): %w", id, providerID, cloudprovider.InstanceNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("getting instance %s: %w", id, err)
	}
	return in, nil
}

func (i *instances) lookupByName(ctx context.Context, name types.NodeName) (*cloudapi.Instance, error) {
	if i.defects.Has(DefectInstancesCachedAtStart) {
		return i.cachedByName(ctx, name)
	}
	in, err := i.client.InstanceByName(ctx, string(name))
	if cloudapi.IsNotFound(err) {
		return nil, fmt.Errorf("instance named %s: %w", name, cloudprovider.InstanceNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("getting instance named %s: %w", name, err)
	}
	return in, nil
}

// fillCache lists the instances once, when the CCM starts (the
// instances-cached-at-start defect); a failure leaves the cache to the
// first lookup.
func (i *instances) fillCache(ctx context.Context) {
	list, err := i.client.ListInstances(ctx)
	if err != nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cached = append([]cloudapi.Instance{}, list...)
}

// cachedByName finds an instance in the list of the CCM's start.
func (i *instances) cachedByName(ctx context.Context, name types.NodeName) (*cloudapi.Instance, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cached == nil {
		list, err := i.client.ListInstances(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instances: %w", err)
		}
		i.cached = append([]cloudapi.Instance{}, list...)
	}
	for _, in := range i.cached {
		if in.Name == string(name) {
			return &in, nil
		}
	}
	return nil, fmt.Errorf("instance named %s: %w", name, cloudprovider.InstanceNotFound)
}

// InstanceExists reports whether the node's instance exists. A node whose
// instance is gone is deleted by the cloud node lifecycle controller.
func (i *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	if i.defects.Has(DefectInstanceExistsAlways) {
		return true, nil
	}
	in, err := i.lookup(ctx, node)
	switch {
	case isInstanceNotFound(err):
		klog.FromContext(ctx).V(2).Info("Instance of node not found", "node", klog.KObj(node))
		return false, nil
	case err != nil && i.defects.Has(DefectErrorMeansGone):
		return false, nil
	case err != nil:
		return false, err
	case i.defects.Has(DefectStoppedInstanceGone) && in.State == cloudapi.StateStopped:
		return false, nil
	case i.defects.Has(DefectZoneCGone) && in.Zone == "zone-c":
		return false, nil
	}
	return true, nil
}

// InstanceShutdown reports whether the node's instance is stopped. The
// lifecycle controller then taints the node as shut down.
func (i *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	if i.defects.Has(DefectNoShutdown) {
		return false, nil
	}
	in, err := i.lookup(ctx, node)
	if err != nil {
		return false, err
	}
	return in.State == cloudapi.StateStopped, nil
}

// InstanceMetadata returns what the cloud node controller puts on the
// node: providerID, instance type, addresses and topology.
func (i *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	in, err := i.lookup(ctx, node)
	if err != nil {
		return nil, err
	}
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    in.ProviderID,
		InstanceType:  in.InstanceType,
		NodeAddresses: i.nodeAddresses(node.Name, in.Addresses),
		Zone:          i.zoneName(in.Zone),
		Region:        in.Region,
	}
	if i.defects.Has(DefectNoProviderID) {
		md.ProviderID = ""
	}
	if i.defects.Has(DefectNoInstanceType) {
		md.InstanceType = ""
	}
	if i.defects.Has(DefectWindowsNoInstanceType) && node.Labels[v1.LabelOSStable] == "windows" {
		md.InstanceType = ""
	}
	if i.defects.Has(DefectTrustNodeIP) {
		md.NodeAddresses = withProvidedNodeIPs(node, md.NodeAddresses)
	}
	klog.FromContext(ctx).V(4).Info("Instance metadata", "node", klog.KObj(node), "providerID", md.ProviderID,
		"zone", md.Zone, "region", md.Region, "instanceType", md.InstanceType, "addresses", md.NodeAddresses)
	return md, nil
}

// nodeAddresses turns the cloud's addresses into node addresses, in the
// cloud's order (the kubelet and the node controller pick the first
// InternalIP of each family).
func (i *instances) nodeAddresses(nodeName string, addrs []cloudapi.Address) []v1.NodeAddress {
	out := make([]v1.NodeAddress, 0, len(addrs))
	for _, a := range addrs {
		if i.defects.Has(DefectNoIPv6) {
			if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is6() {
				continue
			}
		}
		if i.defects.Has(DefectInternalIPsOnly) && a.Type != string(v1.NodeInternalIP) {
			continue
		}
		out = append(out, v1.NodeAddress{Type: v1.NodeAddressType(a.Type), Address: a.Address})
	}
	if i.defects.Has(DefectStaleAddresses) {
		i.mu.Lock()
		defer i.mu.Unlock()
		if first, ok := i.firstAddresses[nodeName]; ok {
			return slices.Clone(first)
		}
		i.firstAddresses[nodeName] = slices.Clone(out)
	}
	return out
}

// withProvidedNodeIPs adds each node IP the kubelet announces that addrs
// lack, as an InternalIP (the trust-node-ip defect).
func withProvidedNodeIPs(node *v1.Node, addrs []v1.NodeAddress) []v1.NodeAddress {
	for ip := range strings.SplitSeq(node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr], ",") {
		ip = strings.TrimSpace(ip)
		if ip == "" || slices.ContainsFunc(addrs, func(a v1.NodeAddress) bool { return a.Address == ip }) {
			continue
		}
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	return addrs
}

func (i *instances) zoneName(zone string) string {
	if i.defects.Has(DefectWrongZone) {
		return zone + "-wrong"
	}
	return zone
}

// GetZone would return the zone of the machine the CCM runs on; a CCM
// is not tied to one, so it is not implemented.
func (i *instances) GetZone(context.Context) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{}, cloudprovider.NotImplemented
}

// GetZoneByProviderID returns the zone and region of an instance.
func (i *instances) GetZoneByProviderID(ctx context.Context, providerID string) (cloudprovider.Zone, error) {
	in, err := i.lookupByProviderID(ctx, providerID)
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	return cloudprovider.Zone{FailureDomain: i.zoneName(in.Zone), Region: in.Region}, nil
}

// GetZoneByNodeName returns the zone and region of a node's instance.
func (i *instances) GetZoneByNodeName(ctx context.Context, nodeName types.NodeName) (cloudprovider.Zone, error) {
	in, err := i.lookupByName(ctx, nodeName)
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	return cloudprovider.Zone{FailureDomain: i.zoneName(in.Zone), Region: in.Region}, nil
}

func isInstanceNotFound(err error) bool {
	return errors.Is(err, cloudprovider.InstanceNotFound)
}

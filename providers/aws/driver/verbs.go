package driver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

// liveStates are the states of an instance that exists for the protocol:
// a terminated one is gone.
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

// instances lists the cluster's live instances matching the filters.
func (d *driver) instances(ctx context.Context, filters ...ec2types.Filter) ([]ec2types.Instance, error) {
	return d.anyInstances(ctx, append(filters, filter("tag-key", "kubernetes.io/cluster/"+d.cfg.clusterID))...)
}

// anyInstances lists the live instances matching the filters, the
// cluster's or not.
func (d *driver) anyInstances(ctx context.Context, filters ...ec2types.Filter) ([]ec2types.Instance, error) {
	filters = append(filters, filter("instance-state-name", liveStates...))
	var out []ec2types.Instance
	p := ec2.NewDescribeInstancesPaginator(d.ec2, &ec2.DescribeInstancesInput{Filters: filters})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

func (d *driver) byName(ctx context.Context, name string) (*ec2types.Instance, error) {
	list, err := d.instances(ctx, filter("private-dns-name", name))
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, notFound("no instance with private DNS name %q", name)
	}
	return &list[0], nil
}

func (d *driver) listInstances(ctx context.Context, _ []byte) (any, error) {
	list, err := d.instances(ctx)
	if err != nil {
		return nil, err
	}
	out := []driverproto.Instance{}
	for i := range list {
		out = append(out, toInstance(&list[i], d.cfg.region()))
	}
	return map[string]any{"instances": out}, nil
}

func (d *driver) getInstance(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	in, err := d.byName(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"instance": toInstance(in, d.cfg.region())}, nil
}

func (d *driver) createInstance(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.CreateInstanceRequest](request)
	if err != nil {
		return nil, err
	}
	if err := d.control.Do(ctx, "POST", awsctl.PathInstances, awsctl.CreateInstance(req), nil); err != nil {
		return nil, err
	}
	return d.getInstance(ctx, request)
}

func (d *driver) act(ctx context.Context, request []byte, action string) (any, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	if err := d.control.Do(ctx, "POST", awsctl.PathInstance, awsctl.InstanceAction{Name: req.Name, Action: action}, nil); err != nil {
		return nil, controlErr(err)
	}
	return struct{}{}, nil
}

func (d *driver) deleteInstance(ctx context.Context, r []byte) (any, error) {
	return d.act(ctx, r, "terminate")
}
func (d *driver) stopInstance(ctx context.Context, r []byte) (any, error) {
	return d.act(ctx, r, "stop")
}
func (d *driver) startInstance(ctx context.Context, r []byte) (any, error) {
	return d.act(ctx, r, "start")
}

func (d *driver) setAddresses(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.SetAddressesRequest](request)
	if err != nil {
		return nil, err
	}
	action := awsctl.InstanceAction{Name: req.Name, Action: "set-addresses"}
	for _, a := range req.Addresses {
		action.Addresses = append(action.Addresses, awsctl.Address(a))
	}
	if err := d.control.Do(ctx, "POST", awsctl.PathInstance, action, nil); err != nil {
		return nil, controlErr(err)
	}
	return d.getInstance(ctx, request)
}

// ---- load balancers

type lbRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

func (d *driver) getLoadBalancer(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[lbRequest](request)
	if err != nil {
		return nil, err
	}
	if req.UID == "" {
		return nil, fmt.Errorf("loadbalancer get needs the Service's uid: the CCM names the load balancer after it")
	}
	name := loadBalancerName(req.UID)
	out, err := d.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}})
	var missing *elbtypes.AccessPointNotFoundException
	if errors.As(err, &missing) {
		// No classic load balancer: a Network Load Balancer, if the
		// Service asked for one.
		nlb, err := d.networkLoadBalancer(ctx, name)
		if err != nil {
			return nil, err
		}
		if nlb == nil {
			return map[string]any{"loadBalancer": driverproto.LoadBalancer{Exists: false, Name: name, Ingress: []driverproto.Ingress{}, Ports: []driverproto.Port{}, Backends: []string{}, SourceRanges: []string{}}}, nil
		}
		lb, err := d.fromNetworkLoadBalancer(ctx, nlb)
		if err != nil {
			return nil, err
		}
		return map[string]any{"loadBalancer": lb}, nil
	}
	if err != nil {
		return nil, err
	}
	if len(out.LoadBalancerDescriptions) != 1 {
		return nil, fmt.Errorf("DescribeLoadBalancers %s answered %d load balancers", name, len(out.LoadBalancerDescriptions))
	}
	lb, err := d.toLoadBalancer(ctx, &out.LoadBalancerDescriptions[0])
	if err != nil {
		return nil, err
	}
	return map[string]any{"loadBalancer": lb}, nil
}

func (d *driver) listLoadBalancers(ctx context.Context, _ []byte) (any, error) {
	out := []driverproto.LoadBalancer{}
	p := elb.NewDescribeLoadBalancersPaginator(d.elb, &elb.DescribeLoadBalancersInput{})
	var all []elbtypes.LoadBalancerDescription
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		all = append(all, page.LoadBalancerDescriptions...)
	}
	for i := range all {
		if aws.ToString(all[i].VPCId) != d.cfg.vpc && d.cfg.vpc != "" {
			continue
		}
		lb, err := d.toLoadBalancer(ctx, &all[i])
		if err != nil {
			return nil, err
		}
		out = append(out, lb)
	}
	nlbs, err := d.networkLoadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	for i := range nlbs {
		lb, err := d.fromNetworkLoadBalancer(ctx, &nlbs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, lb)
	}
	return map[string]any{"loadBalancers": out}, nil
}

// toLoadBalancer reads what the protocol reports of a classic load
// balancer: its DNS name as the ingress, its listeners, its registered
// instances by their nodes' names, the CIDRs its security groups let in,
// the node port an HTTP health check asks (a Local Service's), and the
// Service that the CCM names in its security group's description.
func (d *driver) toLoadBalancer(ctx context.Context, x *elbtypes.LoadBalancerDescription) (driverproto.LoadBalancer, error) {
	lb := driverproto.LoadBalancer{
		Exists: true, Name: aws.ToString(x.LoadBalancerName),
		Ingress: []driverproto.Ingress{{Hostname: aws.ToString(x.DNSName)}},
		Ports:   []driverproto.Port{}, Backends: []string{}, SourceRanges: []string{},
	}
	for _, l := range x.ListenerDescriptions {
		if l.Listener == nil {
			continue
		}
		lb.Ports = append(lb.Ports, driverproto.Port{Protocol: strings.ToUpper(aws.ToString(l.Listener.Protocol)), Port: l.Listener.LoadBalancerPort, NodePort: aws.ToInt32(l.Listener.InstancePort)})
	}
	if hc := x.HealthCheck; hc != nil {
		lb.HealthCheckNodePort = healthCheckNodePort(aws.ToString(hc.Target))
	}
	var ids []string
	for _, in := range x.Instances {
		ids = append(ids, aws.ToString(in.InstanceId))
	}
	if len(ids) > 0 {
		out, err := d.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			return lb, fmt.Errorf("reading the instances of load balancer %s: %w", lb.Name, err)
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				lb.Backends = append(lb.Backends, aws.ToString(in.PrivateDnsName))
			}
		}
		slices.Sort(lb.Backends)
	}
	if len(x.SecurityGroups) > 0 {
		out, err := d.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: x.SecurityGroups})
		if err != nil {
			return lb, fmt.Errorf("reading the security groups of load balancer %s: %w", lb.Name, err)
		}
		ranges, service := sourceRanges(out.SecurityGroups, lb.Ports)
		lb.SourceRanges = ranges
		if ns, name, ok := strings.Cut(service, "/"); ok {
			lb.ServiceNamespace, lb.ServiceName = ns, name
		}
	}
	return lb, nil
}

// healthCheckNodePort is the port of an HTTP or HTTPS health check target
// ("HTTP:31234/healthz": the Service's health check node port, which the
// CCM checks for externalTrafficPolicy Local); a TCP or SSL target checks
// the traffic port, not a health check node port, and gives 0.
func healthCheckNodePort(target string) int32 {
	protocol, rest, ok := strings.Cut(target, ":")
	if !ok || (protocol != "HTTP" && protocol != "HTTPS") {
		return 0
	}
	port, _, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	return int32(n)
}

// sourceRanges are the CIDRs the groups let in on a listener's port, in
// the order first seen; and the Service a group's description names (the
// CCM describes its group "Security group for Kubernetes ELB <name>
// (<namespace>/<service>)").
func sourceRanges(groups []ec2types.SecurityGroup, ports []driverproto.Port) ([]string, string) {
	out := []string{}
	service := ""
	for _, g := range groups {
		desc := aws.ToString(g.Description)
		if i := strings.LastIndex(desc, "("); i >= 0 && strings.HasSuffix(desc, ")") && strings.Contains(desc, "Kubernetes ELB") {
			service = desc[i+1 : len(desc)-1]
		}
		for _, p := range g.IpPermissions {
			if !slices.ContainsFunc(ports, func(lp driverproto.Port) bool {
				return aws.ToString(p.IpProtocol) == "-1" || aws.ToInt32(p.FromPort) <= lp.Port && lp.Port <= aws.ToInt32(p.ToPort) && aws.ToString(p.IpProtocol) != "icmp"
			}) {
				continue
			}
			for _, r := range p.IpRanges {
				if c := aws.ToString(r.CidrIp); !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
			for _, r := range p.Ipv6Ranges {
				if c := aws.ToString(r.CidrIpv6); !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	return out, service
}

// loadBalancerName is the CCM's name of a Service's load balancer:
// k8s.io/cloud-provider's DefaultLoadBalancerName, "a" and the Service's
// UID without dashes, cut to 32 characters.
func loadBalancerName(uid string) string {
	name := "a" + strings.ReplaceAll(uid, "-", "")
	if len(name) > 32 {
		name = name[:32]
	}
	return name
}

// ---- routes

func (d *driver) routeTable(ctx context.Context) (*ec2types.RouteTable, error) {
	filters := []ec2types.Filter{filter("tag-key", "kubernetes.io/cluster/"+d.cfg.clusterID)}
	if d.cfg.vpc != "" {
		filters = append(filters, filter("vpc-id", d.cfg.vpc))
	}
	out, err := d.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: filters})
	if err != nil {
		return nil, err
	}
	if len(out.RouteTables) != 1 {
		return nil, fmt.Errorf("the cluster %s has %d route tables, want one", d.cfg.clusterID, len(out.RouteTables))
	}
	return &out.RouteTables[0], nil
}

func (d *driver) listRoutes(ctx context.Context, _ []byte) (any, error) {
	rt, err := d.routeTable(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	list, err := d.anyInstances(ctx)
	if err != nil {
		return nil, err
	}
	for _, in := range list {
		names[aws.ToString(in.InstanceId)] = aws.ToString(in.PrivateDnsName)
	}
	out := []driverproto.Route{}
	for _, r := range rt.Routes {
		if r.InstanceId == nil {
			continue // the VPC's own routes: local, the internet gateway
		}
		dest := aws.ToString(r.DestinationCidrBlock)
		if dest == "" {
			dest = aws.ToString(r.DestinationIpv6CidrBlock)
		}
		out = append(out, driverproto.Route{Name: dest, NodeName: names[aws.ToString(r.InstanceId)], DestinationCIDR: dest})
	}
	return map[string]any{"routes": out}, nil
}

type routeCreateRequest struct {
	NodeName        string `json:"nodeName"`
	DestinationCIDR string `json:"destinationCIDR"`
}

func (d *driver) createRoute(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[routeCreateRequest](request)
	if err != nil {
		return nil, err
	}
	pfx, err := netip.ParsePrefix(req.DestinationCIDR)
	if err != nil {
		return nil, fmt.Errorf("destinationCIDR %q: %w", req.DestinationCIDR, err)
	}
	in, err := d.byName(ctx, req.NodeName)
	if errors.Is(err, driverproto.ErrNotFound) {
		// A route to a node that has no instance: in AWS a route must
		// target something, so it goes to an instance of the VPC that is
		// no node (the emulator's bastion), as an operator's route to a
		// machine outside the cluster would.
		in, err = d.outsider(ctx)
	}
	if err != nil {
		return nil, err
	}
	rt, err := d.routeTable(ctx)
	if err != nil {
		return nil, err
	}
	input := &ec2.CreateRouteInput{RouteTableId: rt.RouteTableId, InstanceId: in.InstanceId}
	if pfx.Addr().Is6() {
		input.DestinationIpv6CidrBlock = aws.String(pfx.String())
	} else {
		input.DestinationCidrBlock = aws.String(pfx.String())
	}
	if _, err := d.ec2.CreateRoute(ctx, input); err != nil {
		return nil, err
	}
	return map[string]any{"route": driverproto.Route{Name: pfx.String(), NodeName: req.NodeName, DestinationCIDR: pfx.String()}}, nil
}

func (d *driver) deleteRoute(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.NameRequest](request)
	if err != nil {
		return nil, err
	}
	pfx, err := netip.ParsePrefix(req.Name)
	if err != nil {
		return nil, notFound("no route named %q (a route's name is its destination CIDR)", req.Name)
	}
	rt, err := d.routeTable(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(rt.Routes, func(r ec2types.Route) bool {
		return r.InstanceId != nil && (aws.ToString(r.DestinationCidrBlock) == pfx.String() || aws.ToString(r.DestinationIpv6CidrBlock) == pfx.String())
	}) {
		return nil, notFound("no route to %s in %s", pfx, aws.ToString(rt.RouteTableId))
	}
	input := &ec2.DeleteRouteInput{RouteTableId: rt.RouteTableId}
	if pfx.Addr().Is6() {
		input.DestinationIpv6CidrBlock = aws.String(pfx.String())
	} else {
		input.DestinationCidrBlock = aws.String(pfx.String())
	}
	if _, err := d.ec2.DeleteRoute(ctx, input); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// outsider is a running instance of the VPC without the cluster's tag.
func (d *driver) outsider(ctx context.Context) (*ec2types.Instance, error) {
	list, err := d.anyInstances(ctx, filter("instance-state-name", "running"))
	if err != nil {
		return nil, err
	}
	for i := range list {
		if !slices.ContainsFunc(list[i].Tags, func(t ec2types.Tag) bool { return aws.ToString(t.Key) == "kubernetes.io/cluster/"+d.cfg.clusterID }) {
			return &list[i], nil
		}
	}
	return nil, fmt.Errorf("no instance outside the cluster to route to, for a route to a node without an instance")
}

// ---- the emulator's control channel

func (d *driver) injectFault(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.FaultRequest](request)
	if err != nil {
		return nil, err
	}
	return struct{}{}, d.control.Do(ctx, "POST", awsctl.PathFaults, awsctl.Fault(req), nil)
}

func (d *driver) clearFaults(ctx context.Context, _ []byte) (any, error) {
	return struct{}{}, d.control.Do(ctx, "DELETE", awsctl.PathFaults, nil, nil)
}

func (d *driver) listCalls(ctx context.Context, request []byte) (any, error) {
	req, err := driverproto.Decode[driverproto.CallsRequest](request)
	if err != nil {
		return nil, err
	}
	var got awsctl.Calls
	if err := d.control.Do(ctx, "POST", awsctl.PathCalls, awsctl.CallsQuery(req), &got); err != nil {
		return nil, err
	}
	out := []driverproto.Call{}
	for _, c := range got.Calls {
		out = append(out, driverproto.Call{Seq: c.Seq, Time: c.Time, Operation: c.Operation, Caller: c.Caller, Resource: c.Resource, Error: c.Error})
	}
	return map[string]any{"calls": out, "last": got.Last}, nil
}

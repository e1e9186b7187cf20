package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

// Network Load Balancers (Elastic Load Balancing v2), which the CCM makes
// for a Service annotated service.beta.kubernetes.io/aws-load-balancer-type:
// nlb, under the same name as a classic one. They are read as AWS has
// them: listeners forwarding to target groups on the node ports, targets
// registered in the groups, and, since such a load balancer keeps the
// client's address and has no security group of its own unless the CCM
// runs with NLBSecurityGroupMode Managed, the nodes' security group rules
// the CCM describes as "kubernetes.io/rule/nlb/client=<name>".

// nlbClientRule is the description of the rules the CCM writes on the
// nodes' security groups for a Network Load Balancer's clients
// (k8s.io/cloud-provider-aws v1.37.1, aws_loadbalancer.go,
// updateInstanceSecurityGroupsForNLB).
const nlbClientRule = "kubernetes.io/rule/nlb/client="

// networkLoadBalancer is the Network Load Balancer named name, or nil
// when there is none.
func (d *driver) networkLoadBalancer(ctx context.Context, name string) (*elbv2types.LoadBalancer, error) {
	out, err := d.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	var missing *elbv2types.LoadBalancerNotFoundException
	if errors.As(err, &missing) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(out.LoadBalancers) != 1 {
		return nil, fmt.Errorf("DescribeLoadBalancers (v2) %s answered %d load balancers", name, len(out.LoadBalancers))
	}
	return &out.LoadBalancers[0], nil
}

// networkLoadBalancers are every Network Load Balancer of the VPC.
func (d *driver) networkLoadBalancers(ctx context.Context) ([]elbv2types.LoadBalancer, error) {
	var out []elbv2types.LoadBalancer
	p := elbv2.NewDescribeLoadBalancersPaginator(d.elbv2, &elbv2.DescribeLoadBalancersInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, lb := range page.LoadBalancers {
			if lb.Type == elbv2types.LoadBalancerTypeEnumNetwork && (d.cfg.vpc == "" || aws.ToString(lb.VpcId) == d.cfg.vpc) {
				out = append(out, lb)
			}
		}
	}
	return out, nil
}

// fromNetworkLoadBalancer reads what the protocol reports of a Network
// Load Balancer: its DNS name as the ingress; each listener's port, with
// its target group's port as the node port; the targets of its groups by
// their nodes' names; the health check node port of an HTTP check on a
// port of its own (a Local Service's); the client ranges of the nodes'
// rules for it (and of its own groups, if it has any); the Service its
// kubernetes.io/service-name tag names.
func (d *driver) fromNetworkLoadBalancer(ctx context.Context, x *elbv2types.LoadBalancer) (driverproto.LoadBalancer, error) {
	name := aws.ToString(x.LoadBalancerName)
	lb := driverproto.LoadBalancer{
		Exists: true, Name: name,
		Ingress: []driverproto.Ingress{{Hostname: aws.ToString(x.DNSName)}},
		Ports:   []driverproto.Port{}, Backends: []string{}, SourceRanges: []string{},
	}
	groups, err := d.elbv2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: x.LoadBalancerArn})
	if err != nil {
		return lb, fmt.Errorf("reading the target groups of load balancer %s: %w", name, err)
	}
	byARN := map[string]elbv2types.TargetGroup{}
	var ids []string
	for _, g := range groups.TargetGroups {
		byARN[aws.ToString(g.TargetGroupArn)] = g
		if g.HealthCheckProtocol == elbv2types.ProtocolEnumHttp || g.HealthCheckProtocol == elbv2types.ProtocolEnumHttps {
			if n, err := strconv.Atoi(aws.ToString(g.HealthCheckPort)); err == nil {
				lb.HealthCheckNodePort = int32(n)
			}
		}
		health, err := d.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: g.TargetGroupArn})
		if err != nil {
			return lb, fmt.Errorf("reading the targets of load balancer %s: %w", name, err)
		}
		for _, h := range health.TargetHealthDescriptions {
			if h.Target != nil && !slices.Contains(ids, aws.ToString(h.Target.Id)) {
				ids = append(ids, aws.ToString(h.Target.Id))
			}
		}
	}
	listeners, err := d.elbv2.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: x.LoadBalancerArn})
	if err != nil {
		return lb, fmt.Errorf("reading the listeners of load balancer %s: %w", name, err)
	}
	for _, l := range listeners.Listeners {
		p := driverproto.Port{Protocol: string(l.Protocol), Port: aws.ToInt32(l.Port)}
		for _, a := range l.DefaultActions {
			if g, ok := byARN[aws.ToString(a.TargetGroupArn)]; ok {
				p.NodePort = aws.ToInt32(g.Port)
			}
		}
		lb.Ports = append(lb.Ports, p)
	}
	slices.SortFunc(lb.Ports, func(a, b driverproto.Port) int { return int(a.Port - b.Port) })
	if len(ids) > 0 {
		out, err := d.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			return lb, fmt.Errorf("reading the instances of load balancer %s: %w", name, err)
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				lb.Backends = append(lb.Backends, aws.ToString(in.PrivateDnsName))
			}
		}
		slices.Sort(lb.Backends)
	}
	ranges, err := d.nlbClientRanges(ctx, name, x.SecurityGroups, lb.Ports)
	if err != nil {
		return lb, fmt.Errorf("reading the client ranges of load balancer %s: %w", name, err)
	}
	lb.SourceRanges = ranges
	tagged, err := d.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{aws.ToString(x.LoadBalancerArn)}})
	if err != nil {
		return lb, fmt.Errorf("reading the tags of load balancer %s: %w", name, err)
	}
	for _, td := range tagged.TagDescriptions {
		for _, t := range td.Tags {
			if aws.ToString(t.Key) == "kubernetes.io/service-name" {
				lb.ServiceNamespace, lb.ServiceName, _ = strings.Cut(aws.ToString(t.Value), "/")
			}
		}
	}
	return lb, nil
}

// nlbClientRanges are the CIDRs let in for the load balancer's clients:
// those of the rules described for it on any security group of the VPC,
// then those of its own groups on its listeners' ports.
func (d *driver) nlbClientRanges(ctx context.Context, name string, own []string, ports []driverproto.Port) ([]string, error) {
	out := []string{}
	in := &ec2.DescribeSecurityGroupsInput{}
	if d.cfg.vpc != "" {
		in.Filters = []ec2types.Filter{filter("vpc-id", d.cfg.vpc)}
	}
	p := ec2.NewDescribeSecurityGroupsPaginator(d.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range page.SecurityGroups {
			for _, perm := range g.IpPermissions {
				for _, r := range perm.IpRanges {
					if c := aws.ToString(r.CidrIp); aws.ToString(r.Description) == nlbClientRule+name && !slices.Contains(out, c) {
						out = append(out, c)
					}
				}
				for _, r := range perm.Ipv6Ranges {
					if c := aws.ToString(r.CidrIpv6); aws.ToString(r.Description) == nlbClientRule+name && !slices.Contains(out, c) {
						out = append(out, c)
					}
				}
			}
		}
	}
	if len(own) > 0 {
		groups, err := d.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: own})
		if err != nil {
			return nil, err
		}
		ranges, _ := sourceRanges(groups.SecurityGroups, ports)
		for _, c := range ranges {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

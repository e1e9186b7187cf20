package cloud

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	"github.com/aws/smithy-go"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
)

// The emulator's wire format is checked the only way that counts: the
// aws-sdk-go-v2 clients at the versions the CCM links (providers/go.mod
// pins them to k8s.io/cloud-provider-aws v1.37.1's) call every operation
// and read back what they got. A wrong element name becomes a nil field
// silently, so every test reads the fields the CCM reads.

type sdk struct {
	cloud *Cloud
	ec2   *ec2.Client
	elb   *elb.Client
}

func newSDK(t *testing.T, key string) *sdk {
	t.Helper()
	c := New(Options{})
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return sdkFor(c, srv.URL, key)
}

func sdkFor(c *Cloud, url, key string) *sdk {
	cfg := aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(key, "secret", ""),
		RetryMaxAttempts: 1,
	}
	return &sdk{
		cloud: c,
		ec2:   ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) }),
		elb:   elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = aws.String(url) }),
	}
}

func (s *sdk) instance(t *testing.T, name, zone string, families ...string) awsctl.Instance {
	t.Helper()
	in, err := s.cloud.CreateInstance(awsctl.CreateInstance{Name: name, Zone: zone, IPFamilies: families})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestEC2Instances(t *testing.T) {
	ctx := context.Background()
	s := newSDK(t, "AKIATEST")
	a := s.instance(t, "ip-10-0-0-10.ec2.internal", "us-east-1b", "IPv4", "IPv6")
	s.instance(t, "node-b", "")

	out, err := s.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("private-dns-name"), Values: []string{"ip-10-0-0-10.ec2.internal"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("want one reservation of one instance, got %+v", out.Reservations)
	}
	in := out.Reservations[0].Instances[0]
	checks := []struct{ name, got, want string }{
		{"InstanceId", aws.ToString(in.InstanceId), a.ID},
		{"PrivateDnsName", aws.ToString(in.PrivateDnsName), "ip-10-0-0-10.ec2.internal"},
		{"Placement.AvailabilityZone", aws.ToString(in.Placement.AvailabilityZone), "us-east-1b"},
		{"InstanceType", string(in.InstanceType), "m5.large"},
		{"State.Name", string(in.State.Name), "running"},
		{"PrivateIpAddress", aws.ToString(in.PrivateIpAddress), "10.0.1.10"},
		{"PublicIpAddress", aws.ToString(in.PublicIpAddress), "203.0.113.11"},
		{"PublicDnsName", aws.ToString(in.PublicDnsName), "ec2-203-0-113-11.compute-1.amazonaws.com"},
		{"VpcId", aws.ToString(in.VpcId), s.cloud.st.vpcID},
		{"SecurityGroups[0]", aws.ToString(in.SecurityGroups[0].GroupId), s.cloud.st.nodeGroup},
		{"NetworkInterfaces[0].Status", string(in.NetworkInterfaces[0].Status), "in-use"},
		{"NetworkInterfaces[0].PrivateIpAddresses[0]", aws.ToString(in.NetworkInterfaces[0].PrivateIpAddresses[0].PrivateIpAddress), "10.0.1.10"},
		{"NetworkInterfaces[0].Ipv6Addresses[0]", aws.ToString(in.NetworkInterfaces[0].Ipv6Addresses[0].Ipv6Address), "2600:1f18:c0f:e001::a"},
		{"NetworkInterfaces[0].Attachment.Status", string(in.NetworkInterfaces[0].Attachment.Status), "attached"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if in.State.Code == nil || *in.State.Code != 16 || in.LaunchTime == nil || !aws.ToBool(in.SourceDestCheck) {
		t.Errorf("State.Code %v, LaunchTime %v, SourceDestCheck %v: want 16, a time, true", in.State.Code, in.LaunchTime, in.SourceDestCheck)
	}
	if v, ok := tagValue(in.Tags, "kubernetes.io/cluster/ccm-conformance"); !ok || v != "owned" {
		t.Errorf("cluster tag %q %v, want owned", v, ok)
	}

	// By ID, then an ID that does not exist: InvalidInstanceID.NotFound,
	// which the CCM's IsAWSErrorInstanceNotFound tests for.
	byID, err := s.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{a.ID}})
	if err != nil || len(byID.Reservations) != 1 {
		t.Fatalf("by ID: %v, %d reservations", err, len(byID.Reservations))
	}
	_, err = s.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	if apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown ID: got %v, want InvalidInstanceID.NotFound", err)
	}

	// Stopped, then terminated: still listed, with the state's code.
	for _, step := range []struct {
		action, state string
		code          int32
	}{{"stop", "stopped", 80}, {"terminate", "terminated", 48}} {
		if _, err := s.cloud.Act(awsctl.InstanceAction{Name: "node-b", Action: step.action}); err != nil {
			t.Fatal(err)
		}
		out, err := s.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:Name"), Values: []string{"node-b"}}}})
		if err != nil || len(out.Reservations) != 1 {
			t.Fatalf("%s: %v, %+v", step.action, err, out)
		}
		st := out.Reservations[0].Instances[0].State
		if string(st.Name) != step.state || aws.ToInt32(st.Code) != step.code {
			t.Errorf("after %s: state %s/%d, want %s/%d", step.action, st.Name, aws.ToInt32(st.Code), step.state, step.code)
		}
	}

	// An unknown filter is an error, as in EC2.
	_, err = s.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("no-such-filter"), Values: []string{"x"}}}})
	if apiCode(err) != "InvalidParameterValue" {
		t.Errorf("unknown filter: got %v, want InvalidParameterValue", err)
	}

	if _, err := s.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(a.ID), SourceDestCheck: &ec2types.AttributeBooleanValue{Value: aws.Bool(false)}}); err != nil {
		t.Fatal(err)
	}
	if s.cloud.st.instances[a.ID].srcDstCheck {
		t.Error("ModifyInstanceAttribute SourceDestCheck=false left the check on")
	}

	topo, err := s.ec2.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{InstanceIds: []string{a.ID}})
	if err != nil || len(topo.Instances) != 0 {
		t.Errorf("DescribeInstanceTopology: %v, %+v; want no topology", err, topo)
	}

	enis, err := s.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{Filters: []ec2types.Filter{{Name: aws.String("attachment.instance-id"), Values: []string{a.ID}}}})
	if err != nil || len(enis.NetworkInterfaces) != 1 {
		t.Fatalf("DescribeNetworkInterfaces: %v, %+v", err, enis)
	}
	if e := enis.NetworkInterfaces[0]; aws.ToString(e.PrivateIpAddress) != "10.0.1.10" || aws.ToString(e.Attachment.InstanceId) != a.ID || aws.ToString(e.AvailabilityZone) != "us-east-1b" {
		t.Errorf("network interface %+v", e)
	}
}

func tagValue(tags []ec2types.Tag, key string) (string, bool) {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value), true
		}
	}
	return "", false
}

func TestEC2NetworkInventory(t *testing.T) {
	ctx := context.Background()
	s := newSDK(t, "AKIATEST")
	_, vpc, subnet, _ := s.cloud.CloudConfigGlobal()

	vpcs, err := s.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpc}})
	if err != nil || len(vpcs.Vpcs) != 1 || aws.ToString(vpcs.Vpcs[0].CidrBlock) != "10.0.0.0/16" {
		t.Fatalf("DescribeVpcs: %v, %+v", err, vpcs)
	}

	subnets, err := s.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}})
	if err != nil || len(subnets.Subnets) != 3 {
		t.Fatalf("DescribeSubnets: %v, %d subnets", err, len(subnets.Subnets))
	}
	first := subnets.Subnets[0]
	if aws.ToString(first.SubnetId) != subnet || aws.ToString(first.AvailabilityZone) != "us-east-1a" || aws.ToString(first.CidrBlock) != "10.0.0.0/24" || aws.ToString(first.AvailabilityZoneId) != "use1-az1" {
		t.Errorf("first subnet %+v", first)
	}
	if v, _ := tagValue(first.Tags, "kubernetes.io/role/elb"); v != "1" {
		t.Errorf("subnet tags %+v: want kubernetes.io/role/elb=1", first.Tags)
	}

	zones, err := s.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-1c"}})
	if err != nil || len(zones.AvailabilityZones) != 1 {
		t.Fatalf("DescribeAvailabilityZones: %v, %+v", err, zones)
	}
	if z := zones.AvailabilityZones[0]; aws.ToString(z.ZoneId) != "use1-az3" || aws.ToString(z.RegionName) != "us-east-1" || aws.ToString(z.ZoneType) != "availability-zone" {
		t.Errorf("zone %+v", z)
	}

	// Tags on a subnet, added and taken away.
	if _, err := s.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{subnet}, Tags: []ec2types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:k"), Values: []string{"v"}}}})
	if len(got.Subnets) != 1 {
		t.Errorf("tag:k=v matched %d subnets, want 1", len(got.Subnets))
	}
	if _, err := s.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{subnet}, Tags: []ec2types.Tag{{Key: aws.String("k")}}}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"k"}}}})
	if len(got.Subnets) != 0 {
		t.Errorf("after DeleteTags, tag-key k matched %d subnets", len(got.Subnets))
	}
	_, err = s.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"sg-0000000000000dead"}, Tags: []ec2types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	if apiCode(err) != "InvalidGroup.NotFound" {
		t.Errorf("CreateTags on a missing group: %v", err)
	}
}

func TestEC2Routes(t *testing.T) {
	ctx := context.Background()
	s := newSDK(t, "AKIATEST")
	a := s.instance(t, "node-a", "")
	tables, err := s.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{s.cloud.st.vpcID}},
		{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/cluster/ccm-conformance"}},
	}})
	if err != nil || len(tables.RouteTables) != 1 {
		t.Fatalf("DescribeRouteTables: %v, %+v", err, tables)
	}
	rt := aws.ToString(tables.RouteTables[0].RouteTableId)
	if len(tables.RouteTables[0].Routes) != 2 || !aws.ToBool(tables.RouteTables[0].Associations[0].Main) {
		t.Errorf("a new table: %+v", tables.RouteTables[0])
	}
	if _, err := s.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(rt), DestinationCidrBlock: aws.String("10.244.1.0/24"), InstanceId: aws.String(a.ID)}); err != nil {
		t.Fatal(err)
	}
	// An IPv6 network in DestinationCidrBlock is refused, as EC2 refuses it.
	_, err = s.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(rt), DestinationCidrBlock: aws.String("fd00:10:244:3::/64"), InstanceId: aws.String(a.ID)})
	if apiCode(err) != "InvalidParameterValue" {
		t.Errorf("an IPv6 network as destinationCidrBlock: %v, want InvalidParameterValue", err)
	}
	if _, err := s.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(rt), DestinationIpv6CidrBlock: aws.String("fd00:10:244:3::/64"), InstanceId: aws.String(a.ID)}); err != nil {
		t.Errorf("an IPv6 route: %v", err)
	}
	_, err = s.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(rt), DestinationCidrBlock: aws.String("10.244.1.0/24"), InstanceId: aws.String(a.ID)})
	if apiCode(err) != "RouteAlreadyExists" {
		t.Errorf("a second route to the same CIDR: %v", err)
	}
	tables, _ = s.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{RouteTableIds: []string{rt}})
	routes := tables.RouteTables[0].Routes
	i := slices.IndexFunc(routes, func(r ec2types.Route) bool { return aws.ToString(r.DestinationCidrBlock) == "10.244.1.0/24" })
	if i < 0 || aws.ToString(routes[i].InstanceId) != a.ID || routes[i].State != ec2types.RouteStateActive {
		t.Fatalf("routes %+v", routes)
	}
	// A route to a terminated instance turns blackhole.
	s.cloud.Act(awsctl.InstanceAction{Name: "node-a", Action: "terminate"})
	tables, _ = s.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{RouteTableIds: []string{rt}})
	if r := tables.RouteTables[0].Routes[i]; r.State != ec2types.RouteStateBlackhole {
		t.Errorf("route to a terminated instance: state %s, want blackhole", r.State)
	}
	if _, err := s.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(rt), DestinationCidrBlock: aws.String("10.244.1.0/24")}); err != nil {
		t.Fatal(err)
	}
	_, err = s.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(rt), DestinationCidrBlock: aws.String("10.244.1.0/24")})
	if apiCode(err) != "InvalidRoute.NotFound" {
		t.Errorf("deleting it again: %v", err)
	}
}

func TestEC2SecurityGroups(t *testing.T) {
	ctx := context.Background()
	s := newSDK(t, "AKIATEST")
	created, err := s.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("k8s-elb-a1"), Description: aws.String("Security group for Kubernetes ELB a1"), VpcId: aws.String(s.cloud.st.vpcID),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: []ec2types.Tag{{Key: aws.String("kubernetes.io/cluster/ccm-conformance"), Value: aws.String("owned")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(created.GroupId)
	_, err = s.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-elb-a1"), Description: aws.String("again"), VpcId: aws.String(s.cloud.st.vpcID)})
	if apiCode(err) != "InvalidGroup.Duplicate" {
		t.Errorf("a second group of that name: %v", err)
	}
	perm := []ec2types.IpPermission{{
		IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80),
		IpRanges:   []ec2types.IpRange{{CidrIp: aws.String("192.0.2.0/24")}, {CidrIp: aws.String("198.51.100.7/32"), Description: aws.String("kubernetes.io/rule/nlb/client=a1")}},
		Ipv6Ranges: []ec2types.Ipv6Range{{CidrIpv6: aws.String("2001:db8::/32")}},
	}, {
		IpProtocol: aws.String("icmp"), FromPort: aws.Int32(3), ToPort: aws.Int32(4),
		IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}},
	}}
	if _, err := s.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: perm}); err != nil {
		t.Fatal(err)
	}
	_, err = s.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: perm[1:]})
	if apiCode(err) != "InvalidPermission.Duplicate" {
		t.Errorf("the same rule again: %v", err)
	}
	// The node group lets the load balancer's group in.
	if _, err := s.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(s.cloud.st.nodeGroup), IpPermissions: []ec2types.IpPermission{{
		IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(id)}},
	}}}); err != nil {
		t.Fatal(err)
	}

	groups, err := s.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if err != nil || len(groups.SecurityGroups) != 1 {
		t.Fatalf("DescribeSecurityGroups: %v, %+v", err, groups)
	}
	g := groups.SecurityGroups[0]
	if aws.ToString(g.GroupName) != "k8s-elb-a1" || aws.ToString(g.VpcId) != s.cloud.st.vpcID || len(g.Tags) != 1 || len(g.IpPermissions) != 2 {
		t.Fatalf("group %+v", g)
	}
	tcp := g.IpPermissions[0]
	if aws.ToString(tcp.IpProtocol) != "tcp" || aws.ToInt32(tcp.FromPort) != 80 || aws.ToInt32(tcp.ToPort) != 80 || len(tcp.IpRanges) != 2 || aws.ToString(tcp.Ipv6Ranges[0].CidrIpv6) != "2001:db8::/32" {
		t.Errorf("the tcp rule %+v", tcp)
	}
	// The CCM finds a Network Load Balancer's rules by their descriptions.
	if len(tcp.IpRanges) == 2 && (aws.ToString(tcp.IpRanges[1].Description) != "kubernetes.io/rule/nlb/client=a1" || tcp.IpRanges[0].Description != nil) {
		t.Errorf("descriptions of the tcp rule's ranges: %q, %q", aws.ToString(tcp.IpRanges[0].Description), aws.ToString(tcp.IpRanges[1].Description))
	}
	byName, err := s.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{"k8s-elb-a1"}}, {Name: aws.String("vpc-id"), Values: []string{s.cloud.st.vpcID}}}})
	if err != nil || len(byName.SecurityGroups) != 1 {
		t.Errorf("by name: %v, %+v", err, byName)
	}
	// The CCM finds the groups that let a load balancer's group in by
	// the ip-permission.group-id filter.
	referring, err := s.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("ip-permission.group-id"), Values: []string{id}}}})
	if err != nil || len(referring.SecurityGroups) != 1 || aws.ToString(referring.SecurityGroups[0].GroupId) != s.cloud.st.nodeGroup {
		t.Errorf("groups whose rules name %s: %v, %+v; want the node group", id, err, referring)
	}
	nodes, _ := s.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{s.cloud.st.nodeGroup}})
	if pairs := nodes.SecurityGroups[0].IpPermissions; len(pairs) != 1 || len(pairs[0].UserIdGroupPairs) != 2 || aws.ToString(pairs[0].UserIdGroupPairs[1].GroupId) != id {
		t.Errorf("the node group's rules %+v", pairs)
	}

	// A group another group's rule names cannot go: DependencyViolation,
	// which the CCM retries.
	_, err = s.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
	if apiCode(err) != "DependencyViolation" {
		t.Errorf("deleting a group in use: %v", err)
	}
	if _, err := s.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(s.cloud.st.nodeGroup), IpPermissions: []ec2types.IpPermission{{
		IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(id)}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: perm}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if apiCode(err) != "InvalidGroup.NotFound" {
		t.Errorf("a deleted group: %v", err)
	}
}

func TestClassicLoadBalancers(t *testing.T) {
	ctx := context.Background()
	s := newSDK(t, "AKIATEST")
	a := s.instance(t, "node-a", "")
	b := s.instance(t, "node-b", "us-east-1b")
	sg, err := s.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-elb-lb1"), Description: aws.String("lb1"), VpcId: aws.String(s.cloud.st.vpcID)})
	if err != nil {
		t.Fatal(err)
	}
	group := aws.ToString(sg.GroupId)
	subnets := []string{s.cloud.st.zones[0].subnet, s.cloud.st.zones[1].subnet}

	_, err = s.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"lb1"}})
	var notFound *elbtypes.AccessPointNotFoundException
	if !errors.As(err, &notFound) || apiCode(err) != "LoadBalancerNotFound" {
		t.Fatalf("before it exists: %v, want LoadBalancerNotFound (AccessPointNotFoundException)", err)
	}

	created, err := s.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String("lb1"),
		Listeners:        []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 80, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)}},
		Subnets:          subnets, SecurityGroups: []string{group}, Scheme: aws.String("internet-facing"),
		Tags: []elbtypes.Tag{{Key: aws.String("kubernetes.io/service-name"), Value: aws.String("ns/svc")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dns := aws.ToString(created.DNSName)
	if want := ".us-east-1.elb.amazonaws.com"; len(dns) <= len(want) || dns[len(dns)-len(want):] != want {
		t.Errorf("DNSName %q", dns)
	}
	var errs []error
	do := func(_ any, err error) { errs = append(errs, err) }
	do(s.elb.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String("lb1"), Instances: []elbtypes.Instance{{InstanceId: aws.String(a.ID)}, {InstanceId: aws.String(b.ID)}}}))
	do(s.elb.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: aws.String("lb1"), Instances: []elbtypes.Instance{{InstanceId: aws.String(b.ID)}}}))
	do(s.elb.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String("lb1"), HealthCheck: &elbtypes.HealthCheck{Target: aws.String("HTTP:32000/healthz"), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6)}}))
	do(s.elb.CreateLoadBalancerListeners(ctx, &elb.CreateLoadBalancerListenersInput{LoadBalancerName: aws.String("lb1"), Listeners: []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 443, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30443)}}}))
	do(s.elb.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: aws.String("lb1"), LoadBalancerPorts: []int32{80}}))
	do(s.elb.AddTags(ctx, &elb.AddTagsInput{LoadBalancerNames: []string{"lb1"}, Tags: []elbtypes.Tag{{Key: aws.String("kubernetes.io/cluster/ccm-conformance"), Value: aws.String("owned")}}}))
	do(s.elb.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{LoadBalancerName: aws.String("lb1"), PolicyName: aws.String("k8s-proxyprotocol-enabled"), PolicyTypeName: aws.String("ProxyProtocolPolicyType"), PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("ProxyProtocol"), AttributeValue: aws.String("true")}}}))
	do(s.elb.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{LoadBalancerName: aws.String("lb1"), InstancePort: aws.Int32(30443), PolicyNames: []string{"k8s-proxyprotocol-enabled"}}))
	do(s.elb.SetLoadBalancerPoliciesOfListener(ctx, &elb.SetLoadBalancerPoliciesOfListenerInput{LoadBalancerName: aws.String("lb1"), LoadBalancerPort: 443, PolicyNames: []string{}}))
	do(s.elb.AttachLoadBalancerToSubnets(ctx, &elb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: aws.String("lb1"), Subnets: []string{s.cloud.st.zones[2].subnet}}))
	do(s.elb.DetachLoadBalancerFromSubnets(ctx, &elb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: aws.String("lb1"), Subnets: []string{s.cloud.st.zones[0].subnet}}))
	do(s.elb.ApplySecurityGroupsToLoadBalancer(ctx, &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: aws.String("lb1"), SecurityGroups: []string{group, s.cloud.st.nodeGroup}}))
	do(s.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String("lb1"), LoadBalancerAttributes: &elbtypes.LoadBalancerAttributes{
		CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: true},
		ConnectionDraining:     &elbtypes.ConnectionDraining{Enabled: true, Timeout: aws.Int32(30)},
		ConnectionSettings:     &elbtypes.ConnectionSettings{IdleTimeout: aws.Int32(120)},
	}}))
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d after CreateLoadBalancer: %v", i+1, err)
		}
	}

	out, err := s.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"lb1"}})
	if err != nil || len(out.LoadBalancerDescriptions) != 1 {
		t.Fatalf("DescribeLoadBalancers: %v, %+v", err, out)
	}
	d := out.LoadBalancerDescriptions[0]
	if aws.ToString(d.DNSName) != dns || aws.ToString(d.Scheme) != "internet-facing" || aws.ToString(d.VPCId) != s.cloud.st.vpcID {
		t.Errorf("description %+v", d)
	}
	if len(d.ListenerDescriptions) != 1 || d.ListenerDescriptions[0].Listener.LoadBalancerPort != 443 || aws.ToInt32(d.ListenerDescriptions[0].Listener.InstancePort) != 30443 || aws.ToString(d.ListenerDescriptions[0].Listener.Protocol) != "TCP" {
		t.Errorf("listeners %+v", d.ListenerDescriptions)
	}
	if len(d.Instances) != 1 || aws.ToString(d.Instances[0].InstanceId) != a.ID {
		t.Errorf("instances %+v, want only %s", d.Instances, a.ID)
	}
	if hc := d.HealthCheck; aws.ToString(hc.Target) != "HTTP:32000/healthz" || aws.ToInt32(hc.Interval) != 10 || aws.ToInt32(hc.UnhealthyThreshold) != 6 {
		t.Errorf("health check %+v", hc)
	}
	if !slices.Equal(d.Subnets, []string{s.cloud.st.zones[1].subnet, s.cloud.st.zones[2].subnet}) || len(d.AvailabilityZones) != 2 {
		t.Errorf("subnets %v, zones %v", d.Subnets, d.AvailabilityZones)
	}
	if !slices.Equal(d.SecurityGroups, []string{group, s.cloud.st.nodeGroup}) || aws.ToString(d.SourceSecurityGroup.GroupName) != "k8s-elb-lb1" {
		t.Errorf("groups %v, source %+v", d.SecurityGroups, d.SourceSecurityGroup)
	}
	if len(d.BackendServerDescriptions) != 1 || aws.ToInt32(d.BackendServerDescriptions[0].InstancePort) != 30443 || d.BackendServerDescriptions[0].PolicyNames[0] != "k8s-proxyprotocol-enabled" {
		t.Errorf("backend policies %+v", d.BackendServerDescriptions)
	}
	if d.Policies == nil || !slices.Equal(d.Policies.OtherPolicies, []string{"k8s-proxyprotocol-enabled"}) {
		t.Errorf("policies %+v", d.Policies)
	}

	pols, err := s.elb.DescribeLoadBalancerPolicies(ctx, &elb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: aws.String("lb1")})
	if err != nil || len(pols.PolicyDescriptions) != 1 || aws.ToString(pols.PolicyDescriptions[0].PolicyAttributeDescriptions[0].AttributeValue) != "true" {
		t.Errorf("DescribeLoadBalancerPolicies: %v, %+v", err, pols)
	}
	attrs, err := s.elb.DescribeLoadBalancerAttributes(ctx, &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: aws.String("lb1")})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.LoadBalancerAttributes; !a.CrossZoneLoadBalancing.Enabled || aws.ToInt32(a.ConnectionDraining.Timeout) != 30 || aws.ToInt32(a.ConnectionSettings.IdleTimeout) != 120 || a.AccessLog.Enabled {
		t.Errorf("attributes %+v %+v %+v %+v", a.CrossZoneLoadBalancing, a.ConnectionDraining, a.ConnectionSettings, a.AccessLog)
	}

	// A health check target without a path for HTTP is refused.
	_, err = s.elb.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String("lb1"), HealthCheck: &elbtypes.HealthCheck{Target: aws.String("HTTP:32000"), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6)}})
	if apiCode(err) != "ValidationError" {
		t.Errorf("HTTP target without a path: %v", err)
	}

	if _, err := s.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String("lb1")}); err != nil {
		t.Fatal(err)
	}
	all, err := s.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
	if err != nil || len(all.LoadBalancerDescriptions) != 0 {
		t.Errorf("after delete: %v, %+v", err, all)
	}
}

func TestCallerIdentityAndFaults(t *testing.T) {
	ctx := context.Background()
	c := New(Options{})
	srv := httptest.NewServer(c)
	defer srv.Close()
	one, two, driver := sdkFor(c, srv.URL, "AKIAONE"), sdkFor(c, srv.URL, "AKIATWO"), sdkFor(c, srv.URL, awsctl.DriverAccessKeyID)
	c.CreateInstance(awsctl.CreateInstance{Name: "node-a"})

	one.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String("x")})
	two.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("private-dns-name"), Values: []string{"node-a"}}}})
	driver.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	got := c.Calls(awsctl.CallsQuery{})
	if len(got.Calls) != 2 || got.Last != 2 {
		t.Fatalf("calls %+v: want two (the driver's left out)", got)
	}
	if x := got.Calls[0]; x.Caller != "AKIAONE" || x.Operation != "EnsureLoadBalancerDeleted" || x.Resource != "x" {
		t.Errorf("first call %+v", x)
	}
	if x := got.Calls[1]; x.Caller != "AKIATWO" || x.Operation != "DescribeInstances" || x.Resource != "node-a" {
		t.Errorf("second call %+v", x)
	}
	if only := c.Calls(awsctl.CallsQuery{After: 1, Operations: []string{"EnsureLoadBalancerDeleted"}}); len(only.Calls) != 0 || only.Last != 2 {
		t.Errorf("filtered after 1: %+v", only)
	}

	if err := c.SetFault("instances", 1); err != nil {
		t.Fatal(err)
	}
	_, err := one.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if apiCode(err) != "Unavailable" {
		t.Errorf("with a fault: %v", err)
	}
	if _, err := driver.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Errorf("the driver's call met the fault: %v", err)
	}
	c.ClearFaults()
	if _, err := one.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Errorf("after clearing: %v", err)
	}
	if err := c.SetFault("disks", 1); err == nil {
		t.Error("an unknown target was accepted")
	}
}

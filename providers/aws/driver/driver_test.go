package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/cloud"
	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

func TestHealthCheckNodePort(t *testing.T) {
	for _, c := range []struct {
		target string
		want   int32
	}{
		{"HTTP:31234/healthz", 31234},
		{"HTTPS:31000/healthz", 31000},
		{"TCP:30080", 0},
		{"SSL:30443", 0},
		{"HTTP:x/healthz", 0},
		{"", 0},
	} {
		if got := healthCheckNodePort(c.target); got != c.want {
			t.Errorf("healthCheckNodePort(%q) = %d, want %d", c.target, got, c.want)
		}
	}
}

func TestLoadBalancerName(t *testing.T) {
	for _, c := range []struct{ uid, want string }{
		{"0b7a1c2e-9f3d-4e5a-8b6c-7d8e9f0a1b2c", "a0b7a1c2e9f3d4e5a8b6c7d8e9f0a1b2"},
		{"short", "ashort"},
	} {
		if got := loadBalancerName(c.uid); got != c.want {
			t.Errorf("loadBalancerName(%q) = %q, want %q", c.uid, got, c.want)
		}
	}
}

func TestSourceRanges(t *testing.T) {
	ports := []driverproto.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}
	groups := []ec2types.SecurityGroup{{
		Description: aws.String("Security group for Kubernetes ELB a123 (ns/web)"),
		IpPermissions: []ec2types.IpPermission{
			{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("192.0.2.0/24")}}, Ipv6Ranges: []ec2types.Ipv6Range{{CidrIpv6: aws.String("2001:db8::/32")}}},
			// The CCM's ICMP rule for path MTU discovery names the same
			// ranges, and another port's rule is not this listener's.
			{IpProtocol: aws.String("icmp"), FromPort: aws.Int32(3), ToPort: aws.Int32(4), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("198.51.100.0/24")}}},
			{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(443), ToPort: aws.Int32(443), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("203.0.113.0/24")}}},
		},
	}}
	ranges, service := sourceRanges(groups, ports)
	if strings.Join(ranges, ",") != "192.0.2.0/24,2001:db8::/32" || service != "ns/web" {
		t.Errorf("sourceRanges = %v, %q; want [192.0.2.0/24 2001:db8::/32], ns/web", ranges, service)
	}
}

func TestToInstance(t *testing.T) {
	in := &ec2types.Instance{
		InstanceId: aws.String("i-0abc"), PrivateDnsName: aws.String("ip-10-0-0-5.ec2.internal"), InstanceType: "m5.large",
		Placement: &ec2types.Placement{AvailabilityZone: aws.String("us-east-1b")}, State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameStopping},
		PublicIpAddress: aws.String("203.0.113.5"), PublicDnsName: aws.String("ec2-203-0-113-5.compute-1.amazonaws.com"),
		NetworkInterfaces: []ec2types.InstanceNetworkInterface{
			{Status: ec2types.NetworkInterfaceStatusInUse, Attachment: &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(1)}, PrivateIpAddresses: []ec2types.InstancePrivateIpAddress{{PrivateIpAddress: aws.String("10.0.1.9")}}},
			{Status: ec2types.NetworkInterfaceStatusAvailable, PrivateIpAddresses: []ec2types.InstancePrivateIpAddress{{PrivateIpAddress: aws.String("10.0.1.99")}}},
			{Status: ec2types.NetworkInterfaceStatusInUse, Attachment: &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(0)}, PrivateIpAddresses: []ec2types.InstancePrivateIpAddress{{PrivateIpAddress: aws.String("10.0.1.5")}, {PrivateIpAddress: aws.String("10.0.1.6")}}},
		},
	}
	got := toInstance(in, "us-east-1")
	want := driverproto.Instance{
		ID: "i-0abc", Name: "ip-10-0-0-5.ec2.internal", ProviderID: "aws:///us-east-1b/i-0abc", Zone: "us-east-1b", Region: "us-east-1",
		InstanceType: "m5.large", State: "stopped",
		Addresses: []driverproto.Address{
			{Type: "InternalIP", Address: "10.0.1.5"}, {Type: "InternalIP", Address: "10.0.1.6"}, {Type: "InternalIP", Address: "10.0.1.9"},
			{Type: "ExternalIP", Address: "203.0.113.5"},
			{Type: "InternalDNS", Address: "ip-10-0-0-5.ec2.internal"}, {Type: "Hostname", Address: "ip-10-0-0-5.ec2.internal"},
			{Type: "ExternalDNS", Address: "ec2-203-0-113-5.compute-1.amazonaws.com"},
		},
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("toInstance:\n got %s\nwant %s", g, w)
	}
}

// call runs one verb against the emulator.
func call(t *testing.T, env map[string]string, verb string, request any) (map[string]json.RawMessage, int, string) {
	t.Helper()
	data, _ := json.Marshal(request)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), strings.Fields(verb), bytes.NewReader(data), &stdout, &stderr, func(k string) string { return env[k] })
	var out map[string]json.RawMessage
	if code == 0 {
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("%s answered %q: %v", verb, stdout.String(), err)
		}
	}
	return out, code, stderr.String()
}

func decodeField[T any](t *testing.T, out map[string]json.RawMessage, field string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(out[field], &v); err != nil {
		t.Fatalf("field %s of %v: %v", field, out, err)
	}
	return v
}

// startEmulator serves an emulated account for one test and returns it
// with the driver's environment: the cloud config and the control socket.
func startEmulator(t *testing.T) (*cloud.Server, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	srv, err := cloud.Serve(cloud.New(cloud.Options{}), cloud.ServeOptions{Listen: "127.0.0.1:0", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, map[string]string{ConfigEnv: filepath.Join(dir, cloud.CloudConfigFile), ControlEnv: filepath.Join(dir, cloud.ControlSocket)}
}

// TestDriverAgainstTheEmulator runs the verbs through the emulator's API
// and control channel, as a run does.
func TestDriverAgainstTheEmulator(t *testing.T) {
	ctx := context.Background()
	srv, env := startEmulator(t)

	info, code, _ := call(t, env, "info", struct{}{})
	if code != 0 || len(decodeField[[]string](t, info, "verbs")) != len(verbNames()) {
		t.Fatalf("info: %d %v", code, info)
	}
	noControl := map[string]string{ConfigEnv: env[ConfigEnv]}
	if info, _, _ := call(t, noControl, "info", struct{}{}); strings.Contains(string(info["verbs"]), "instance create") {
		t.Errorf("without a control socket info offers %s", info["verbs"])
	}

	out, code, stderr := call(t, env, "instance create", driverproto.CreateInstanceRequest{Name: "node-a", Zone: "us-east-1c"})
	if code != 0 {
		t.Fatalf("instance create: %d %s", code, stderr)
	}
	a := decodeField[driverproto.Instance](t, out, "instance")
	if a.Zone != "us-east-1c" || a.ProviderID != "aws:///us-east-1c/"+a.ID || a.State != "running" || a.Addresses[0].Type != "InternalIP" {
		t.Errorf("created %+v", a)
	}
	call(t, env, "instance create", driverproto.CreateInstanceRequest{Name: "node-b"})

	out, _, _ = call(t, env, "instances list", struct{}{})
	if list := decodeField[[]driverproto.Instance](t, out, "instances"); len(list) != 2 {
		t.Errorf("instances list: %+v", list)
	}
	if _, code, _ := call(t, env, "instance stop", driverproto.NameRequest{Name: "node-b"}); code != 0 {
		t.Fatal("instance stop")
	}
	out, _, _ = call(t, env, "instance get", driverproto.NameRequest{Name: "node-b"})
	if b := decodeField[driverproto.Instance](t, out, "instance"); b.State != "stopped" {
		t.Errorf("after stop: %+v", b)
	}
	out, code, stderr = call(t, env, "instance set-addresses", driverproto.SetAddressesRequest{Name: "node-a", Addresses: []driverproto.Address{{Type: "InternalIP", Address: "10.0.2.50"}, {Type: "ExternalIP", Address: "198.51.100.7"}}})
	if code != 0 {
		t.Fatalf("set-addresses: %s", stderr)
	}
	if got := decodeField[driverproto.Instance](t, out, "instance").Addresses; len(got) != 4 || got[0].Address != "10.0.2.50" || got[1].Address != "198.51.100.7" {
		t.Errorf("after set-addresses: %+v", got)
	}
	if _, code, stderr = call(t, env, "instance set-addresses", driverproto.SetAddressesRequest{Name: "node-a", Addresses: []driverproto.Address{{Type: "ExternalIP", Address: "198.51.100.7"}, {Type: "ExternalIP", Address: "198.51.100.8"}}}); code == 0 {
		t.Error("two public addresses were accepted")
	}
	if _, code, _ := call(t, env, "instance delete", driverproto.NameRequest{Name: "node-b"}); code != 0 {
		t.Fatal("instance delete")
	}
	if _, code, _ := call(t, env, "instance get", driverproto.NameRequest{Name: "node-b"}); code != driverproto.ExitNotFound {
		t.Errorf("instance get of a terminated instance: exit %d, want %d", code, driverproto.ExitNotFound)
	}
	if _, code, _ := call(t, env, "instance delete", driverproto.NameRequest{Name: "node-b"}); code != driverproto.ExitNotFound {
		t.Errorf("deleting it again: exit %d, want %d", code, driverproto.ExitNotFound)
	}

	// Routes: made by the driver, listed by node name, deleted by name.
	out, code, stderr = call(t, env, "route create", map[string]string{"nodeName": "node-a", "destinationCIDR": "10.244.3.0/24"})
	if code != 0 {
		t.Fatalf("route create: %s", stderr)
	}
	out, _, _ = call(t, env, "routes list", struct{}{})
	routes := decodeField[[]driverproto.Route](t, out, "routes")
	if len(routes) != 1 || routes[0] != (driverproto.Route{Name: "10.244.3.0/24", NodeName: "node-a", DestinationCIDR: "10.244.3.0/24"}) {
		t.Errorf("routes list: %+v", routes)
	}
	if _, code, _ := call(t, env, "route delete", driverproto.NameRequest{Name: "10.244.3.0/24"}); code != 0 {
		t.Error("route delete")
	}
	// A route to a node without an instance goes to the VPC's bastion.
	out, code, stderr = call(t, env, "route create", map[string]string{"nodeName": "ccm-ghost-1", "destinationCIDR": "10.244.255.0/24"})
	if code != 0 {
		t.Fatalf("route create to a ghost: %s", stderr)
	}
	out, _, _ = call(t, env, "routes list", struct{}{})
	if routes := decodeField[[]driverproto.Route](t, out, "routes"); len(routes) != 1 || routes[0].NodeName != cloud.BastionName {
		t.Errorf("the ghost's route: %+v, want one to %s", routes, cloud.BastionName)
	}
	call(t, env, "route delete", driverproto.NameRequest{Name: "10.244.255.0/24"})
	if _, code, _ := call(t, env, "route delete", driverproto.NameRequest{Name: "10.244.3.0/24"}); code != driverproto.ExitNotFound {
		t.Errorf("deleting it again: exit %d", code)
	}

	// A load balancer as the CCM makes one.
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIACCM", "x", "")}
	e := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	l := elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	uid := "0b7a1c2e-9f3d-4e5a-8b6c-7d8e9f0a1b2c"
	name := loadBalancerName(uid)
	out, _, _ = call(t, env, "loadbalancer get", map[string]string{"namespace": "ns", "name": "web", "uid": uid})
	if lb := decodeField[driverproto.LoadBalancer](t, out, "loadBalancer"); lb.Exists {
		t.Errorf("before the CCM made it: %+v", lb)
	}
	sg, err := e.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-elb-" + name), Description: aws.String("Security group for Kubernetes ELB " + name + " (ns/web)")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg.GroupId, IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}}}}); err != nil {
		t.Fatal(err)
	}
	subnets, _ := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	created, err := l.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(name), Subnets: []string{aws.ToString(subnets.Subnets[0].SubnetId)}, SecurityGroups: []string{aws.ToString(sg.GroupId)},
		Listeners: []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 80, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String(name), Instances: []elbtypes.Instance{{InstanceId: aws.String(a.ID)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(name), HealthCheck: &elbtypes.HealthCheck{Target: aws.String("HTTP:32111/healthz"), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6)}}); err != nil {
		t.Fatal(err)
	}
	out, code, stderr = call(t, env, "loadbalancer get", map[string]string{"namespace": "ns", "name": "web", "uid": uid})
	if code != 0 {
		t.Fatalf("loadbalancer get: %s", stderr)
	}
	lb := decodeField[driverproto.LoadBalancer](t, out, "loadBalancer")
	if !lb.Exists || lb.Name != name || lb.Ingress[0].Hostname != aws.ToString(created.DNSName) || lb.Ports[0] != (driverproto.Port{Protocol: "TCP", Port: 80, NodePort: 30080}) ||
		strings.Join(lb.Backends, ",") != "node-a" || strings.Join(lb.SourceRanges, ",") != "0.0.0.0/0" || lb.HealthCheckNodePort != 32111 {
		t.Errorf("loadbalancer get: %+v", lb)
	}
	out, _, _ = call(t, env, "loadbalancers list", struct{}{})
	if list := decodeField[[]driverproto.LoadBalancer](t, out, "loadBalancers"); len(list) != 1 || list[0].ServiceNamespace != "ns" || list[0].ServiceName != "web" {
		t.Errorf("loadbalancers list: %+v", list)
	}

	// The CCM's calls are listed by operation; the driver's are not.
	out, _, _ = call(t, env, "calls list", map[string]any{"operations": []string{"EnsureLoadBalancer"}})
	calls := decodeField[[]driverproto.Call](t, out, "calls")
	if len(calls) != 3 || calls[0].Caller != "AKIACCM" || calls[0].Resource != name {
		t.Errorf("calls list: %+v", calls)
	}
	if _, code, _ := call(t, env, "fault inject", driverproto.FaultRequest{Target: "instances", ErrorRate: 1}); code != 0 {
		t.Error("fault inject")
	}
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err == nil {
		t.Error("the CCM's call passed a fault of rate 1")
	}
	if _, code, _ := call(t, env, "instances list", struct{}{}); code != 0 {
		t.Error("the driver's call met the fault")
	}
	call(t, env, "fault clear", struct{}{})
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Errorf("after fault clear: %v", err)
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.conf")
	os.WriteFile(good, []byte("[Global]\nZone = us-west-2b\nVPC = vpc-1\nKubernetesClusterID = c1\n\n[ServiceOverride \"1\"]\nService = EC2\nRegion = us-west-2\nURL = http://127.0.0.1:9\n"), 0o600)
	c, err := readConfig(good)
	if err != nil || c.region() != "us-west-2" || c.vpc != "vpc-1" || c.endpoints["EC2"] != "http://127.0.0.1:9" {
		t.Errorf("readConfig: %+v, %v", c, err)
	}
	bad := filepath.Join(dir, "bad.conf")
	os.WriteFile(bad, []byte("[Global]\nVPC = vpc-1\n"), 0o600)
	if _, err := readConfig(bad); err == nil {
		t.Error("a config without Zone and KubernetesClusterID was accepted")
	}
}

// TestDriverReadsNetworkLoadBalancers: a Network Load Balancer made as the
// CCM makes one for a Local Service with a source range (a target group
// on the node port, health-checked over HTTP on the health check node
// port; the client range as a rule on the nodes' group, described for the
// load balancer) is reported under the Service's load balancer name, with
// the target group's port as the node port, and listed with the Service
// its tag names.
func TestDriverReadsNetworkLoadBalancers(t *testing.T) {
	ctx := context.Background()
	srv, env := startEmulator(t)
	out, code, stderr := call(t, env, "instance create", driverproto.CreateInstanceRequest{Name: "node-a"})
	if code != 0 {
		t.Fatalf("instance create: %s", stderr)
	}
	a := decodeField[driverproto.Instance](t, out, "instance")
	call(t, env, "instance create", driverproto.CreateInstanceRequest{Name: "node-b"})

	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIACCM", "x", "")}
	e := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	v2 := elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	uid := "5c1f2a3b-4d5e-6f70-8192-a3b4c5d6e7f8"
	name := loadBalancerName(uid)
	subnets, _ := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	created, err := v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String(name), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		SubnetMappings: []elbv2types.SubnetMapping{{SubnetId: subnets.Subnets[0].SubnetId}}, SecurityGroups: []string{},
		Tags: []elbv2types.Tag{{Key: aws.String("kubernetes.io/service-name"), Value: aws.String("ns/web")}}})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := v2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: aws.String("k8s-ns-web-0123456789"), Protocol: elbv2types.ProtocolEnumTcp,
		Port: aws.Int32(30080), VpcId: subnets.Subnets[0].VpcId, TargetType: elbv2types.TargetTypeEnumInstance,
		HealthCheckProtocol: elbv2types.ProtocolEnumHttp, HealthCheckPort: aws.String("32111"), HealthCheckPath: aws.String("/healthz")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: tg.TargetGroups[0].TargetGroupArn,
		Targets: []elbv2types.TargetDescription{{Id: aws.String(a.ID), Port: aws.Int32(30080)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.CreateListener(ctx, &elbv2.CreateListenerInput{LoadBalancerArn: created.LoadBalancers[0].LoadBalancerArn, Port: aws.Int32(80),
		Protocol: elbv2types.ProtocolEnumTcp, DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroups[0].TargetGroupArn}}}); err != nil {
		t.Fatal(err)
	}
	groups, err := e.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil || len(groups.SecurityGroups) != 1 {
		t.Fatalf("the nodes' group: %v %+v", err, groups)
	}
	if _, err := e.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: groups.SecurityGroups[0].GroupId, IpPermissions: []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("203.0.113.0/24"), Description: aws.String("kubernetes.io/rule/nlb/client=" + name)}}},
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("10.0.0.0/24"), Description: aws.String("kubernetes.io/rule/nlb/health=" + name)}}},
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30081), ToPort: aws.Int32(30081), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("198.51.100.0/24"), Description: aws.String("kubernetes.io/rule/nlb/client=aother")}}},
	}}); err != nil {
		t.Fatal(err)
	}

	out, code, stderr = call(t, env, "loadbalancer get", map[string]string{"namespace": "ns", "name": "web", "uid": uid})
	if code != 0 {
		t.Fatalf("loadbalancer get: %s", stderr)
	}
	lb := decodeField[driverproto.LoadBalancer](t, out, "loadBalancer")
	if !lb.Exists || lb.Name != name || lb.Ingress[0].Hostname != aws.ToString(created.LoadBalancers[0].DNSName) ||
		len(lb.Ports) != 1 || lb.Ports[0] != (driverproto.Port{Protocol: "TCP", Port: 80, NodePort: 30080}) ||
		strings.Join(lb.Backends, ",") != "node-a" || strings.Join(lb.SourceRanges, ",") != "203.0.113.0/24" || lb.HealthCheckNodePort != 32111 {
		t.Errorf("loadbalancer get: %+v", lb)
	}
	out, _, _ = call(t, env, "loadbalancers list", struct{}{})
	if list := decodeField[[]driverproto.LoadBalancer](t, out, "loadBalancers"); len(list) != 1 || list[0].Name != name || list[0].ServiceNamespace != "ns" || list[0].ServiceName != "web" {
		t.Errorf("loadbalancers list: %+v", list)
	}
	if _, err := v2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: created.LoadBalancers[0].LoadBalancerArn}); err != nil {
		t.Fatal(err)
	}
	out, _, _ = call(t, env, "loadbalancer get", map[string]string{"namespace": "ns", "name": "web", "uid": uid})
	if lb := decodeField[driverproto.LoadBalancer](t, out, "loadBalancer"); lb.Exists {
		t.Errorf("after DeleteLoadBalancer: %+v", lb)
	}
}

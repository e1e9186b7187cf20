package cloud

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
)

func newSDKWithURL(t *testing.T) (*sdk, string) {
	t.Helper()
	c := New(Options{})
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return sdkFor(c, srv.URL, "AKIATEST"), srv.URL
}

func (s *sdk) elbv2(url string) *elbv2.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIATEST", "secret", ""), RetryMaxAttempts: 1}
	return elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(url) })
}

// TestNetworkLoadBalancers calls every Elastic Load Balancing v2 action
// in the order the CCM does for an annotated Service (create, a node-set
// change, a node port change, delete), through the SDK at the CCM's
// version, and reads back each field the CCM reads
// (pkg/providers/v1/aws_loadbalancer.go, ensureLoadBalancerv2 and its
// helpers), including the one error it takes for "not there".
func TestNetworkLoadBalancers(t *testing.T) {
	ctx := context.Background()
	s, url := newSDKWithURL(t)
	v2 := s.elbv2(url)
	a := s.instance(t, "node-a", "")
	b := s.instance(t, "node-b", "us-east-1b")
	subnets := []string{s.cloud.st.zones[0].subnet, s.cloud.st.zones[1].subnet}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	_, err := v2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{"nlb1"}})
	var notFound *elbv2types.LoadBalancerNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("before it exists: %v, want LoadBalancerNotFoundException", err)
	}

	created, err := v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
		Name: aws.String("nlb1"), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		SubnetMappings: []elbv2types.SubnetMapping{{SubnetId: aws.String(subnets[0])}, {SubnetId: aws.String(subnets[1])}},
		SecurityGroups: []string{}, // the CCM's default: sent as an empty list
		Tags:           []elbv2types.Tag{{Key: aws.String("kubernetes.io/service-name"), Value: aws.String("ns/svc")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.LoadBalancers) != 1 {
		t.Fatalf("CreateLoadBalancer answered %d load balancers", len(created.LoadBalancers))
	}
	lb := created.LoadBalancers[0]
	lbARN := aws.ToString(lb.LoadBalancerArn)
	dns := aws.ToString(lb.DNSName)
	if !strings.HasPrefix(lbARN, "arn:aws:elasticloadbalancing:us-east-1:") || aws.ToString(lb.VpcId) != s.cloud.st.vpcID ||
		lb.State == nil || lb.State.Code != elbv2types.LoadBalancerStateEnumActive || lb.Type != elbv2types.LoadBalancerTypeEnumNetwork ||
		len(lb.SecurityGroups) != 0 || lb.Scheme != elbv2types.LoadBalancerSchemeEnumInternetFacing {
		t.Errorf("created %+v", lb)
	}
	// Not .elb.amazonaws.com: the CCM takes such a hostname for a classic
	// load balancer's.
	if !strings.HasSuffix(dns, ".elb.us-east-1.amazonaws.com") || !strings.HasPrefix(dns, "nlb1-") {
		t.Errorf("DNSName %q, want nlb1-….elb.us-east-1.amazonaws.com", dns)
	}
	if len(lb.AvailabilityZones) != 2 || aws.ToString(lb.AvailabilityZones[0].SubnetId) != subnets[0] || aws.ToString(lb.AvailabilityZones[1].ZoneName) != "us-east-1b" {
		t.Errorf("AvailabilityZones %+v", lb.AvailabilityZones)
	}

	tg, err := v2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
		Name: aws.String("k8s-ns-svc-0123456789"), Protocol: elbv2types.ProtocolEnumTcp, Port: aws.Int32(30080),
		VpcId: aws.String(s.cloud.st.vpcID), TargetType: elbv2types.TargetTypeEnumInstance,
		HealthCheckProtocol: elbv2types.ProtocolEnumTcp, HealthCheckPort: aws.String("traffic-port"),
		HealthCheckIntervalSeconds: aws.Int32(30), HealthyThresholdCount: aws.Int32(3), UnhealthyThresholdCount: aws.Int32(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.TargetGroups) != 1 {
		t.Fatalf("CreateTargetGroup answered %d groups", len(tg.TargetGroups))
	}
	tgARN := aws.ToString(tg.TargetGroups[0].TargetGroupArn)
	must(v2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: []elbv2types.TargetDescription{
		{Id: aws.String(a.ID), Port: aws.Int32(30080)}, {Id: aws.String(b.ID), Port: aws.Int32(30080)},
	}}))
	listener, err := v2.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: aws.String(lbARN), Port: aws.Int32(80), Protocol: elbv2types.ProtocolEnumTcp,
		DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}},
	})
	if err != nil || len(listener.Listeners) != 1 {
		t.Fatalf("CreateListener: %v, %+v", err, listener)
	}
	if _, err := v2.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: aws.String(lbARN), Port: aws.Int32(80), Protocol: elbv2types.ProtocolEnumTcp,
		DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}},
	}); apiCode(err) != "DuplicateListener" {
		t.Errorf("a second listener on port 80: %v, want DuplicateListener", err)
	}

	attrs, err := v2.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: aws.String(lbARN)})
	if err != nil || attr(attrs.Attributes, "load_balancing.cross_zone.enabled") != "false" || attr(attrs.Attributes, "access_logs.s3.enabled") != "false" {
		t.Errorf("DescribeLoadBalancerAttributes: %v, %+v", err, attrs)
	}
	modified, err := v2.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(lbARN),
		Attributes: []elbv2types.LoadBalancerAttribute{{Key: aws.String("load_balancing.cross_zone.enabled"), Value: aws.String("true")}}})
	if err != nil || attr(modified.Attributes, "load_balancing.cross_zone.enabled") != "true" {
		t.Errorf("ModifyLoadBalancerAttributes: %v, %+v", err, modified)
	}
	if _, err := v2.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(lbARN),
		Attributes: []elbv2types.LoadBalancerAttribute{{Key: aws.String("idle_timeout.timeout_seconds"), Value: aws.String("60")}}}); apiCode(err) != "ValidationError" {
		t.Errorf("an attribute of another kind of load balancer: %v, want ValidationError", err)
	}

	// The update path: listeners and target groups by load balancer,
	// then the targets' health, then the changes.
	ls, err := v2.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	if err != nil || len(ls.Listeners) != 1 || aws.ToInt32(ls.Listeners[0].Port) != 80 || ls.Listeners[0].Protocol != elbv2types.ProtocolEnumTcp ||
		len(ls.Listeners[0].DefaultActions) != 1 || aws.ToString(ls.Listeners[0].DefaultActions[0].TargetGroupArn) != tgARN {
		t.Fatalf("DescribeListeners: %v, %+v", err, ls)
	}
	listenerARN := aws.ToString(ls.Listeners[0].ListenerArn)
	tgs, err := v2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lbARN)})
	if err != nil || len(tgs.TargetGroups) != 1 {
		t.Fatalf("DescribeTargetGroups: %v, %+v", err, tgs)
	}
	g := tgs.TargetGroups[0]
	if aws.ToInt32(g.Port) != 30080 || g.Protocol != elbv2types.ProtocolEnumTcp || g.HealthCheckProtocol != elbv2types.ProtocolEnumTcp ||
		aws.ToString(g.HealthCheckPort) != "traffic-port" || aws.ToInt32(g.HealthCheckIntervalSeconds) != 30 ||
		aws.ToInt32(g.HealthyThresholdCount) != 3 || aws.ToInt32(g.UnhealthyThresholdCount) != 3 ||
		g.TargetType != elbv2types.TargetTypeEnumInstance || len(g.LoadBalancerArns) != 1 || g.LoadBalancerArns[0] != lbARN {
		t.Errorf("target group %+v", g)
	}
	health, err := v2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tgARN)})
	if err != nil || len(health.TargetHealthDescriptions) != 2 {
		t.Fatalf("DescribeTargetHealth: %v, %+v", err, health)
	}
	for _, d := range health.TargetHealthDescriptions {
		if d.Target == nil || d.TargetHealth == nil || aws.ToInt32(d.Target.Port) != 30080 || d.TargetHealth.State != elbv2types.TargetHealthStateEnumInitial {
			t.Errorf("target health %+v, want initial: no check has run", d)
		}
	}
	s.cloud.st.setTargetHealth(tgARN, v2Target{a.ID, 30080}, true)
	health, _ = v2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tgARN)})
	if got := health.TargetHealthDescriptions[0]; aws.ToString(got.Target.Id) != a.ID || got.TargetHealth.State != elbv2types.TargetHealthStateEnumHealthy {
		t.Errorf("after a passed check: %+v", got)
	}
	must(v2.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgARN), Targets: []elbv2types.TargetDescription{{Id: aws.String(b.ID), Port: aws.Int32(30080)}}}))
	mod, err := v2.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{TargetGroupArn: aws.String(tgARN),
		HealthCheckProtocol: elbv2types.ProtocolEnumHttp, HealthCheckPort: aws.String("31000"), HealthCheckPath: aws.String("/healthz"),
		HealthyThresholdCount: aws.Int32(2), UnhealthyThresholdCount: aws.Int32(2)})
	if err != nil || len(mod.TargetGroups) != 1 || aws.ToString(mod.TargetGroups[0].HealthCheckPath) != "/healthz" || aws.ToString(mod.TargetGroups[0].HealthCheckPort) != "31000" {
		t.Errorf("ModifyTargetGroup: %v, %+v", err, mod)
	}
	byARN, err := v2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{TargetGroupArns: []string{tgARN}})
	if err != nil || len(byARN.TargetGroups) != 1 || byARN.TargetGroups[0].HealthCheckProtocol != elbv2types.ProtocolEnumHttp {
		t.Errorf("DescribeTargetGroups by ARN: %v, %+v", err, byARN)
	}
	tgAttrs, err := v2.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(tgARN)})
	if err != nil || attr(tgAttrs.Attributes, "preserve_client_ip.enabled") != "true" {
		t.Errorf("DescribeTargetGroupAttributes: %v, %+v", err, tgAttrs)
	}
	tgMod, err := v2.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(tgARN),
		Attributes: []elbv2types.TargetGroupAttribute{{Key: aws.String("proxy_protocol_v2.enabled"), Value: aws.String("true")}}})
	if err != nil || attr(tgMod.Attributes, "proxy_protocol_v2.enabled") != "true" {
		t.Errorf("ModifyTargetGroupAttributes: %v, %+v", err, tgMod)
	}

	// A node port change: a new group, the listener moved to it, the old
	// group deleted (in use until then).
	tg2, err := v2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
		Name: aws.String("k8s-ns-svc-abcdef0123"), Protocol: elbv2types.ProtocolEnumTcp, Port: aws.Int32(30081),
		VpcId: aws.String(s.cloud.st.vpcID), TargetType: elbv2types.TargetTypeEnumInstance,
	})
	if err != nil {
		t.Fatal(err)
	}
	tg2ARN := aws.ToString(tg2.TargetGroups[0].TargetGroupArn)
	if _, err := v2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tgARN)}); apiCode(err) != "ResourceInUse" {
		t.Errorf("deleting a group a listener forwards to: %v, want ResourceInUse", err)
	}
	ml, err := v2.ModifyListener(ctx, &elbv2.ModifyListenerInput{ListenerArn: aws.String(listenerARN), Port: aws.Int32(80), Protocol: elbv2types.ProtocolEnumTcp,
		DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tg2ARN)}}})
	if err != nil || len(ml.Listeners) != 1 || aws.ToString(ml.Listeners[0].DefaultActions[0].TargetGroupArn) != tg2ARN {
		t.Errorf("ModifyListener: %v, %+v", err, ml)
	}
	must(v2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tgARN)}))

	// Tags, security groups, a second listener deleted.
	must(v2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{lbARN}, Tags: []elbv2types.Tag{{Key: aws.String("kubernetes.io/cluster/ccm-conformance"), Value: aws.String("owned")}}}))
	tagged, err := v2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{lbARN}})
	if err != nil || len(tagged.TagDescriptions) != 1 || len(tagged.TagDescriptions[0].Tags) != 2 || aws.ToString(tagged.TagDescriptions[0].Tags[0].Value) != "ns/svc" {
		t.Errorf("DescribeTags: %v, %+v", err, tagged)
	}
	if _, err := v2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: aws.String(lbARN), SecurityGroups: []string{s.cloud.st.nodeGroup}}); apiCode(err) != "InvalidConfigurationRequest" {
		t.Errorf("security groups on a load balancer made without: %v, want InvalidConfigurationRequest", err)
	}
	withGroups, err := v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String("nlb2"), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		Subnets: subnets[:1], SecurityGroups: []string{s.cloud.st.nodeGroup}, Scheme: elbv2types.LoadBalancerSchemeEnumInternal})
	if err != nil {
		t.Fatal(err)
	}
	lb2 := aws.ToString(withGroups.LoadBalancers[0].LoadBalancerArn)
	// NLBSecurityGroupMode Managed: the CCM gives the load balancer a
	// group of its own, which cannot be deleted while the load balancer
	// holds it (the CCM deletes the load balancer first and retries on
	// DependencyViolation).
	own, err := s.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-ns-svc-0123456789"),
		Description: aws.String("[k8s] Managed SecurityGroup for LoadBalancer"), VpcId: aws.String(s.cloud.st.vpcID)})
	if err != nil {
		t.Fatal(err)
	}
	set, err := v2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: aws.String(lb2), SecurityGroups: []string{aws.ToString(own.GroupId)}})
	if err != nil || len(set.SecurityGroupIds) != 1 || set.SecurityGroupIds[0] != aws.ToString(own.GroupId) {
		t.Errorf("SetSecurityGroups: %v, %+v", err, set)
	}
	if _, err := s.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: own.GroupId}); apiCode(err) != "DependencyViolation" {
		t.Errorf("deleting the group a network load balancer holds: %v, want DependencyViolation", err)
	}
	two, err := v2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{lbARN, lb2}})
	if err != nil || len(two.LoadBalancers) != 2 || two.LoadBalancers[1].Scheme != elbv2types.LoadBalancerSchemeEnumInternal {
		t.Errorf("DescribeLoadBalancers by ARN: %v, %+v", err, two)
	}
	must(v2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: aws.String(listenerARN)}))
	if ls, _ := v2.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)}); len(ls.Listeners) != 0 {
		t.Errorf("after DeleteListener: %+v", ls.Listeners)
	}

	// Delete: the load balancer, then its groups; a second delete is no
	// error, and the name is gone.
	must(v2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lbARN)}))
	must(v2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lbARN)}))
	must(v2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg2ARN)}))
	must(v2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lb2)}))
	must(s.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: own.GroupId}))
	if _, err := v2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{"nlb1"}}); !errors.As(err, &notFound) {
		t.Errorf("after delete: %v, want LoadBalancerNotFoundException", err)
	}
	if _, err := v2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{TargetGroupArns: []string{tgARN}}); apiCode(err) != "TargetGroupNotFound" {
		t.Errorf("a deleted group: %v, want TargetGroupNotFound", err)
	}

	// The call log names each call's load balancer, and files the
	// changes under the driver protocol's operations.
	calls := s.cloud.Calls(awsctl.CallsQuery{})
	ops := map[string]string{}
	for _, c := range calls.Calls {
		if c.Resource == "nlb1" {
			ops[c.Action] = c.Operation
		}
	}
	for action, want := range map[string]string{"CreateLoadBalancer": "EnsureLoadBalancer", "CreateListener": "EnsureLoadBalancer",
		"ModifyListener": "EnsureLoadBalancer", "DeleteLoadBalancer": "EnsureLoadBalancerDeleted", "DescribeLoadBalancers": "DescribeLoadBalancers"} {
		if ops[action] != want {
			t.Errorf("call log: %s on nlb1 filed as %q, want %q (all: %v)", action, ops[action], want, ops)
		}
	}
}

func attr[T interface {
	elbv2types.LoadBalancerAttribute | elbv2types.TargetGroupAttribute
}](attrs []T, key string) string {
	for _, a := range attrs {
		var k, v *string
		switch x := any(a).(type) {
		case elbv2types.LoadBalancerAttribute:
			k, v = x.Key, x.Value
		case elbv2types.TargetGroupAttribute:
			k, v = x.Key, x.Value
		}
		if aws.ToString(k) == key {
			return aws.ToString(v)
		}
	}
	return "<missing>"
}

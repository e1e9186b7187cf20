package cloud

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
	"github.com/ccm-conformance/ccm-conformance/providers/loopback"
)

func TestAdmits(t *testing.T) {
	rules := []permission{
		{protocol: "tcp", from: 80, to: 80, cidr: "127.0.0.1/32"},
		{protocol: "tcp", from: 8000, to: 8100, cidr: "10.0.0.0/8"},
		{protocol: "icmp", from: 3, to: 4, cidr: "0.0.0.0/0"},
		{protocol: "-1", group: "sg-1"},
	}
	if !admits([]permission{{protocol: "udp", from: 53, to: 53, cidr: "0.0.0.0/0"}}, "udp", 53, netip.MustParseAddr("127.0.0.1")) ||
		!admits([]permission{{protocol: "17", from: 53, to: 53, cidr: "0.0.0.0/0"}}, "udp", 53, netip.MustParseAddr("127.0.0.1")) ||
		admits([]permission{{protocol: "tcp", from: 53, to: 53, cidr: "0.0.0.0/0"}}, "udp", 53, netip.MustParseAddr("127.0.0.1")) {
		t.Error("UDP clients: a udp (17) rule admits, a tcp one does not")
	}
	for _, tt := range []struct {
		name  string
		rules []permission
		port  int32
		src   string
		want  bool
	}{
		{"inside the CIDR, at the port", rules, 80, "127.0.0.1", true},
		{"outside the CIDR", rules, 80, "127.0.0.2", false},
		{"another port", rules, 81, "127.0.0.1", false},
		{"inside a port range", rules, 8050, "10.1.2.3", true},
		{"an ICMP rule for everyone admits no TCP", rules, 443, "192.0.2.1", false},
		{"a group rule admits no client", []permission{{protocol: "-1", group: "sg-1"}}, 80, "127.0.0.1", false},
		{"all protocols from everywhere", []permission{{protocol: "-1", cidr: "0.0.0.0/0"}}, 9, "127.0.0.2", true},
		{"an IPv4-mapped client", rules, 80, "::ffff:127.0.0.1", true},
		{"no rules", nil, 80, "127.0.0.1", false},
		{"a UDP rule admits no TCP", []permission{{protocol: "udp", from: 53, to: 53, cidr: "0.0.0.0/0"}}, 53, "127.0.0.1", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := admits(tt.rules, "tcp", tt.port, netip.MustParseAddr(tt.src)); got != tt.want {
				t.Errorf("admits(port %d, from %s) = %v, want %v", tt.port, tt.src, got, tt.want)
			}
		})
	}
}

func TestAnswerDNS(t *testing.T) {
	c := New(Options{LoadBalancerAddresses: netip.MustParsePrefix("127.200.128.0/17")})
	c.st.elbs["web"] = &classicLB{name: "web", dnsName: "web-1.us-east-1.elb.amazonaws.com", addr: c.st.nextLBAddr()}
	c.st.elbs["off"] = &classicLB{name: "off", dnsName: "off-2.us-east-1.elb.amazonaws.com"}
	for _, tt := range []struct {
		name, qname string
		qtype       dnsmessage.Type
		rcode       dnsmessage.RCode
		want        []string
	}{
		{"a load balancer's name", "web-1.us-east-1.elb.amazonaws.com.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"127.200.128.1"}},
		{"in another case", "WEB-1.us-east-1.ELB.amazonaws.com.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"127.200.128.1"}},
		{"AAAA: no IPv6 address", "web-1.us-east-1.elb.amazonaws.com.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, nil},
		{"a load balancer without an address", "off-2.us-east-1.elb.amazonaws.com.", dnsmessage.TypeA, dnsmessage.RCodeServerFailure, nil},
		{"no such load balancer", "gone-3.us-east-1.elb.amazonaws.com.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
			_ = b.StartQuestions()
			_ = b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(tt.qname), Type: tt.qtype, Class: dnsmessage.ClassINET})
			q, _ := b.Finish()
			out, ok := c.st.answerDNS(q)
			if !ok {
				t.Fatal("no answer")
			}
			var m dnsmessage.Message
			if err := m.Unpack(out); err != nil {
				t.Fatal(err)
			}
			if m.ID != 7 || !m.Response || !m.Authoritative || m.RCode != tt.rcode {
				t.Fatalf("header %+v, want ID 7, an authoritative response, rcode %v", m.Header, tt.rcode)
			}
			var got []string
			for _, a := range m.Answers {
				if r, ok := a.Body.(*dnsmessage.AResource); ok {
					got = append(got, netip.AddrFrom4(r.A).String())
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("answers %v, want %v", got, tt.want)
			}
		})
	}
	if _, ok := c.st.answerDNS([]byte{1, 2, 3}); ok {
		t.Error("a malformed message was answered")
	}
}

// node stands in for a simulated node's kube-proxy: it answers on its
// instance's private address at a port with the instance's name, over TCP
// and UDP, and can be stopped and started.
type node struct {
	name string
	at   string
	ln   net.Listener
	pc   net.PacketConn
}

func startNode(t *testing.T, name, at string) *node {
	t.Helper()
	n := &node{name: name, at: at}
	n.start(t)
	t.Cleanup(n.stop)
	return n
}

func (n *node) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", n.at)
	if err != nil {
		t.Fatal(err)
	}
	n.ln = ln
	pc, err := net.ListenPacket("udp", n.at)
	if err != nil {
		t.Fatal(err)
	}
	n.pc = pc
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(n.name+"\n"), from)
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, n.name)
			c.Close()
		}
	}()
}

func (n *node) stop() { _ = n.ln.Close(); _ = n.pc.Close() }

// probeUDP sends a datagram to lbAddr from the address from and reads the
// answer: the name of the node that got it.
func probeUDP(lbAddr, from string) (string, error) {
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(lbAddr)))
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("who\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	return strings.TrimSpace(string(buf[:n])), err
}

// dataPathRig is an emulator serving on a loopback block of its own, with
// its DNS server, and three instances (node-a and node-b in us-east-1a,
// node-c in us-east-1c), each with a node answering at 30080.
type dataPathRig struct {
	c        *Cloud
	srv      *Server
	s        *sdk
	block    *loopback.Block
	ids      map[string]string // instance IDs by name
	nodes    map[string]*node
	resolver *net.Resolver
}

func newDataPathRig(t *testing.T) *dataPathRig {
	t.Helper()
	ctx := context.Background()
	block, err := loopback.Claim(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid()))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = block.Release() })
	c := New(Options{Network: block.Nodes, LoadBalancerAddresses: block.Ingress})
	srv, err := Serve(c, ServeOptions{Listen: "127.0.0.1:0", DNS: "127.0.0.1:0", Dir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	r := &dataPathRig{c: c, srv: srv, s: sdkFor(c, srv.URL, "AKIATEST"), block: block, ids: map[string]string{}, nodes: map[string]*node{}}
	for _, x := range []struct{ name, zone string }{{"node-a", "us-east-1a"}, {"node-b", "us-east-1a"}, {"node-c", "us-east-1c"}} {
		in := r.s.instance(t, x.name, x.zone)
		out, err := r.s.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{in.ID}})
		if err != nil {
			t.Fatal(err)
		}
		ip := aws.ToString(out.Reservations[0].Instances[0].PrivateIpAddress)
		if !block.Nodes.Contains(netip.MustParseAddr(ip)) {
			t.Fatalf("instance %s has private address %s, outside the VPC %s", in.Name, ip, block.Nodes)
		}
		r.ids[x.name] = in.ID
		r.nodes[x.name] = startNode(t, x.name, net.JoinHostPort(ip, "30080"))
	}
	r.resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", srv.DNS)
	}}
	return r
}

// subnet is the ID and CIDR of a zone's subnet.
func (r *dataPathRig) subnet(t *testing.T, zone string) ec2types.Subnet {
	t.Helper()
	out, err := r.s.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("availability-zone"), Values: []string{zone}}}})
	if err != nil || len(out.Subnets) != 1 {
		t.Fatalf("the subnet of %s: %v %v", zone, out, err)
	}
	return out.Subnets[0]
}

// resolve looks a load balancer's DNS name up at the emulator's DNS
// server and returns its address with port 80.
func (r *dataPathRig) resolve(t *testing.T, name string) string {
	t.Helper()
	addrs, err := r.resolver.LookupNetIP(context.Background(), "ip4", name)
	if err != nil || len(addrs) != 1 || !r.block.Ingress.Contains(addrs[0]) {
		t.Fatalf("resolving %s at %s: %v %v, want one address in %s", name, r.srv.DNS, addrs, err, r.block.Ingress)
	}
	return net.JoinHostPort(addrs[0].String(), "80")
}

// probe connects to lbAddr from the address from and reads the line the
// node that answers writes: its name.
func probe(lbAddr, from string) (string, error) {
	d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.Dial("tcp", lbAddr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// answeredBy probes from 127.0.0.1 until the answers come from exactly
// want.
func answeredBy(t *testing.T, lbAddr string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		seen := map[string]bool{}
		var errs []error
		for range 6 {
			got, err := probe(lbAddr, "127.0.0.1")
			if err != nil {
				errs = append(errs, err)
			}
			seen[got] = true
		}
		if len(errs) == 0 && len(seen) == len(want) && func() bool {
			for _, w := range want {
				if !seen[w] {
					return false
				}
			}
			return true
		}() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("answers through %s from %v (errors %v), want from exactly %v", lbAddr, seen, errors.Join(errs...), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dropped checks that a client from the address from hears nothing.
func dropped(t *testing.T, lbAddr, from string) {
	t.Helper()
	if got, err := probe(lbAddr, from); err == nil {
		t.Errorf("a client from %s was answered by %q, want it dropped", from, got)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("a client from %s: %v, want no answer (a timeout)", from, err)
	}
}

// goneAfterDelete waits until lbAddr refuses connections and the name no
// longer resolves.
func (r *dataPathRig) goneAfterDelete(t *testing.T, lbAddr, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := probe(lbAddr, "127.0.0.1")
		if err != nil && strings.Contains(err.Error(), "connection refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after DeleteLoadBalancer, %s still answers (%v)", lbAddr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := r.resolver.LookupNetIP(context.Background(), "ip4", name); err == nil {
		t.Errorf("after DeleteLoadBalancer, %s still resolves", name)
	}
}

// A classic load balancer made through the SDK as the CCM makes one
// carries traffic: its DNS name resolves at the emulator's DNS server, a
// client its security group admits reaches an InService instance and one
// it does not hears nothing; an instance that fails its health check, is
// stopped or sits outside the load balancer's zones gets no traffic.
func TestIntegrationDataPath(t *testing.T) {
	if testing.Short() {
		t.Skip("serves on loopback addresses and waits for health checks")
	}
	ctx := context.Background()
	r := newDataPathRig(t)
	s := r.s

	// The load balancer: one listener, a group admitting 127.0.0.1 only,
	// the subnet of us-east-1a, every instance registered.
	subnet := r.subnet(t, "us-east-1a")
	sg, err := s.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-elb-web"), Description: aws.String("web"), VpcId: subnet.VpcId})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg.GroupId, IpPermissions: []ec2types.IpPermission{{
		IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("127.0.0.1/32")}},
	}}}); err != nil {
		t.Fatal(err)
	}
	created, err := s.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String("web"),
		Listeners:        []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 80, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)}},
		Subnets:          []string{aws.ToString(subnet.SubnetId)},
		SecurityGroups:   []string{aws.ToString(sg.GroupId)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.elb.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String("web"), HealthCheck: &elbtypes.HealthCheck{
		Target: aws.String("TCP:30080"), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(2),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.elb.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String("web"),
		Instances: []elbtypes.Instance{{InstanceId: aws.String(r.ids["node-a"])}, {InstanceId: aws.String(r.ids["node-b"])}, {InstanceId: aws.String(r.ids["node-c"])}}}); err != nil {
		t.Fatal(err)
	}

	// The name resolves at the emulator's DNS server, to the upper half.
	name := aws.ToString(created.DNSName)
	lbAddr := r.resolve(t, name)
	// node-c's zone has no subnet of the load balancer: it gets nothing.
	answeredBy(t, lbAddr, "node-a", "node-b")
	// A client outside the group's CIDR hears nothing.
	dropped(t, lbAddr, "127.0.0.2")

	// node-b fails its health checks: out of service; back when it passes.
	r.nodes["node-b"].stop()
	answeredBy(t, lbAddr, "node-a")
	r.nodes["node-b"].start(t)
	answeredBy(t, lbAddr, "node-a", "node-b")

	// A stopped instance gets nothing.
	if _, err := r.c.Act(awsctl.InstanceAction{Name: "node-a", Action: "stop"}); err != nil {
		t.Fatal(err)
	}
	answeredBy(t, lbAddr, "node-b")

	// Deleted, the load balancer stops listening and its name is gone.
	if _, err := s.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String("web")}); err != nil {
		t.Fatal(err)
	}
	r.goneAfterDelete(t, lbAddr, name)
}

// A Network Load Balancer made as the CCM makes one (no security groups
// of its own; a target group on the node port, health-checked on the
// traffic port) keeps the client's address, so the nodes' security group
// decides: with only the group's rule for its own members, the health
// checks (from the load balancer's subnet) and clients are dropped and
// DescribeTargetHealth says so; with the CCM's rules (the client range on
// the node port, the subnet's CIDR for health), the instances of the load
// balancer's zone answer clients of the range, and no one else does.
func TestIntegrationNetworkLoadBalancerDataPath(t *testing.T) {
	if testing.Short() {
		t.Skip("serves on loopback addresses and waits for health checks")
	}
	ctx := context.Background()
	r := newDataPathRig(t)
	v2 := r.s.elbv2(r.srv.URL)
	subnet := r.subnet(t, "us-east-1a")
	created, err := v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String("net"), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		SubnetMappings: []elbv2types.SubnetMapping{{SubnetId: subnet.SubnetId}}, SecurityGroups: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	lbARN := created.LoadBalancers[0].LoadBalancerArn
	tg, err := v2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: aws.String("k8s-ns-net-0123456789"), Protocol: elbv2types.ProtocolEnumTcp,
		Port: aws.Int32(30080), VpcId: subnet.VpcId, TargetType: elbv2types.TargetTypeEnumInstance,
		HealthCheckProtocol: elbv2types.ProtocolEnumTcp, HealthCheckPort: aws.String("traffic-port"), HealthCheckIntervalSeconds: aws.Int32(10),
		HealthyThresholdCount: aws.Int32(2), UnhealthyThresholdCount: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	tgARN := tg.TargetGroups[0].TargetGroupArn
	var targets []elbv2types.TargetDescription
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		targets = append(targets, elbv2types.TargetDescription{Id: aws.String(r.ids[n]), Port: aws.Int32(30080)})
	}
	if _, err := v2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: tgARN, Targets: targets}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.CreateListener(ctx, &elbv2.CreateListenerInput{LoadBalancerArn: lbARN, Port: aws.Int32(80), Protocol: elbv2types.ProtocolEnumTcp,
		DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: tgARN}}}); err != nil {
		t.Fatal(err)
	}
	name := aws.ToString(created.LoadBalancers[0].DNSName)
	lbAddr := r.resolve(t, name)

	// health waits until DescribeTargetHealth reports want by node name.
	health := func(want map[string]elbv2types.TargetHealthStateEnum) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			out, err := v2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tgARN})
			got := map[string]elbv2types.TargetHealthStateEnum{}
			if err == nil {
				for _, d := range out.TargetHealthDescriptions {
					for n, id := range r.ids {
						if aws.ToString(d.Target.Id) == id {
							got[n] = d.TargetHealth.State
						}
					}
				}
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("target health %v (%v), want %v", got, err, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	health(map[string]elbv2types.TargetHealthStateEnum{"node-a": "unhealthy", "node-b": "unhealthy", "node-c": "unavailable"})
	if got, err := probe(lbAddr, "127.0.0.1"); err == nil {
		t.Errorf("with every target unhealthy, a client was answered by %q", got)
	}

	// The CCM's rules on the nodes' group: the client range on the node
	// port, and the load balancer's subnet for its health checks.
	if _, err := r.s.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(r.c.st.nodeGroup), IpPermissions: []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("127.0.0.1/32"), Description: aws.String("kubernetes.io/rule/nlb/client=net")}}},
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080), IpRanges: []ec2types.IpRange{{CidrIp: subnet.CidrBlock, Description: aws.String("kubernetes.io/rule/nlb/health=net")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	health(map[string]elbv2types.TargetHealthStateEnum{"node-a": "healthy", "node-b": "healthy", "node-c": "unavailable"})
	answeredBy(t, lbAddr, "node-a", "node-b")
	dropped(t, lbAddr, "127.0.0.2")

	// A UDP listener: its group health-checks over TCP on the traffic
	// port, as the CCM configures one, and the nodes answer; the client
	// range's rule for UDP lets 127.0.0.1's datagrams in, and no one
	// else's.
	udpGroup, err := v2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: aws.String("k8s-ns-dns-0123456789"), Protocol: elbv2types.ProtocolEnumUdp,
		Port: aws.Int32(30080), VpcId: subnet.VpcId, TargetType: elbv2types.TargetTypeEnumInstance,
		HealthCheckProtocol: elbv2types.ProtocolEnumTcp, HealthCheckPort: aws.String("traffic-port"), HealthyThresholdCount: aws.Int32(2), UnhealthyThresholdCount: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: udpGroup.TargetGroups[0].TargetGroupArn, Targets: targets}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.CreateListener(ctx, &elbv2.CreateListenerInput{LoadBalancerArn: lbARN, Port: aws.Int32(53), Protocol: elbv2types.ProtocolEnumUdp,
		DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: udpGroup.TargetGroups[0].TargetGroupArn}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(r.c.st.nodeGroup), IpPermissions: []ec2types.IpPermission{
		{IpProtocol: aws.String("udp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("127.0.0.1/32"), Description: aws.String("kubernetes.io/rule/nlb/client=net")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	udpAddr := strings.TrimSuffix(lbAddr, ":80") + ":53"
	seen := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for !seen["node-a"] || !seen["node-b"] {
		if got, err := probeUDP(udpAddr, "127.0.0.1"); err == nil {
			seen[got] = true
		}
		if seen["node-c"] {
			t.Fatal("a datagram reached node-c, outside the load balancer's zone")
		}
		if time.Now().After(deadline) {
			t.Fatalf("UDP through %s: answers from %v, want node-a and node-b", udpAddr, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, err := probeUDP(udpAddr, "127.0.0.2"); err == nil {
		t.Errorf("a datagram from 127.0.0.2 was answered by %q, want it dropped", got)
	}

	if _, err := v2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: lbARN}); err != nil {
		t.Fatal(err)
	}
	r.goneAfterDelete(t, lbAddr, name)

	// An NLB with a security group of its own (the CCM's
	// NLBSecurityGroupMode Managed): the group admits or drops a client at
	// the listener's port before the targets' groups are asked, which
	// already admit 127.0.0.1 on the node port.
	own, err := r.s.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("k8s-ns-guarded-0123456789"),
		Description: aws.String("[k8s] Managed SecurityGroup for LoadBalancer"), VpcId: subnet.VpcId})
	if err != nil {
		t.Fatal(err)
	}
	allow := func(cidr string) {
		t.Helper()
		if _, err := r.s.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: own.GroupId, IpPermissions: []ec2types.IpPermission{
			{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: aws.String(cidr)}}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	allow("127.0.0.3/32")
	guarded, err := v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String("guarded"), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		SubnetMappings: []elbv2types.SubnetMapping{{SubnetId: subnet.SubnetId}}, SecurityGroups: []string{aws.ToString(own.GroupId)}})
	if err != nil {
		t.Fatal(err)
	}
	guardedGroup, err := v2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: aws.String("k8s-ns-guarded-0123456789"), Protocol: elbv2types.ProtocolEnumTcp,
		Port: aws.Int32(30080), VpcId: subnet.VpcId, TargetType: elbv2types.TargetTypeEnumInstance,
		HealthCheckProtocol: elbv2types.ProtocolEnumTcp, HealthCheckPort: aws.String("traffic-port"), HealthyThresholdCount: aws.Int32(2), UnhealthyThresholdCount: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: guardedGroup.TargetGroups[0].TargetGroupArn, Targets: targets}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.CreateListener(ctx, &elbv2.CreateListenerInput{LoadBalancerArn: guarded.LoadBalancers[0].LoadBalancerArn, Port: aws.Int32(80), Protocol: elbv2types.ProtocolEnumTcp,
		DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: guardedGroup.TargetGroups[0].TargetGroupArn}}}); err != nil {
		t.Fatal(err)
	}
	tgARN = guardedGroup.TargetGroups[0].TargetGroupArn
	health(map[string]elbv2types.TargetHealthStateEnum{"node-a": "healthy", "node-b": "healthy", "node-c": "unavailable"})
	guardedAddr := r.resolve(t, aws.ToString(guarded.LoadBalancers[0].DNSName))
	dropped(t, guardedAddr, "127.0.0.1")
	allow("127.0.0.1/32")
	answeredBy(t, guardedAddr, "node-a", "node-b")
}

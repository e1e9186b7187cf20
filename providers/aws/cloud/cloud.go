// Package cloud is an emulator of the parts of EC2 and classic Elastic
// Load Balancing that the AWS CCM (k8s.io/cloud-provider-aws v1.37.1)
// calls: stateful, speaking their Query protocols over HTTP, so that the
// CCM's own aws-sdk-go-v2 clients talk to it through the cloud config's
// [ServiceOverride] sections as they would to AWS.
//
// One region, one VPC, one subnet per availability zone (tagged for the
// cluster and for internet-facing load balancers), one route table (the
// VPC's main one, tagged for the cluster: the route controller's), one
// security group for the nodes (tagged for the cluster: the one the CCM
// opens to its load balancers). Instances are made, stopped and
// terminated through the control channel (package awsctl), each with one
// network interface; a node's name is its instance's private DNS name, as
// the CCM maps them.
//
// Every request must be signed with SigV4 (the signature is not checked);
// the access key ID of its credential is the caller the call log records,
// so each CCM process gets its own key.
//
// Floor: a provider. It links nothing of this repository outside
// providers/.
package cloud

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
)

// Options shape the emulated account.
type Options struct {
	Region    string   // default us-east-1
	Zones     []string // zone names; default <region>a, b, c
	ClusterID string   // the KubernetesClusterID the CCM is given; default ccm-conformance
	Account   string   // the account ID; default 123456789012
	// Network is the VPC's IPv4 CIDR, at most a /16, whose first /24s are
	// the zones' subnets; default 10.0.0.0/16. Give it a loopback range
	// (cmd/aws-cloud does) and instances' private addresses are where the
	// simulated nodes answer.
	Network netip.Prefix
	// LoadBalancerAddresses, when set, gives each classic load balancer
	// an address of its own there, where the data path serves it and the
	// DNS server resolves its name (dataplane.go, dns.go). Unset: load
	// balancers are API objects only.
	LoadBalancerAddresses netip.Prefix
	// NLBSecurityGroupMode is written to the cloud config's [Global]
	// when set: "Managed" makes the CCM give each Network Load Balancer a
	// security group of its own (k8s.io/cloud-provider-aws
	// pkg/providers/v1/config, the only value it accepts).
	NLBSecurityGroupMode string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Cloud is one emulated account: the API handler and the control handler
// share its state.
type Cloud struct {
	st            *state
	now           func() time.Time
	nlbGroupsMode string // Options.NLBSecurityGroupMode

	logMu sync.Mutex
	calls []awsctl.Call
	seq   int64

	faultMu sync.Mutex
	faults  map[string]float64
}

// New makes the account's fixed inventory.
func New(o Options) *Cloud {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{o.Region + "a", o.Region + "b", o.Region + "c"}
	}
	if o.ClusterID == "" {
		o.ClusterID = "ccm-conformance"
	}
	if o.Account == "" {
		o.Account = "123456789012"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if !o.Network.IsValid() {
		o.Network = netip.MustParsePrefix("10.0.0.0/16")
	}
	s := &state{
		region: o.Region, account: o.Account, clusterID: o.ClusterID,
		vpcCIDR:  o.Network.Masked(),
		lbAddrs:  o.LoadBalancerAddresses.Masked(),
		vpcCIDR6: netip.MustParsePrefix("2600:1f18:c0f:e000::/56"),
		subnets:  map[string]*subnet{}, instances: map[string]*instance{}, routeTables: map[string]*routeTable{},
		groups: map[string]*securityGroup{}, elbs: map[string]*classicLB{}, nextIP: map[string]uint32{},
		nlbs: map[string]*networkLB{}, targetGroups: map[string]*targetGroup{}, listeners: map[string]*v2Listener{},
	}
	s.vpcID = s.newID("vpc")
	s.igwID = s.newID("igw")
	abbrev := regionAbbrev(o.Region)
	base := s.vpcCIDR.Addr().As4()
	for i, name := range o.Zones {
		sn := &subnet{
			id: s.newID("subnet"), zone: name,
			cidr:  netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1], base[2] + byte(i), 0}), 24),
			cidr6: netip.PrefixFrom(nth6(s.vpcCIDR6.Addr(), i), 64),
			tags: tags{
				{Key: s.clusterTagKey(), Value: "shared"},
				{Key: "kubernetes.io/role/elb", Value: "1"},
				{Key: "Name", Value: "ccm-conformance-" + name},
			},
		}
		s.subnets[sn.id] = sn
		s.zones = append(s.zones, zone{name: name, id: fmt.Sprintf("%s-az%d", abbrev, i+1), subnet: sn.id})
	}
	rt := &routeTable{id: s.newID("rtb"), tags: tags{{Key: s.clusterTagKey(), Value: "owned"}}}
	rt.routes = []route{
		{destination: s.vpcCIDR.String(), gateway: "local"},
		{destination: "0.0.0.0/0", gateway: s.igwID},
	}
	s.routeTables[rt.id] = rt
	ng := &securityGroup{
		id: s.newID("sg"), name: "ccm-conformance-nodes", description: "the cluster's nodes",
		tags: tags{{Key: s.clusterTagKey(), Value: "owned"}},
	}
	ng.ingress = []permission{{protocol: "-1", group: ng.id}}
	s.groups[ng.id] = ng
	s.nodeGroup = ng.id
	c := &Cloud{st: s, now: o.Now, nlbGroupsMode: o.NLBSecurityGroupMode, faults: map[string]float64{}}
	// An instance of the VPC that is no node of the cluster (no cluster
	// tag): the target of a route an operator points at a machine outside
	// the cluster.
	if _, err := c.CreateInstance(awsctl.CreateInstance{Name: BastionName, InstanceType: "t3.micro"}); err != nil {
		panic(err)
	}
	bastion := s.byName(BastionName)
	bastion.tags = tags{{Key: "Name", Value: "bastion"}}
	return c
}

// regionAbbrev is the prefix of the region's zone IDs (us-east-1 → use1).
func regionAbbrev(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) != 3 {
		return region
	}
	dir := parts[1]
	if len(dir) > 1 {
		dir = dir[:1]
	}
	return parts[0] + dir + parts[2]
}

func nth6(base netip.Addr, i int) netip.Addr {
	b := base.As16()
	b[7] = byte(i)
	return netip.AddrFrom16(b)
}

// BastionName is the private DNS name of the VPC's one instance that is no
// node: it has no cluster tag.
const BastionName = "bastion.ec2.internal"

// Region is the emulated region.
func (c *Cloud) Region() string { return c.st.region }

// CloudConfigGlobal is what the CCM's [Global] section needs to run
// without instance metadata: the zone of "its own" instance, the VPC, a
// subnet and the cluster ID.
func (c *Cloud) CloudConfigGlobal() (zoneName, vpc, subnet, clusterID string) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	z := c.st.zones[0]
	return z.name, c.st.vpcID, z.subnet, c.st.clusterID
}

// credentialPattern finds the access key ID in a SigV4 Authorization
// header: Credential=AKID/date/region/service/aws4_request.
var credentialPattern = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/,]+)/[0-9]{8}/([^/]+)/([^/]+)/aws4_request`)

// ServeHTTP serves the EC2 and Elastic Load Balancing APIs at one URL: the
// Version parameter tells them apart, as their Query protocols carry it.
func (c *Cloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := fmt.Sprintf("%08x-c0ff-ee00-0000-%012x", rand.Uint32(), rand.Uint64()&0xffffffffffff)
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "malformed form: "+err.Error(), http.StatusBadRequest)
		return
	}
	for k, v := range r.URL.Query() {
		form[k] = v
	}
	version, action := form.Get("Version"), form.Get("Action")
	var ops map[string]func(*state, *params) (any, *apiError)
	ec2 := version == EC2Version
	switch version {
	case EC2Version:
		ops = ec2Ops()
	case ELBVersion:
		ops = elbOps()
	case ELBv2Version:
		ops = elbv2Ops()
	default:
		writeError(w, ec2, requestID, &apiError{status: 400, code: "InvalidAction", message: fmt.Sprintf("API version %q is not emulated (EC2 %s, Elastic Load Balancing %s, Elastic Load Balancing v2 %s)", version, EC2Version, ELBVersion, ELBv2Version)})
		return
	}
	m := credentialPattern.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		writeError(w, ec2, requestID, &apiError{status: 403, code: "MissingAuthenticationToken", message: "Request is missing a SigV4 Authentication Token"})
		return
	}
	caller := m[1]
	op, ok := ops[action]
	if !ok {
		writeError(w, ec2, requestID, &apiError{status: 400, code: "InvalidAction", message: fmt.Sprintf("The action %s is not valid for this web service", action)})
		return
	}
	p := parseParams(form)

	c.st.mu.Lock()
	resource := c.st.resourceOf(action, p)
	var out any
	aerr := c.fault(caller, action)
	if aerr == nil {
		out, aerr = op(c.st, p)
	}
	c.st.mu.Unlock()
	c.log(caller, action, resource, aerr)

	if aerr != nil {
		writeError(w, ec2, requestID, aerr)
		return
	}
	inner, err := innerXML(out)
	var doc any
	if ec2 {
		doc = ec2Response{XMLName: xml.Name{Local: action + "Response"}, Xmlns: ec2Namespace, RequestID: requestID, Body: inner}
	} else {
		ns := elbNamespace
		if version == ELBv2Version {
			ns = elbv2Namespace
		}
		doc = queryResponse{XMLName: xml.Name{Local: action + "Response"}, Xmlns: ns, RequestID: requestID,
			Result: queryResult{XMLName: xml.Name{Local: action + "Result"}, Body: inner}}
	}
	var data []byte
	if err == nil {
		data, err = xml.Marshal(doc)
	}
	if err != nil {
		writeError(w, ec2, requestID, &apiError{status: 500, code: "InternalError", message: "encoding the answer: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("x-amzn-RequestId", requestID)
	io.WriteString(w, xml.Header)
	w.Write(data)
}

// innerXML is the elements of an answer's fields, without an element of
// its own: they go inside the action's response (EC2) or result element.
func innerXML(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := xml.NewEncoder(&b).EncodeElement(v, xml.StartElement{Name: xml.Name{Local: "x"}}); err != nil {
		return nil, err
	}
	inner := bytes.TrimPrefix(b.Bytes(), []byte("<x>"))
	return bytes.TrimSuffix(inner, []byte("</x>")), nil
}

func writeError(w http.ResponseWriter, ec2 bool, requestID string, e *apiError) {
	var doc any = queryErrorBody{Type: "Sender", Code: e.code, Message: e.message, RequestID: requestID}
	if e.status >= 500 {
		doc = queryErrorBody{Type: "Receiver", Code: e.code, Message: e.message, RequestID: requestID}
	}
	if ec2 {
		doc = ec2ErrorBody{Code: e.code, Message: e.message, RequestID: requestID}
	}
	data, _ := xml.Marshal(doc)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status)
	io.WriteString(w, xml.Header)
	w.Write(data)
}

// ---- the call log

// operationOf names an action as the driver protocol's calls list does:
// the load balancer changes are EnsureLoadBalancer, its deletion
// EnsureLoadBalancerDeleted, the routes' CreateRoute and DeleteRoute;
// everything else keeps its AWS name.
func operationOf(action string) string {
	switch action {
	case "CreateLoadBalancer", "CreateLoadBalancerListeners", "DeleteLoadBalancerListeners",
		"RegisterInstancesWithLoadBalancer", "DeregisterInstancesFromLoadBalancer", "ConfigureHealthCheck",
		"ModifyLoadBalancerAttributes", "ApplySecurityGroupsToLoadBalancer", "AttachLoadBalancerToSubnets",
		"DetachLoadBalancerFromSubnets", "CreateLoadBalancerPolicy", "SetLoadBalancerPoliciesForBackendServer",
		"SetLoadBalancerPoliciesOfListener", "AddTags",
		// Network Load Balancers' (Elastic Load Balancing v2): the CCM
		// deletes listeners and target groups while it updates one.
		"SetSecurityGroups", "CreateTargetGroup", "ModifyTargetGroup", "DeleteTargetGroup", "ModifyTargetGroupAttributes",
		"RegisterTargets", "DeregisterTargets", "CreateListener", "ModifyListener", "DeleteListener":
		return "EnsureLoadBalancer"
	case "DeleteLoadBalancer":
		return "EnsureLoadBalancerDeleted"
	}
	return action
}

// resourceOf names what a call is about by the name the harness knows it
// by: instances by their private DNS names (the nodes' names), load
// balancers by their names.
func (s *state) resourceOf(action string, p *params) string {
	switch action {
	case "DescribeInstances", "DescribeInstanceTopology":
		var names []string
		for _, id := range p.strs("InstanceId") {
			if in := s.instances[id]; in != nil {
				names = append(names, in.privateDNS)
			} else {
				names = append(names, id)
			}
		}
		for _, f := range p.filters() {
			if f.name == "private-dns-name" {
				names = append(names, f.values...)
			}
		}
		return strings.Join(names, ",")
	case "CreateRoute", "DeleteRoute":
		return p.str("DestinationCidrBlock") + p.str("DestinationIpv6CidrBlock")
	}
	if n := p.str("LoadBalancerName"); n != "" {
		return n
	}
	if action == "CreateLoadBalancer" && p.has("Name") { // Elastic Load Balancing v2's
		return p.str("Name")
	}
	// Elastic Load Balancing v2 names a load balancer by its ARN, which
	// holds its name, or a target group, whose load balancers' names are
	// the resource.
	if arn := p.str("LoadBalancerArn") + p.str("ListenerArn"); arn != "" {
		return nlbNameOfARN(arn)
	}
	if arn := p.str("TargetGroupArn"); arn != "" {
		var names []string
		for _, lb := range s.targetGroupLBs(arn) {
			names = append(names, nlbNameOfARN(lb))
		}
		return strings.Join(names, ",")
	}
	if names := p.strs("Names"); len(names) > 0 {
		return strings.Join(names, ",")
	}
	return strings.Join(p.strs("LoadBalancerNames"), ",")
}

func (c *Cloud) log(caller, action, resource string, err *apiError) {
	if caller == awsctl.DriverAccessKeyID {
		return
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	c.seq++
	call := awsctl.Call{Seq: c.seq, Time: c.now().UTC(), Operation: operationOf(action), Action: action, Caller: caller, Resource: resource}
	if err != nil {
		call.Error = err.Error()
	}
	c.calls = append(c.calls, call)
}

// Calls answers a calls query.
func (c *Cloud) Calls(q awsctl.CallsQuery) awsctl.Calls {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	out := awsctl.Calls{Calls: []awsctl.Call{}, Last: q.After}
	for _, call := range c.calls {
		if call.Seq <= q.After {
			continue
		}
		out.Last = call.Seq
		if len(q.Operations) > 0 && !slices.Contains(q.Operations, call.Operation) {
			continue
		}
		out.Calls = append(out.Calls, call)
	}
	return out
}

// ---- faults

// faultTarget is the driver protocol's fault target an action belongs to.
func faultTarget(action string) string {
	switch {
	case action == "DescribeInstances":
		return "instances"
	case action == "DescribeRouteTables" || action == "CreateRoute" || action == "DeleteRoute":
		return "routes"
	case operationOf(action) != action || strings.Contains(action, "LoadBalancer") || strings.Contains(action, "Target") || action == "DescribeListeners":
		return "loadbalancers"
	}
	return ""
}

// fault answers an injected error for the CCM's calls, never the
// driver's. Called with the state locked.
func (c *Cloud) fault(caller, action string) *apiError {
	if caller == awsctl.DriverAccessKeyID {
		return nil
	}
	c.faultMu.Lock()
	rate := c.faults[faultTarget(action)]
	c.faultMu.Unlock()
	if rate > 0 && rand.Float64() < rate {
		return &apiError{status: 503, code: "Unavailable", message: "injected fault: the service is unavailable"}
	}
	return nil
}

// SetFault sets the error rate of a target (0 clears it).
func (c *Cloud) SetFault(target string, rate float64) error {
	switch target {
	case "instances", "loadbalancers", "routes":
	default:
		return fmt.Errorf("unknown fault target %q (instances, loadbalancers, routes)", target)
	}
	if rate < 0 || rate > 1 {
		return fmt.Errorf("error rate %v is not between 0 and 1", rate)
	}
	c.faultMu.Lock()
	defer c.faultMu.Unlock()
	if rate == 0 {
		delete(c.faults, target)
	} else {
		c.faults[target] = rate
	}
	return nil
}

// ClearFaults removes every fault.
func (c *Cloud) ClearFaults() {
	c.faultMu.Lock()
	defer c.faultMu.Unlock()
	clear(c.faults)
}

// ---- instances, through the control channel

// ErrNoInstance is the error of an action on an instance that does not
// exist (or is terminated).
var ErrNoInstance = fmt.Errorf("no such instance")

// CreateInstance makes a running instance in the zone (default the first)
// with one network interface: a private IPv4 address of the zone's subnet,
// a public one, an IPv6 one when the families ask for it, and the
// instance's private DNS name req.Name.
func (c *Cloud) CreateInstance(req awsctl.CreateInstance) (awsctl.Instance, error) {
	s := c.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Name == "" {
		return awsctl.Instance{}, fmt.Errorf("an instance needs a name")
	}
	for _, in := range s.instances {
		if in.privateDNS == req.Name && in.state != "terminated" {
			return awsctl.Instance{}, fmt.Errorf("an instance named %q exists: %s", req.Name, in.id)
		}
	}
	z := s.zones[0]
	if req.Zone != "" {
		found := false
		for _, x := range s.zones {
			if x.name == req.Zone {
				z, found = x, true
			}
		}
		if !found {
			return awsctl.Instance{}, fmt.Errorf("no zone %q in %s", req.Zone, s.region)
		}
	}
	families := req.IPFamilies
	if len(families) == 0 {
		families = []string{"IPv4"}
	}
	sn := s.subnets[z.subnet]
	in := &instance{
		id: s.newID("i"), privateDNS: req.Name, instanceType: req.InstanceType, zone: z.name, subnet: sn.id,
		state: "running", groups: []string{s.nodeGroup}, srcDstCheck: true, launched: c.now(),
		tags: tags{{Key: s.clusterTagKey(), Value: "owned"}, {Key: "Name", Value: req.Name}},
	}
	if in.instanceType == "" {
		in.instanceType = "m5.large"
	}
	s.nextIP[sn.id]++
	host := s.nextIP[sn.id] + 9
	if slices.Contains(families, "IPv4") {
		ip := sn.cidr.Addr().As4()
		ip[3] = byte(host)
		in.privateIPs = []string{netip.AddrFrom4(ip).String()}
		pub := netip.AddrFrom4([4]byte{203, 0, 113, byte(len(s.order) + 10)})
		in.publicIP = pub.String()
		in.publicDNS = fmt.Sprintf("ec2-%s.compute-1.amazonaws.com", strings.ReplaceAll(pub.String(), ".", "-"))
	}
	if slices.Contains(families, "IPv6") {
		b := sn.cidr6.Addr().As16()
		binary.BigEndian.PutUint32(b[12:], host)
		in.ipv6 = []string{netip.AddrFrom16(b).String()}
	}
	s.instances[in.id] = in
	s.order = append(s.order, in.id)
	return awsctl.Instance{ID: in.id, Name: in.privateDNS}, nil
}

func (s *state) byName(name string) *instance {
	for _, id := range s.order {
		if in := s.instances[id]; in.privateDNS == name && in.state != "terminated" {
			return in
		}
	}
	return nil
}

// Act terminates, stops, starts or re-addresses the instance named req.Name.
func (c *Cloud) Act(req awsctl.InstanceAction) (awsctl.Instance, error) {
	s := c.st
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.byName(req.Name)
	if in == nil {
		return awsctl.Instance{}, fmt.Errorf("%w named %q", ErrNoInstance, req.Name)
	}
	switch req.Action {
	case "terminate":
		in.state = "terminated"
		for _, lb := range s.elbs {
			lb.instances = slices.DeleteFunc(lb.instances, func(id string) bool { return id == in.id })
		}
	case "stop":
		in.state = "stopped"
	case "start":
		in.state = "running"
	case "set-addresses":
		if err := s.setAddresses(in, req.Addresses); err != nil {
			return awsctl.Instance{}, err
		}
	default:
		return awsctl.Instance{}, fmt.Errorf("unknown action %q (terminate, stop, start, set-addresses)", req.Action)
	}
	return awsctl.Instance{ID: in.id, Name: in.privateDNS}, nil
}

// setAddresses gives the instance the addresses as EC2 would hold them:
// InternalIP addresses of IPv4 are its interface's private addresses,
// InternalIP addresses of IPv6 its IPv6 addresses, one ExternalIP its
// public address, one ExternalDNS its public DNS name. InternalDNS and
// Hostname are its private DNS name, which is the node's name and cannot
// change. What EC2 cannot hold is refused.
func (s *state) setAddresses(in *instance, addrs []awsctl.Address) error {
	var v4, v6 []string
	var public, publicDNS string
	for _, a := range addrs {
		switch a.Type {
		case "InternalIP", "ExternalIP":
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				return fmt.Errorf("address %q of type %s is not an IP address", a.Address, a.Type)
			}
			switch {
			case a.Type == "InternalIP" && ip.Is4():
				v4 = append(v4, ip.String())
			case a.Type == "InternalIP":
				v6 = append(v6, ip.String())
			case public != "" || !ip.Is4():
				return fmt.Errorf("EC2 gives an instance one public IPv4 address, not %q as well", a.Address)
			default:
				public = ip.String()
			}
		case "ExternalDNS":
			if publicDNS != "" {
				return fmt.Errorf("EC2 gives an instance one public DNS name")
			}
			publicDNS = a.Address
		case "InternalDNS", "Hostname":
			if a.Address != in.privateDNS {
				return fmt.Errorf("an instance's %s is its private DNS name %q, the node's name, which cannot change", a.Type, in.privateDNS)
			}
		default:
			return fmt.Errorf("unknown address type %q", a.Type)
		}
	}
	in.privateIPs, in.ipv6, in.publicIP, in.publicDNS = v4, v6, public, publicDNS
	return nil
}

func (c *Cloud) lastSeq() int64 {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return c.seq
}

package cloud

import (
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ELBVersion is the API version of classic Elastic Load Balancing.
const ELBVersion = "2012-06-01"

const elbNamespace = "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/"

// elbOps is every classic Elastic Load Balancing action the emulator
// serves: the methods of the CCM's ELB interface (k8s.io/cloud-provider-aws
// v1.37.1, pkg/providers/v1/aws.go). TestOperationsCoverTheCCM holds that.
func elbOps() map[string]func(*state, *params) (any, *apiError) {
	return map[string]func(*state, *params) (any, *apiError){
		"CreateLoadBalancer":                      (*state).createLB,
		"DeleteLoadBalancer":                      (*state).deleteLB,
		"DescribeLoadBalancers":                   (*state).describeLBs,
		"AddTags":                                 (*state).addLBTags,
		"RegisterInstancesWithLoadBalancer":       (*state).registerInstances,
		"DeregisterInstancesFromLoadBalancer":     (*state).deregisterInstances,
		"CreateLoadBalancerPolicy":                (*state).createLBPolicy,
		"SetLoadBalancerPoliciesForBackendServer": (*state).setBackendPolicies,
		"SetLoadBalancerPoliciesOfListener":       (*state).setListenerPolicies,
		"DescribeLoadBalancerPolicies":            (*state).describeLBPolicies,
		"DetachLoadBalancerFromSubnets":           (*state).detachSubnets,
		"AttachLoadBalancerToSubnets":             (*state).attachSubnets,
		"CreateLoadBalancerListeners":             (*state).createListeners,
		"DeleteLoadBalancerListeners":             (*state).deleteListeners,
		"ApplySecurityGroupsToLoadBalancer":       (*state).applyGroups,
		"ConfigureHealthCheck":                    (*state).configureHealthCheck,
		"DescribeLoadBalancerAttributes":          (*state).describeLBAttributes,
		"ModifyLoadBalancerAttributes":            (*state).modifyLBAttributes,
	}
}

// queryResponse wraps a Query-protocol answer: <ActionResponse
// xmlns=...><ActionResult>...</ActionResult><ResponseMetadata>.
type queryResponse struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	Result    queryResult
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

type queryResult struct {
	XMLName xml.Name
	Body    []byte `xml:",innerxml"`
}

func (s *state) lb(name string) (*classicLB, *apiError) {
	lb := s.elbs[name]
	if lb == nil {
		return nil, errCode("LoadBalancerNotFound", "There is no ACTIVE Load Balancer named '%s'", name)
	}
	return lb, nil
}

func readListeners(p *params) ([]listener, *apiError) {
	var out []listener
	for _, l := range p.list("Listeners") {
		x := listener{
			protocol: strings.ToUpper(l.str("Protocol")), port: l.int32("LoadBalancerPort"),
			instanceProtocol: strings.ToUpper(l.str("InstanceProtocol")), instancePort: l.int32("InstancePort"),
			certificate: l.str("SSLCertificateId"),
		}
		if x.instanceProtocol == "" {
			x.instanceProtocol = x.protocol
		}
		if !slices.Contains([]string{"TCP", "SSL", "HTTP", "HTTPS"}, x.protocol) {
			return nil, errCode("ValidationError", "Invalid protocol %q of a listener", l.str("Protocol"))
		}
		if x.port < 1 || x.port > 65535 || x.instancePort < 1 || x.instancePort > 65535 {
			return nil, errCode("ValidationError", "listener ports must be 1 to 65535 (%d -> %d)", x.port, x.instancePort)
		}
		out = append(out, x)
	}
	return out, nil
}

func (s *state) createLB(p *params) (any, *apiError) {
	name := p.str("LoadBalancerName")
	if name == "" || len(name) > 32 {
		return nil, errCode("ValidationError", "LoadBalancerName must be 1 to 32 characters: %q", name)
	}
	listeners, err := readListeners(p)
	if err != nil {
		return nil, err
	}
	if len(listeners) == 0 {
		return nil, errCode("ValidationError", "at least one listener is required")
	}
	if old := s.elbs[name]; old != nil {
		return nil, errCode("DuplicateLoadBalancerName", "Load Balancer named '%s' already exists", name)
	}
	subnets := p.strs("Subnets")
	if len(subnets) == 0 {
		return nil, errCode("ValidationError", "a load balancer in a VPC needs Subnets")
	}
	for _, sn := range subnets {
		if s.subnets[sn] == nil {
			return nil, errCode("SubnetNotFound", "subnet %s does not exist", sn)
		}
	}
	groups := p.strs("SecurityGroups")
	for _, g := range groups {
		if s.groups[g] == nil {
			return nil, errCode("InvalidSecurityGroup", "security group %s does not exist", g)
		}
	}
	scheme := p.str("Scheme")
	if scheme == "" {
		scheme = "internet-facing"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	dns := fmt.Sprintf("%s-%d.%s.elb.amazonaws.com", name, h.Sum32()%1000000000, s.region)
	if scheme == "internal" {
		dns = "internal-" + dns
	}
	lb := &classicLB{
		name: name, dnsName: dns, addr: s.nextLBAddr(), scheme: scheme, subnets: subnets, groups: groups, listeners: listeners,
		tags: tags(nil).set(p.tags("Tags")), backendPolicies: map[int32][]string{},
		health:     healthCheck{target: fmt.Sprintf("TCP:%d", listeners[0].instancePort), interval: 30, timeout: 5, healthy: 10, unhealthy: 2},
		attributes: lbAttributes{drainingTimeout: 300, idleTimeout: 60},
		created:    time.Now().UTC(),
	}
	s.elbs[name] = lb
	return struct {
		DNSName string `xml:"DNSName"`
	}{dns}, nil
}

func (s *state) deleteLB(p *params) (any, *apiError) {
	// Deleting a load balancer that does not exist succeeds, as in AWS.
	delete(s.elbs, p.str("LoadBalancerName"))
	return struct{}{}, nil
}

type xmlListener struct {
	Protocol         string `xml:"Protocol"`
	LoadBalancerPort int32  `xml:"LoadBalancerPort"`
	InstanceProtocol string `xml:"InstanceProtocol"`
	InstancePort     int32  `xml:"InstancePort"`
	SSLCertificateID string `xml:"SSLCertificateId,omitempty"`
}

type xmlListenerDescription struct {
	Listener    xmlListener      `xml:"Listener"`
	PolicyNames *members[string] `xml:"PolicyNames"`
}

type xmlHealthCheck struct {
	Target             string `xml:"Target"`
	Interval           int32  `xml:"Interval"`
	Timeout            int32  `xml:"Timeout"`
	UnhealthyThreshold int32  `xml:"UnhealthyThreshold"`
	HealthyThreshold   int32  `xml:"HealthyThreshold"`
}

type xmlInstanceRef struct {
	InstanceID string `xml:"InstanceId"`
}

type xmlBackend struct {
	InstancePort int32            `xml:"InstancePort"`
	PolicyNames  *members[string] `xml:"PolicyNames"`
}

type xmlLB struct {
	LoadBalancerName          string                           `xml:"LoadBalancerName"`
	DNSName                   string                           `xml:"DNSName"`
	CanonicalHostedZoneName   string                           `xml:"CanonicalHostedZoneName"`
	CanonicalHostedZoneNameID string                           `xml:"CanonicalHostedZoneNameID"`
	ListenerDescriptions      *members[xmlListenerDescription] `xml:"ListenerDescriptions"`
	Policies                  struct {
		Other *members[string] `xml:"OtherPolicies"`
	} `xml:"Policies"`
	BackendServerDescriptions *members[xmlBackend]     `xml:"BackendServerDescriptions"`
	AvailabilityZones         *members[string]         `xml:"AvailabilityZones"`
	Subnets                   *members[string]         `xml:"Subnets"`
	VPCID                     string                   `xml:"VPCId"`
	Instances                 *members[xmlInstanceRef] `xml:"Instances"`
	HealthCheck               xmlHealthCheck           `xml:"HealthCheck"`
	SourceSecurityGroup       struct {
		OwnerAlias string `xml:"OwnerAlias"`
		GroupName  string `xml:"GroupName"`
	} `xml:"SourceSecurityGroup"`
	SecurityGroups *members[string] `xml:"SecurityGroups"`
	CreatedTime    string           `xml:"CreatedTime"`
	Scheme         string           `xml:"Scheme"`
}

func (s *state) xmlLB(lb *classicLB) xmlLB {
	x := xmlLB{
		LoadBalancerName: lb.name, DNSName: lb.dnsName, CanonicalHostedZoneName: lb.dnsName,
		CanonicalHostedZoneNameID: "Z35SXDOTRQ7X7K", VPCID: s.vpcID, Scheme: lb.scheme,
		Subnets: membersOf(lb.subnets), SecurityGroups: membersOf(lb.groups),
		CreatedTime: lb.created.Format(time.RFC3339),
		HealthCheck: xmlHealthCheck{Target: lb.health.target, Interval: lb.health.interval, Timeout: lb.health.timeout,
			UnhealthyThreshold: lb.health.unhealthy, HealthyThreshold: lb.health.healthy},
	}
	var zones []string
	for _, sn := range lb.subnets {
		if n := s.subnets[sn]; n != nil {
			zones = append(zones, n.zone)
		}
	}
	x.AvailabilityZones = membersOf(zones)
	var ls []xmlListenerDescription
	for _, l := range lb.listeners {
		ls = append(ls, xmlListenerDescription{
			Listener:    xmlListener{Protocol: l.protocol, LoadBalancerPort: l.port, InstanceProtocol: l.instanceProtocol, InstancePort: l.instancePort, SSLCertificateID: l.certificate},
			PolicyNames: membersOf(l.policies),
		})
	}
	x.ListenerDescriptions = membersOf(ls)
	var ins []xmlInstanceRef
	for _, id := range lb.instances {
		ins = append(ins, xmlInstanceRef{id})
	}
	x.Instances = membersOf(ins)
	var policies []string
	for _, pol := range lb.policies {
		policies = append(policies, pol.name)
	}
	x.Policies.Other = membersOf(policies)
	var backends []xmlBackend
	for _, port := range sortedPorts(lb.backendPolicies) {
		backends = append(backends, xmlBackend{InstancePort: port, PolicyNames: membersOf(lb.backendPolicies[port])})
	}
	x.BackendServerDescriptions = membersOf(backends)
	if len(lb.groups) > 0 {
		if g := s.groups[lb.groups[0]]; g != nil {
			x.SourceSecurityGroup.GroupName, x.SourceSecurityGroup.OwnerAlias = g.name, s.account
		}
	}
	return x
}

func sortedPorts(m map[int32][]string) []int32 {
	var out []int32
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (s *state) describeLBs(p *params) (any, *apiError) {
	names := p.strs("LoadBalancerNames")
	var out []xmlLB
	if len(names) > 0 {
		for _, n := range names {
			lb, err := s.lb(n)
			if err != nil {
				return nil, err
			}
			out = append(out, s.xmlLB(lb))
		}
	} else {
		for _, n := range sortedKeys(s.elbs) {
			out = append(out, s.xmlLB(s.elbs[n]))
		}
	}
	return struct {
		LBs *members[xmlLB] `xml:"LoadBalancerDescriptions"`
	}{membersOf(out)}, nil
}

func (s *state) addLBTags(p *params) (any, *apiError) {
	for _, n := range p.strs("LoadBalancerNames") {
		lb, err := s.lb(n)
		if err != nil {
			return nil, err
		}
		lb.tags = lb.tags.set(p.tags("Tags"))
	}
	return struct{}{}, nil
}

func instanceIDs(p *params) []string {
	var out []string
	for _, c := range p.list("Instances") {
		out = append(out, c.str("InstanceId"))
	}
	return out
}

func (s *state) registerInstances(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	for _, id := range instanceIDs(p) {
		if in := s.instances[id]; in == nil || in.state == "terminated" {
			return nil, errCode("InvalidInstance", "The requested instance %s is not valid", id)
		}
		if !slices.Contains(lb.instances, id) {
			lb.instances = append(lb.instances, id)
		}
	}
	return s.lbInstances(lb), nil
}

func (s *state) lbInstances(lb *classicLB) any {
	var ins []xmlInstanceRef
	for _, id := range lb.instances {
		ins = append(ins, xmlInstanceRef{id})
	}
	return struct {
		Instances *members[xmlInstanceRef] `xml:"Instances"`
	}{membersOf(ins)}
}

func (s *state) deregisterInstances(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	for _, id := range instanceIDs(p) {
		lb.instances = slices.DeleteFunc(lb.instances, func(x string) bool { return x == id })
	}
	return s.lbInstances(lb), nil
}

func (s *state) createLBPolicy(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	name := p.str("PolicyName")
	if slices.ContainsFunc(lb.policies, func(x policy) bool { return x.name == name }) {
		return nil, errCode("DuplicatePolicyName", "Policy %s already exists", name)
	}
	pol := policy{name: name, typeName: p.str("PolicyTypeName")}
	for _, a := range p.list("PolicyAttributes") {
		pol.attributes = append(pol.attributes, tag{Key: a.str("AttributeName"), Value: a.str("AttributeValue")})
	}
	lb.policies = append(lb.policies, pol)
	return struct{}{}, nil
}

func (s *state) checkPolicies(lb *classicLB, names []string) *apiError {
	for _, n := range names {
		if !slices.ContainsFunc(lb.policies, func(x policy) bool { return x.name == n }) {
			return errCode("PolicyNotFound", "There is no policy named '%s' for load balancer '%s'", n, lb.name)
		}
	}
	return nil
}

func (s *state) setBackendPolicies(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	names := p.strs("PolicyNames")
	if err := s.checkPolicies(lb, names); err != nil {
		return nil, err
	}
	port := p.int32("InstancePort")
	if len(names) == 0 {
		delete(lb.backendPolicies, port)
	} else {
		lb.backendPolicies[port] = names
	}
	return struct{}{}, nil
}

func (s *state) setListenerPolicies(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	names := p.strs("PolicyNames")
	if err := s.checkPolicies(lb, names); err != nil {
		return nil, err
	}
	port := p.int32("LoadBalancerPort")
	i := slices.IndexFunc(lb.listeners, func(l listener) bool { return l.port == port })
	if i < 0 {
		return nil, errCode("ListenerNotFound", "There is no listener on port %d", port)
	}
	lb.listeners[i].policies = names
	return struct{}{}, nil
}

type xmlPolicyAttribute struct {
	AttributeName  string `xml:"AttributeName"`
	AttributeValue string `xml:"AttributeValue"`
}

type xmlPolicy struct {
	PolicyName     string                       `xml:"PolicyName"`
	PolicyTypeName string                       `xml:"PolicyTypeName"`
	Attributes     *members[xmlPolicyAttribute] `xml:"PolicyAttributeDescriptions"`
}

func (s *state) describeLBPolicies(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	names := p.strs("PolicyNames")
	if err := s.checkPolicies(lb, names); err != nil {
		return nil, err
	}
	var out []xmlPolicy
	for _, pol := range lb.policies {
		if len(names) > 0 && !slices.Contains(names, pol.name) {
			continue
		}
		var attrs []xmlPolicyAttribute
		for _, a := range pol.attributes {
			attrs = append(attrs, xmlPolicyAttribute{a.Key, a.Value})
		}
		out = append(out, xmlPolicy{PolicyName: pol.name, PolicyTypeName: pol.typeName, Attributes: membersOf(attrs)})
	}
	return struct {
		Policies *members[xmlPolicy] `xml:"PolicyDescriptions"`
	}{membersOf(out)}, nil
}

func (s *state) attachSubnets(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	for _, sn := range p.strs("Subnets") {
		if s.subnets[sn] == nil {
			return nil, errCode("SubnetNotFound", "subnet %s does not exist", sn)
		}
		if !slices.Contains(lb.subnets, sn) {
			lb.subnets = append(lb.subnets, sn)
		}
	}
	return struct {
		Subnets *members[string] `xml:"Subnets"`
	}{membersOf(lb.subnets)}, nil
}

func (s *state) detachSubnets(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	for _, sn := range p.strs("Subnets") {
		lb.subnets = slices.DeleteFunc(lb.subnets, func(x string) bool { return x == sn })
	}
	return struct {
		Subnets *members[string] `xml:"Subnets"`
	}{membersOf(lb.subnets)}, nil
}

func (s *state) createListeners(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	add, err := readListeners(p)
	if err != nil {
		return nil, err
	}
	for _, l := range add {
		i := slices.IndexFunc(lb.listeners, func(old listener) bool { return old.port == l.port })
		if i >= 0 {
			old := lb.listeners[i]
			if old.protocol != l.protocol || old.instancePort != l.instancePort || old.instanceProtocol != l.instanceProtocol {
				return nil, errCode("DuplicateListener", "A listener already exists for %s with LoadBalancerPort %d, but with a different InstancePort, Protocol, or SSLCertificateId", lb.name, l.port)
			}
			continue
		}
		lb.listeners = append(lb.listeners, l)
	}
	return struct{}{}, nil
}

func (s *state) deleteListeners(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	for _, port := range p.strs("LoadBalancerPorts") {
		n, _ := strconv.Atoi(port)
		lb.listeners = slices.DeleteFunc(lb.listeners, func(l listener) bool { return l.port == int32(n) })
	}
	return struct{}{}, nil
}

func (s *state) applyGroups(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	groups := p.strs("SecurityGroups")
	for _, g := range groups {
		if s.groups[g] == nil {
			return nil, errCode("InvalidSecurityGroup", "security group %s does not exist", g)
		}
	}
	lb.groups = groups
	return struct {
		SecurityGroups *members[string] `xml:"SecurityGroups"`
	}{membersOf(groups)}, nil
}

func (s *state) configureHealthCheck(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	h := p.get("HealthCheck")
	hc := healthCheck{target: h.str("Target"), interval: h.int32("Interval"), timeout: h.int32("Timeout"),
		healthy: h.int32("HealthyThreshold"), unhealthy: h.int32("UnhealthyThreshold")}
	if _, _, err := parseTarget(hc.target); err != nil {
		return nil, errCode("ValidationError", "HealthCheck Target %q: %v", hc.target, err)
	}
	if hc.interval < 5 || hc.timeout < 2 || hc.timeout >= hc.interval || hc.healthy < 2 || hc.unhealthy < 2 {
		return nil, errCode("ValidationError", "HealthCheck %+v is out of range", hc)
	}
	lb.health = hc
	return struct {
		HealthCheck xmlHealthCheck `xml:"HealthCheck"`
	}{xmlHealthCheck{Target: hc.target, Interval: hc.interval, Timeout: hc.timeout, UnhealthyThreshold: hc.unhealthy, HealthyThreshold: hc.healthy}}, nil
}

// parseTarget reads a health check target: PROTOCOL:PORT, and a path for
// HTTP and HTTPS ("HTTP:10256/healthz").
func parseTarget(t string) (protocol string, rest string, err error) {
	protocol, rest, ok := strings.Cut(t, ":")
	if !ok {
		return "", "", fmt.Errorf("no protocol")
	}
	port := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		port = rest[:i]
		if protocol != "HTTP" && protocol != "HTTPS" {
			return "", "", fmt.Errorf("a path is allowed only with HTTP and HTTPS")
		}
	} else if protocol == "HTTP" || protocol == "HTTPS" {
		return "", "", fmt.Errorf("HTTP and HTTPS need a path")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("bad port %q", port)
	}
	if !slices.Contains([]string{"TCP", "SSL", "HTTP", "HTTPS"}, protocol) {
		return "", "", fmt.Errorf("bad protocol %q", protocol)
	}
	return protocol, rest, nil
}

type xmlLBAttributes struct {
	CrossZone struct {
		Enabled bool `xml:"Enabled"`
	} `xml:"CrossZoneLoadBalancing"`
	AccessLog struct {
		Enabled        bool   `xml:"Enabled"`
		S3BucketName   string `xml:"S3BucketName,omitempty"`
		S3BucketPrefix string `xml:"S3BucketPrefix,omitempty"`
		EmitInterval   int32  `xml:"EmitInterval,omitempty"`
	} `xml:"AccessLog"`
	ConnectionDraining struct {
		Enabled bool  `xml:"Enabled"`
		Timeout int32 `xml:"Timeout"`
	} `xml:"ConnectionDraining"`
	ConnectionSettings struct {
		IdleTimeout int32 `xml:"IdleTimeout"`
	} `xml:"ConnectionSettings"`
	Additional *members[struct {
		Key   string `xml:"Key"`
		Value string `xml:"Value"`
	}] `xml:"AdditionalAttributes"`
}

func xmlAttributes(a lbAttributes) xmlLBAttributes {
	var x xmlLBAttributes
	x.CrossZone.Enabled = a.crossZone
	x.AccessLog.Enabled, x.AccessLog.S3BucketName, x.AccessLog.S3BucketPrefix, x.AccessLog.EmitInterval =
		a.accessLogEnabled, a.accessLogBucket, a.accessLogPrefix, a.accessLogEmit
	x.ConnectionDraining.Enabled, x.ConnectionDraining.Timeout = a.drainingEnabled, a.drainingTimeout
	x.ConnectionSettings.IdleTimeout = a.idleTimeout
	if len(a.additional) > 0 {
		x.Additional = &members[struct {
			Key   string `xml:"Key"`
			Value string `xml:"Value"`
		}]{}
		for _, t := range a.additional {
			x.Additional.Members = append(x.Additional.Members, struct {
				Key   string `xml:"Key"`
				Value string `xml:"Value"`
			}{t.Key, t.Value})
		}
	}
	return x
}

func (s *state) describeLBAttributes(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	return struct {
		Attributes xmlLBAttributes `xml:"LoadBalancerAttributes"`
	}{xmlAttributes(lb.attributes)}, nil
}

func (s *state) modifyLBAttributes(p *params) (any, *apiError) {
	lb, err := s.lb(p.str("LoadBalancerName"))
	if err != nil {
		return nil, err
	}
	a := p.get("LoadBalancerAttributes")
	if c := a.get("CrossZoneLoadBalancing"); c.has("Enabled") {
		lb.attributes.crossZone = c.str("Enabled") == "true"
	}
	if d := a.get("ConnectionDraining"); d.has("Enabled") {
		lb.attributes.drainingEnabled = d.str("Enabled") == "true"
		if d.has("Timeout") {
			lb.attributes.drainingTimeout = d.int32("Timeout")
		}
	}
	if c := a.get("ConnectionSettings"); c.has("IdleTimeout") {
		lb.attributes.idleTimeout = c.int32("IdleTimeout")
	}
	if l := a.get("AccessLog"); l.has("Enabled") {
		lb.attributes.accessLogEnabled = l.str("Enabled") == "true"
		lb.attributes.accessLogBucket, lb.attributes.accessLogPrefix = l.str("S3BucketName"), l.str("S3BucketPrefix")
		lb.attributes.accessLogEmit = l.int32("EmitInterval")
	}
	if add := a.tags("AdditionalAttributes"); len(add) > 0 {
		lb.attributes.additional = tags(lb.attributes.additional).set(add)
	}
	return struct {
		Name       string          `xml:"LoadBalancerName"`
		Attributes xmlLBAttributes `xml:"LoadBalancerAttributes"`
	}{lb.name, xmlAttributes(lb.attributes)}, nil
}

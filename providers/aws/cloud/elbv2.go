package cloud

import (
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ELBv2Version is the API version of Elastic Load Balancing v2, whose
// Network Load Balancers the CCM makes for a Service annotated
// service.beta.kubernetes.io/aws-load-balancer-type: nlb.
const ELBv2Version = "2015-12-01"

const elbv2Namespace = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"

// elbv2Ops is every Elastic Load Balancing v2 action the emulator serves:
// the methods of the CCM's ELBV2 interface (k8s.io/cloud-provider-aws
// v1.37.1, pkg/providers/v1/aws.go), which TestOperationsCoverTheCCM
// holds, and DescribeTags, which the driver reads the Service's tag with.
// Only Network Load Balancers with instance targets are made: the CCM
// makes no other kind.
func elbv2Ops() map[string]func(*state, *params) (any, *apiError) {
	return map[string]func(*state, *params) (any, *apiError){
		"CreateLoadBalancer":             (*state).createNLB,
		"DescribeLoadBalancers":          (*state).describeNLBs,
		"DeleteLoadBalancer":             (*state).deleteNLB,
		"SetSecurityGroups":              (*state).setNLBGroups,
		"DescribeLoadBalancerAttributes": (*state).describeNLBAttributes,
		"ModifyLoadBalancerAttributes":   (*state).modifyNLBAttributes,
		"AddTags":                        (*state).addV2Tags,
		"DescribeTags":                   (*state).describeV2Tags,
		"CreateTargetGroup":              (*state).createTargetGroup,
		"DescribeTargetGroups":           (*state).describeTargetGroups,
		"ModifyTargetGroup":              (*state).modifyTargetGroup,
		"DeleteTargetGroup":              (*state).deleteTargetGroup,
		"DescribeTargetGroupAttributes":  (*state).describeTargetGroupAttributes,
		"ModifyTargetGroupAttributes":    (*state).modifyTargetGroupAttributes,
		"RegisterTargets":                (*state).registerTargets,
		"DeregisterTargets":              (*state).deregisterTargets,
		"DescribeTargetHealth":           (*state).describeTargetHealth,
		"CreateListener":                 (*state).createV2Listener,
		"DescribeListeners":              (*state).describeV2Listeners,
		"ModifyListener":                 (*state).modifyV2Listener,
		"DeleteListener":                 (*state).deleteV2Listener,
	}
}

// networkLB is a Network Load Balancer. Its listeners and target groups
// are held apart (state.listeners, state.targetGroups), as the API has
// them: a target group outlives the load balancer whose listener used it.
type networkLB struct {
	arn, name, dnsName string
	addr               netip.Addr // where the data path serves it; zero without one
	scheme             string
	subnets            []string
	groups             []string
	attributes         map[string]string
	tags               tags
	created            time.Time
}

// targetGroup is an instance target group.
type targetGroup struct {
	arn, name, protocol string
	port                int32
	health              v2HealthCheck
	targets             []v2Target
	attributes          map[string]string
	tags                tags
	// healthy is what the data path's health checks last found, by
	// instance ID and port (DescribeTargetHealth reports it).
	healthy map[v2Target]bool
}

type v2HealthCheck struct {
	protocol, port, path                  string // port: a number or traffic-port
	interval, timeout, healthy, unhealthy int32
}

type v2Target struct {
	id   string
	port int32
}

// v2Listener is a Network Load Balancer's listener: a port forwarded to a
// target group.
type v2Listener struct {
	arn, lbARN, protocol string
	port                 int32
	targetGroup          string // ARN
	certificates         []string
	sslPolicy            string
	tags                 tags
}

// nlbAttributeDefaults are the attributes of a new Network Load Balancer
// that the CCM reads and sets.
var nlbAttributeDefaults = map[string]string{
	"load_balancing.cross_zone.enabled": "false",
	"access_logs.s3.enabled":            "false",
	"access_logs.s3.bucket":             "",
	"access_logs.s3.prefix":             "",
	"deletion_protection.enabled":       "false",
}

var targetGroupAttributeDefaults = map[string]string{
	"deregistration_delay.timeout_seconds": "300",
	"preserve_client_ip.enabled":           "true",
	"proxy_protocol_v2.enabled":            "false",
	"stickiness.enabled":                   "false",
}

func (s *state) arn(resource string) string {
	s.counter++
	return fmt.Sprintf("arn:aws:elasticloadbalancing:%s:%s:%s/%016x", s.region, s.account, resource, 0xc0ffee0000+s.counter)
}

func (s *state) nlb(arn string) (*networkLB, *apiError) {
	for _, lb := range s.nlbs {
		if lb.arn == arn {
			return lb, nil
		}
	}
	return nil, errCode("LoadBalancerNotFound", "Load balancer '%s' not found", arn)
}

func (s *state) targetGroup(arn string) (*targetGroup, *apiError) {
	if tg := s.targetGroups[arn]; tg != nil {
		return tg, nil
	}
	return nil, errCode("TargetGroupNotFound", "Target groups '%s' not found", arn)
}

func (s *state) v2Listener(arn string) (*v2Listener, *apiError) {
	if l := s.listeners[arn]; l != nil {
		return l, nil
	}
	return nil, errCode("ListenerNotFound", "One or more listeners not found: '%s'", arn)
}

// ---- load balancers

type xmlNLBAddress struct {
	IPAddress string `xml:"IpAddress,omitempty"`
}

type xmlNLBZone struct {
	ZoneName  string                  `xml:"ZoneName"`
	SubnetID  string                  `xml:"SubnetId"`
	Addresses *members[xmlNLBAddress] `xml:"LoadBalancerAddresses"`
}

type xmlNLB struct {
	LoadBalancerArn       string                `xml:"LoadBalancerArn"`
	DNSName               string                `xml:"DNSName"`
	CanonicalHostedZoneID string                `xml:"CanonicalHostedZoneId"`
	CreatedTime           string                `xml:"CreatedTime"`
	LoadBalancerName      string                `xml:"LoadBalancerName"`
	Scheme                string                `xml:"Scheme"`
	VpcID                 string                `xml:"VpcId"`
	State                 struct{ Code string } `xml:"State"`
	Type                  string                `xml:"Type"`
	AvailabilityZones     *members[xmlNLBZone]  `xml:"AvailabilityZones"`
	SecurityGroups        *members[string]      `xml:"SecurityGroups"`
	IPAddressType         string                `xml:"IpAddressType"`
}

func (s *state) xmlNLB(lb *networkLB) xmlNLB {
	x := xmlNLB{
		LoadBalancerArn: lb.arn, DNSName: lb.dnsName, CanonicalHostedZoneID: "Z26RNL4JYFTOTI",
		CreatedTime: lb.created.Format(time.RFC3339), LoadBalancerName: lb.name, Scheme: lb.scheme,
		VpcID: s.vpcID, Type: "network", SecurityGroups: membersOf(lb.groups), IPAddressType: "ipv4",
	}
	x.State.Code = "active"
	var zones []xmlNLBZone
	for _, id := range lb.subnets {
		z := xmlNLBZone{SubnetID: id, Addresses: membersOf([]xmlNLBAddress(nil))}
		if sn := s.subnets[id]; sn != nil {
			z.ZoneName = sn.zone
		}
		zones = append(zones, z)
	}
	x.AvailabilityZones = membersOf(zones)
	return x
}

func (s *state) createNLB(p *params) (any, *apiError) {
	name := p.str("Name")
	if name == "" || len(name) > 32 || strings.HasPrefix(name, "internal-") {
		return nil, errCode("ValidationError", "Name must be 1 to 32 characters and not begin with internal-: %q", name)
	}
	if t := p.str("Type"); t != "network" {
		return nil, errCode("ValidationError", "only Type network is emulated, not %q", t)
	}
	if s.nlbs[name] != nil {
		// AWS answers the existing load balancer when every setting is
		// the same; the CCM never makes one twice.
		return nil, errCode("DuplicateLoadBalancerName", "A load balancer with the same name '%s' exists, but with different settings", name)
	}
	var subnets []string
	for _, m := range p.list("SubnetMappings") {
		subnets = append(subnets, m.str("SubnetId"))
	}
	subnets = append(subnets, p.strs("Subnets")...)
	if len(subnets) == 0 {
		return nil, errCode("ValidationError", "a load balancer needs Subnets or SubnetMappings")
	}
	zones := map[string]bool{}
	for _, id := range subnets {
		sn := s.subnets[id]
		if sn == nil {
			return nil, errCode("SubnetNotFound", "The subnet ID '%s' is not valid", id)
		}
		if zones[sn.zone] {
			return nil, errCode("InvalidConfigurationRequest", "A load balancer cannot be attached to multiple subnets in the same Availability Zone")
		}
		zones[sn.zone] = true
	}
	var groups []string
	for _, g := range p.strs("SecurityGroups") {
		if g == "" {
			continue // the SDK's empty list: SecurityGroups= with no value
		}
		if s.groups[g] == nil {
			return nil, errCode("InvalidSecurityGroup", "Security group '%s' does not exist", g)
		}
		groups = append(groups, g)
	}
	scheme := p.str("Scheme")
	if scheme == "" {
		scheme = "internet-facing"
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	dns := fmt.Sprintf("%s-%016x.elb.%s.amazonaws.com", name, h.Sum64(), s.region)
	lb := &networkLB{
		arn: s.arn("loadbalancer/net/" + name), name: name, dnsName: dns, addr: s.nextLBAddr(), scheme: scheme,
		subnets: subnets, groups: groups, attributes: maps.Clone(nlbAttributeDefaults),
		tags: tags(nil).set(p.tags("Tags")), created: time.Now().UTC(),
	}
	s.nlbs[name] = lb
	return struct {
		LBs *members[xmlNLB] `xml:"LoadBalancers"`
	}{membersOf([]xmlNLB{s.xmlNLB(lb)})}, nil
}

// describeNLBs answers by Names or LoadBalancerArns, or every one; a name
// or ARN that is not there is LoadBalancerNotFound, as in AWS (the CCM
// takes that error, and only it, for "not there").
func (s *state) describeNLBs(p *params) (any, *apiError) {
	var out []xmlNLB
	names, arns := p.strs("Names"), p.strs("LoadBalancerArns")
	for _, n := range names {
		lb := s.nlbs[n]
		if lb == nil {
			return nil, errCode("LoadBalancerNotFound", "Load balancers '[%s]' not found", n)
		}
		out = append(out, s.xmlNLB(lb))
	}
	for _, a := range arns {
		lb, err := s.nlb(a)
		if err != nil {
			return nil, err
		}
		out = append(out, s.xmlNLB(lb))
	}
	if len(names) == 0 && len(arns) == 0 {
		for _, n := range sortedKeys(s.nlbs) {
			out = append(out, s.xmlNLB(s.nlbs[n]))
		}
	}
	return struct {
		LBs *members[xmlNLB] `xml:"LoadBalancers"`
	}{membersOf(out)}, nil
}

// deleteNLB deletes the load balancer and its listeners; its target
// groups stay, free to delete. One that is not there is no error, as in
// AWS.
func (s *state) deleteNLB(p *params) (any, *apiError) {
	lb, err := s.nlb(p.str("LoadBalancerArn"))
	if err != nil {
		return struct{}{}, nil
	}
	for arn, l := range s.listeners {
		if l.lbARN == lb.arn {
			delete(s.listeners, arn)
		}
	}
	delete(s.nlbs, lb.name)
	return struct{}{}, nil
}

func (s *state) setNLBGroups(p *params) (any, *apiError) {
	lb, err := s.nlb(p.str("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	if len(lb.groups) == 0 {
		// As in AWS: a Network Load Balancer made without security
		// groups can never have any.
		return nil, errCode("InvalidConfigurationRequest", "You cannot set security groups on a Network Load Balancer which was created without any security groups")
	}
	var groups []string
	for _, g := range p.strs("SecurityGroups") {
		if s.groups[g] == nil {
			return nil, errCode("InvalidSecurityGroup", "Security group '%s' does not exist", g)
		}
		groups = append(groups, g)
	}
	lb.groups = groups
	return struct {
		IDs *members[string] `xml:"SecurityGroupIds"`
	}{membersOf(groups)}, nil
}

type xmlAttribute struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

func xmlV2Attributes(m map[string]string) any {
	var out []xmlAttribute
	for _, k := range sortedKeys(m) {
		out = append(out, xmlAttribute{k, m[k]})
	}
	return struct {
		Attributes *members[xmlAttribute] `xml:"Attributes"`
	}{membersOf(out)}
}

// modifyAttributes sets the request's Attributes in m, refusing a key m
// does not know (as AWS refuses a key of another kind of load balancer).
func modifyAttributes(m map[string]string, p *params) *apiError {
	set := map[string]string{}
	for _, a := range p.list("Attributes") {
		k := a.str("Key")
		if _, ok := m[k]; !ok {
			return errCode("ValidationError", "Attribute key '%s' is not recognized", k)
		}
		set[k] = a.str("Value")
	}
	for k, v := range set {
		m[k] = v
	}
	return nil
}

func (s *state) describeNLBAttributes(p *params) (any, *apiError) {
	lb, err := s.nlb(p.str("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	return xmlV2Attributes(lb.attributes), nil
}

func (s *state) modifyNLBAttributes(p *params) (any, *apiError) {
	lb, err := s.nlb(p.str("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	if err := modifyAttributes(lb.attributes, p); err != nil {
		return nil, err
	}
	return xmlV2Attributes(lb.attributes), nil
}

// v2Tagged is the tags of the resource an ARN names.
func (s *state) v2Tagged(arn string) (*tags, *apiError) {
	if lb, err := s.nlb(arn); err == nil {
		return &lb.tags, nil
	}
	if tg := s.targetGroups[arn]; tg != nil {
		return &tg.tags, nil
	}
	if l := s.listeners[arn]; l != nil {
		return &l.tags, nil
	}
	return nil, errCode("LoadBalancerNotFound", "Resource '%s' not found", arn)
}

func (s *state) addV2Tags(p *params) (any, *apiError) {
	for _, arn := range p.strs("ResourceArns") {
		t, err := s.v2Tagged(arn)
		if err != nil {
			return nil, err
		}
		*t = t.set(p.tags("Tags"))
	}
	return struct{}{}, nil
}

type xmlTagDescription struct {
	ResourceArn string                 `xml:"ResourceArn"`
	Tags        *members[xmlAttribute] `xml:"Tags"` // Key and Value, as attributes
}

func (s *state) describeV2Tags(p *params) (any, *apiError) {
	var out []xmlTagDescription
	for _, arn := range p.strs("ResourceArns") {
		t, err := s.v2Tagged(arn)
		if err != nil {
			return nil, err
		}
		var ts []xmlAttribute
		for _, x := range *t {
			ts = append(ts, xmlAttribute{x.Key, x.Value})
		}
		out = append(out, xmlTagDescription{ResourceArn: arn, Tags: membersOf(ts)})
	}
	return struct {
		TagDescriptions *members[xmlTagDescription] `xml:"TagDescriptions"`
	}{membersOf(out)}, nil
}

// ---- target groups

type xmlTargetGroup struct {
	TargetGroupArn             string           `xml:"TargetGroupArn"`
	TargetGroupName            string           `xml:"TargetGroupName"`
	Protocol                   string           `xml:"Protocol"`
	Port                       int32            `xml:"Port"`
	VpcID                      string           `xml:"VpcId"`
	HealthCheckProtocol        string           `xml:"HealthCheckProtocol"`
	HealthCheckPort            string           `xml:"HealthCheckPort"`
	HealthCheckEnabled         bool             `xml:"HealthCheckEnabled"`
	HealthCheckIntervalSeconds int32            `xml:"HealthCheckIntervalSeconds"`
	HealthCheckTimeoutSeconds  int32            `xml:"HealthCheckTimeoutSeconds"`
	HealthyThresholdCount      int32            `xml:"HealthyThresholdCount"`
	UnhealthyThresholdCount    int32            `xml:"UnhealthyThresholdCount"`
	HealthCheckPath            string           `xml:"HealthCheckPath,omitempty"`
	LoadBalancerArns           *members[string] `xml:"LoadBalancerArns"`
	TargetType                 string           `xml:"TargetType"`
	IPAddressType              string           `xml:"IpAddressType"`
}

func (s *state) xmlTargetGroup(tg *targetGroup) xmlTargetGroup {
	return xmlTargetGroup{
		TargetGroupArn: tg.arn, TargetGroupName: tg.name, Protocol: tg.protocol, Port: tg.port, VpcID: s.vpcID,
		HealthCheckProtocol: tg.health.protocol, HealthCheckPort: tg.health.port, HealthCheckEnabled: true,
		HealthCheckIntervalSeconds: tg.health.interval, HealthCheckTimeoutSeconds: tg.health.timeout,
		HealthyThresholdCount: tg.health.healthy, UnhealthyThresholdCount: tg.health.unhealthy,
		HealthCheckPath: tg.health.path, LoadBalancerArns: membersOf(s.targetGroupLBs(tg.arn)),
		TargetType: "instance", IPAddressType: "ipv4",
	}
}

// targetGroupLBs are the load balancers whose listeners forward to the
// target group.
func (s *state) targetGroupLBs(arn string) []string {
	var out []string
	for _, l := range s.listeners {
		if l.targetGroup == arn && !slices.Contains(out, l.lbARN) {
			out = append(out, l.lbARN)
		}
	}
	slices.Sort(out)
	return out
}

// readV2HealthCheck applies the request's HealthCheck* fields to hc.
func readV2HealthCheck(hc *v2HealthCheck, p *params) *apiError {
	if v := strings.ToUpper(p.str("HealthCheckProtocol")); v != "" {
		if !slices.Contains([]string{"TCP", "HTTP", "HTTPS"}, v) {
			return errCode("ValidationError", "HealthCheckProtocol %q is not TCP, HTTP or HTTPS", v)
		}
		hc.protocol = v
	}
	if v := p.str("HealthCheckPort"); v != "" {
		if n, err := strconv.Atoi(v); v != "traffic-port" && (err != nil || n < 1 || n > 65535) {
			return errCode("ValidationError", "HealthCheckPort %q is not traffic-port or a port", v)
		}
		hc.port = v
	}
	if p.has("HealthCheckPath") {
		hc.path = p.str("HealthCheckPath")
	}
	for _, f := range []struct {
		name     string
		to       *int32
		min, max int32
	}{
		{"HealthCheckIntervalSeconds", &hc.interval, 5, 300},
		{"HealthCheckTimeoutSeconds", &hc.timeout, 2, 120},
		{"HealthyThresholdCount", &hc.healthy, 2, 10},
		{"UnhealthyThresholdCount", &hc.unhealthy, 2, 10},
	} {
		if !p.has(f.name) {
			continue
		}
		n := p.int32(f.name)
		if n < f.min || n > f.max {
			return errCode("ValidationError", "%s must be %d to %d, not %q", f.name, f.min, f.max, p.str(f.name))
		}
		*f.to = n
	}
	if hc.protocol == "TCP" {
		hc.path = ""
	} else if hc.path == "" {
		hc.path = "/"
	}
	return nil
}

func (s *state) createTargetGroup(p *params) (any, *apiError) {
	name := p.str("Name")
	if name == "" || len(name) > 32 {
		return nil, errCode("ValidationError", "Name must be 1 to 32 characters: %q", name)
	}
	if t := p.str("TargetType"); t != "" && t != "instance" {
		return nil, errCode("ValidationError", "only TargetType instance is emulated, not %q", t)
	}
	protocol := strings.ToUpper(p.str("Protocol"))
	if !slices.Contains([]string{"TCP", "UDP", "TLS", "TCP_UDP"}, protocol) {
		return nil, errCode("ValidationError", "Protocol %q of a Network Load Balancer's target group is not TCP, UDP, TLS or TCP_UDP", p.str("Protocol"))
	}
	port := p.int32("Port")
	if port < 1 || port > 65535 {
		return nil, errCode("ValidationError", "Port must be 1 to 65535: %q", p.str("Port"))
	}
	if v := p.str("VpcId"); v != s.vpcID {
		return nil, errCode("ValidationError", "The VPC ID '%s' is not found", v)
	}
	for _, tg := range s.targetGroups {
		if tg.name == name {
			return nil, errCode("DuplicateTargetGroupName", "A target group with the same name '%s' exists, but with different settings", name)
		}
	}
	tg := &targetGroup{
		arn: s.arn("targetgroup/" + name), name: name, protocol: protocol, port: port,
		health:     v2HealthCheck{protocol: "TCP", port: "traffic-port", interval: 30, timeout: 10, healthy: 5, unhealthy: 2},
		attributes: maps.Clone(targetGroupAttributeDefaults), tags: tags(nil).set(p.tags("Tags")), healthy: map[v2Target]bool{},
	}
	if err := readV2HealthCheck(&tg.health, p); err != nil {
		return nil, err
	}
	s.targetGroups[tg.arn] = tg
	return struct {
		TGs *members[xmlTargetGroup] `xml:"TargetGroups"`
	}{membersOf([]xmlTargetGroup{s.xmlTargetGroup(tg)})}, nil
}

func (s *state) describeTargetGroups(p *params) (any, *apiError) {
	var out []xmlTargetGroup
	switch {
	case p.has("LoadBalancerArn"):
		lb, err := s.nlb(p.str("LoadBalancerArn"))
		if err != nil {
			return nil, err
		}
		for _, arn := range sortedKeys(s.targetGroups) {
			if slices.Contains(s.targetGroupLBs(arn), lb.arn) {
				out = append(out, s.xmlTargetGroup(s.targetGroups[arn]))
			}
		}
	case p.has("TargetGroupArns") || p.has("Names"):
		for _, arn := range p.strs("TargetGroupArns") {
			tg, err := s.targetGroup(arn)
			if err != nil {
				return nil, err
			}
			out = append(out, s.xmlTargetGroup(tg))
		}
		for _, n := range p.strs("Names") {
			var found *targetGroup
			for _, tg := range s.targetGroups {
				if tg.name == n {
					found = tg
				}
			}
			if found == nil {
				return nil, errCode("TargetGroupNotFound", "One or more target groups not found: '%s'", n)
			}
			out = append(out, s.xmlTargetGroup(found))
		}
	default:
		for _, arn := range sortedKeys(s.targetGroups) {
			out = append(out, s.xmlTargetGroup(s.targetGroups[arn]))
		}
	}
	return struct {
		TGs *members[xmlTargetGroup] `xml:"TargetGroups"`
	}{membersOf(out)}, nil
}

func (s *state) modifyTargetGroup(p *params) (any, *apiError) {
	tg, err := s.targetGroup(p.str("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	hc := tg.health
	if err := readV2HealthCheck(&hc, p); err != nil {
		return nil, err
	}
	tg.health = hc
	return struct {
		TGs *members[xmlTargetGroup] `xml:"TargetGroups"`
	}{membersOf([]xmlTargetGroup{s.xmlTargetGroup(tg)})}, nil
}

// deleteTargetGroup refuses a group a listener still forwards to, as AWS
// does (ResourceInUse).
func (s *state) deleteTargetGroup(p *params) (any, *apiError) {
	tg, err := s.targetGroup(p.str("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	if lbs := s.targetGroupLBs(tg.arn); len(lbs) > 0 {
		return nil, errCode("ResourceInUse", "Target group '%s' is currently in use by a listener or a rule", tg.arn)
	}
	delete(s.targetGroups, tg.arn)
	return struct{}{}, nil
}

func (s *state) describeTargetGroupAttributes(p *params) (any, *apiError) {
	tg, err := s.targetGroup(p.str("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	return xmlV2Attributes(tg.attributes), nil
}

func (s *state) modifyTargetGroupAttributes(p *params) (any, *apiError) {
	tg, err := s.targetGroup(p.str("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	if err := modifyAttributes(tg.attributes, p); err != nil {
		return nil, err
	}
	return xmlV2Attributes(tg.attributes), nil
}

// readTargets reads the request's Targets; one without a Port is at the
// group's.
func readTargets(tg *targetGroup, p *params) []v2Target {
	var out []v2Target
	for _, t := range p.list("Targets") {
		x := v2Target{id: t.str("Id"), port: t.int32("Port")}
		if x.port == 0 {
			x.port = tg.port
		}
		out = append(out, x)
	}
	return out
}

func (s *state) registerTargets(p *params) (any, *apiError) {
	tg, err := s.targetGroup(p.str("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	targets := readTargets(tg, p)
	for _, t := range targets {
		if in := s.instances[t.id]; in == nil || in.state == "terminated" {
			return nil, errCode("InvalidTarget", "The following targets are not valid instances: '%s'", t.id)
		}
	}
	for _, t := range targets {
		if !slices.Contains(tg.targets, t) {
			tg.targets = append(tg.targets, t)
		}
	}
	return struct{}{}, nil
}

func (s *state) deregisterTargets(p *params) (any, *apiError) {
	tg, err := s.targetGroup(p.str("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	targets := readTargets(tg, p)
	for _, t := range targets {
		if !slices.Contains(tg.targets, t) {
			return nil, errCode("InvalidTarget", "The following targets are not registered: '%s'", t.id)
		}
	}
	tg.targets = slices.DeleteFunc(tg.targets, func(t v2Target) bool { return slices.Contains(targets, t) })
	for _, t := range targets {
		delete(tg.healthy, t)
	}
	return struct{}{}, nil
}

type xmlTargetHealth struct {
	Target struct {
		ID               string `xml:"Id"`
		Port             int32  `xml:"Port"`
		AvailabilityZone string `xml:"AvailabilityZone,omitempty"`
	} `xml:"Target"`
	HealthCheckPort string `xml:"HealthCheckPort"`
	TargetHealth    struct {
		State       string `xml:"State"`
		Reason      string `xml:"Reason,omitempty"`
		Description string `xml:"Description,omitempty"`
	} `xml:"TargetHealth"`
}

// describeTargetHealth reports each target as the data path's health
// checks found it: healthy, unhealthy, or initial before the first
// verdict; unused when no listener forwards to the group, unavailable
// when its instance is not running or sits outside the load balancer's
// zones.
func (s *state) describeTargetHealth(p *params) (any, *apiError) {
	tg, err := s.targetGroup(p.str("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	zones := map[string]bool{}
	lbs := s.targetGroupLBs(tg.arn)
	for _, arn := range lbs {
		if lb, err := s.nlb(arn); err == nil {
			maps.Copy(zones, s.subnetZones(lb.subnets))
		}
	}
	var out []xmlTargetHealth
	for _, t := range tg.targets {
		var x xmlTargetHealth
		x.Target.ID, x.Target.Port = t.id, t.port
		x.HealthCheckPort = tg.health.port
		if x.HealthCheckPort == "traffic-port" {
			x.HealthCheckPort = strconv.Itoa(int(t.port))
		}
		in := s.instances[t.id]
		healthy, checked := tg.healthy[t]
		switch {
		case len(lbs) == 0:
			x.TargetHealth.State, x.TargetHealth.Reason = "unused", "Target.NotInUse"
		case in == nil || in.state != "running":
			x.TargetHealth.State, x.TargetHealth.Reason = "unused", "Target.InvalidState"
		case !zones[in.zone]:
			x.TargetHealth.State, x.TargetHealth.Reason = "unavailable", "Target.NotInUse"
		case !checked:
			x.TargetHealth.State, x.TargetHealth.Reason = "initial", "Elb.InitialHealthChecking"
		case healthy:
			x.TargetHealth.State = "healthy"
		default:
			x.TargetHealth.State, x.TargetHealth.Reason = "unhealthy", "Target.FailedHealthChecks"
		}
		if in != nil {
			x.Target.AvailabilityZone = in.zone
		}
		out = append(out, x)
	}
	return struct {
		Descriptions *members[xmlTargetHealth] `xml:"TargetHealthDescriptions"`
	}{membersOf(out)}, nil
}

// ---- listeners

type xmlAction struct {
	Type           string `xml:"Type"`
	TargetGroupArn string `xml:"TargetGroupArn"`
	Order          int32  `xml:"Order"`
}

type xmlCertificate struct {
	CertificateArn string `xml:"CertificateArn"`
}

type xmlV2Listener struct {
	ListenerArn     string                   `xml:"ListenerArn"`
	LoadBalancerArn string                   `xml:"LoadBalancerArn"`
	Port            int32                    `xml:"Port"`
	Protocol        string                   `xml:"Protocol"`
	Certificates    *members[xmlCertificate] `xml:"Certificates"`
	SslPolicy       string                   `xml:"SslPolicy,omitempty"`
	DefaultActions  *members[xmlAction]      `xml:"DefaultActions"`
}

func xmlListenerOf(l *v2Listener) xmlV2Listener {
	var certs []xmlCertificate
	for _, c := range l.certificates {
		certs = append(certs, xmlCertificate{c})
	}
	return xmlV2Listener{
		ListenerArn: l.arn, LoadBalancerArn: l.lbARN, Port: l.port, Protocol: l.protocol, SslPolicy: l.sslPolicy,
		Certificates:   membersOf(certs),
		DefaultActions: membersOf([]xmlAction{{Type: "forward", TargetGroupArn: l.targetGroup, Order: 1}}),
	}
}

// readV2Listener applies the request's Port, Protocol, DefaultActions,
// Certificates and SslPolicy to l.
func (s *state) readV2Listener(l *v2Listener, p *params) *apiError {
	if p.has("Port") {
		l.port = p.int32("Port")
	}
	if p.has("Protocol") {
		l.protocol = strings.ToUpper(p.str("Protocol"))
	}
	if l.port < 1 || l.port > 65535 {
		return errCode("ValidationError", "Port must be 1 to 65535: %d", l.port)
	}
	if !slices.Contains([]string{"TCP", "UDP", "TLS", "TCP_UDP"}, l.protocol) {
		return errCode("ValidationError", "Protocol %q of a Network Load Balancer's listener is not TCP, UDP, TLS or TCP_UDP", l.protocol)
	}
	if actions := p.list("DefaultActions"); len(actions) > 0 {
		if len(actions) != 1 || actions[0].str("Type") != "forward" || actions[0].str("TargetGroupArn") == "" {
			return errCode("ValidationError", "a Network Load Balancer's listener takes one forward action to a target group")
		}
		tg, err := s.targetGroup(actions[0].str("TargetGroupArn"))
		if err != nil {
			return err
		}
		if tg.protocol != l.protocol {
			return errCode("ValidationError", "the listener's protocol %s and its target group's %s differ", l.protocol, tg.protocol)
		}
		if other := s.targetGroupLBs(tg.arn); len(other) > 0 && !slices.Contains(other, l.lbARN) {
			return errCode("TargetGroupAssociationLimit", "target group '%s' is forwarded to by another load balancer", tg.arn)
		}
		l.targetGroup = tg.arn
	}
	if l.targetGroup == "" {
		return errCode("ValidationError", "a listener needs DefaultActions")
	}
	if p.has("Certificates") {
		l.certificates = nil
		for _, c := range p.list("Certificates") {
			l.certificates = append(l.certificates, c.str("CertificateArn"))
		}
	}
	if p.has("SslPolicy") {
		l.sslPolicy = p.str("SslPolicy")
	}
	for arn, other := range s.listeners {
		if arn != l.arn && other.lbARN == l.lbARN && other.port == l.port {
			return errCode("DuplicateListener", "A listener already exists on this port for this load balancer '%s'", l.lbARN)
		}
	}
	return nil
}

func (s *state) createV2Listener(p *params) (any, *apiError) {
	lb, err := s.nlb(p.str("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	l := &v2Listener{lbARN: lb.arn, tags: tags(nil).set(p.tags("Tags"))}
	if err := s.readV2Listener(l, p); err != nil {
		return nil, err
	}
	l.arn = s.arn(strings.Replace(lb.arn[strings.Index(lb.arn, "loadbalancer/"):], "loadbalancer/", "listener/", 1))
	s.listeners[l.arn] = l
	return struct {
		Listeners *members[xmlV2Listener] `xml:"Listeners"`
	}{membersOf([]xmlV2Listener{xmlListenerOf(l)})}, nil
}

func (s *state) describeV2Listeners(p *params) (any, *apiError) {
	var out []xmlV2Listener
	if p.has("LoadBalancerArn") {
		lb, err := s.nlb(p.str("LoadBalancerArn"))
		if err != nil {
			return nil, err
		}
		for _, arn := range sortedKeys(s.listeners) {
			if s.listeners[arn].lbARN == lb.arn {
				out = append(out, xmlListenerOf(s.listeners[arn]))
			}
		}
	}
	for _, arn := range p.strs("ListenerArns") {
		l, err := s.v2Listener(arn)
		if err != nil {
			return nil, err
		}
		out = append(out, xmlListenerOf(l))
	}
	return struct {
		Listeners *members[xmlV2Listener] `xml:"Listeners"`
	}{membersOf(out)}, nil
}

func (s *state) modifyV2Listener(p *params) (any, *apiError) {
	l, err := s.v2Listener(p.str("ListenerArn"))
	if err != nil {
		return nil, err
	}
	changed := *l
	if err := s.readV2Listener(&changed, p); err != nil {
		return nil, err
	}
	*l = changed
	return struct {
		Listeners *members[xmlV2Listener] `xml:"Listeners"`
	}{membersOf([]xmlV2Listener{xmlListenerOf(l)})}, nil
}

func (s *state) deleteV2Listener(p *params) (any, *apiError) {
	l, err := s.v2Listener(p.str("ListenerArn"))
	if err != nil {
		return nil, err
	}
	delete(s.listeners, l.arn)
	return struct{}{}, nil
}

// nlbNameOfARN is the load balancer name inside a load balancer's or a
// listener's ARN (…:loadbalancer/net/NAME/ID, …:listener/net/NAME/ID/ID).
func nlbNameOfARN(arn string) string {
	_, rest, ok := strings.Cut(arn, "/net/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

package cloud

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// tag is an EC2 or Elastic Load Balancing tag.
type tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type tags []tag

func (t tags) get(key string) (string, bool) {
	for _, x := range t {
		if x.Key == key {
			return x.Value, true
		}
	}
	return "", false
}

// set adds or replaces each of add.
func (t tags) set(add []tag) tags {
	out := slices.Clone(t)
	for _, a := range add {
		i := slices.IndexFunc(out, func(x tag) bool { return x.Key == a.Key })
		if i >= 0 {
			out[i].Value = a.Value
		} else {
			out = append(out, a)
		}
	}
	return out
}

// remove drops each key of del whose value matches (an empty value in del
// matches any, as DeleteTags does).
func (t tags) remove(del []tag) tags {
	return slices.DeleteFunc(slices.Clone(t), func(x tag) bool {
		return slices.ContainsFunc(del, func(d tag) bool { return d.Key == x.Key && (d.Value == "" || d.Value == x.Value) })
	})
}

// zone is an availability zone of the region.
type zone struct {
	name, id string
	subnet   string // the zone's subnet ID
}

// instance is an EC2 instance with one network interface.
type instance struct {
	id           string
	privateDNS   string // the node's name
	instanceType string
	zone         string
	subnet       string
	state        string // pending, running, stopping, stopped, terminated
	privateIPs   []string
	publicIP     string
	publicDNS    string
	ipv6         []string
	tags         tags
	groups       []string
	srcDstCheck  bool
	launched     time.Time
}

// stateCode is EC2's numeric code of an instance state.
func stateCode(s string) int32 {
	switch s {
	case "pending":
		return 0
	case "running":
		return 16
	case "shutting-down":
		return 32
	case "terminated":
		return 48
	case "stopping":
		return 64
	case "stopped":
		return 80
	}
	return 0
}

// route is a route of a route table.
type route struct {
	destination string
	gateway     string // "local" or an internet gateway ID, for the fixed routes
	instanceID  string
	eni         string
}

type routeTable struct {
	id     string
	tags   tags
	routes []route
}

// permission is one ingress rule of a security group: a protocol and port
// range from either a CIDR (IPv4 or IPv6) or another group. Its
// description is no part of what makes it the rule it is (key), as in EC2:
// the CCM finds its Network Load Balancers' rules by their descriptions.
type permission struct {
	protocol    string // tcp, udp, icmp, or -1
	from, to    int32
	cidr        string
	cidr6       string
	group       string
	description string
}

func (p permission) key() string {
	return strings.Join([]string{p.protocol, fmt.Sprint(p.from), fmt.Sprint(p.to), p.cidr, p.cidr6, p.group}, "|")
}

type securityGroup struct {
	id, name, description string
	tags                  tags
	ingress               []permission
}

// listener is a classic load balancer's listener.
type listener struct {
	protocol, instanceProtocol string
	port, instancePort         int32
	certificate                string
	policies                   []string
}

type healthCheck struct {
	target                                string
	interval, timeout, healthy, unhealthy int32
}

type policy struct {
	name, typeName string
	attributes     []tag // name/value pairs
}

// classicLB is a classic (Elastic Load Balancing, 2012-06-01) load balancer.
type classicLB struct {
	name            string
	dnsName         string
	addr            netip.Addr // where the data path serves it; zero without one
	scheme          string
	subnets         []string
	groups          []string
	listeners       []listener
	instances       []string
	health          healthCheck
	tags            tags
	policies        []policy
	backendPolicies map[int32][]string
	attributes      lbAttributes
	created         time.Time
}

type lbAttributes struct {
	crossZone        bool
	drainingEnabled  bool
	drainingTimeout  int32
	idleTimeout      int32
	accessLogEnabled bool
	accessLogBucket  string
	accessLogPrefix  string
	accessLogEmit    int32
	additional       []tag
}

// state is the whole emulated account in one region, behind one lock.
type state struct {
	mu sync.Mutex

	region    string
	account   string
	clusterID string
	vpcID     string
	vpcCIDR   netip.Prefix
	vpcCIDR6  netip.Prefix
	igwID     string
	zones     []zone

	subnets      map[string]*subnet
	instances    map[string]*instance
	order        []string // instance IDs in creation order
	routeTables  map[string]*routeTable
	groups       map[string]*securityGroup
	elbs         map[string]*classicLB
	nlbs         map[string]*networkLB   // by name
	targetGroups map[string]*targetGroup // by ARN
	listeners    map[string]*v2Listener  // by ARN, of every Network Load Balancer
	nodeGroup    string                  // the cluster's node security group

	nextIP  map[string]uint32 // per subnet, the next host number
	counter uint64

	lbAddrs    netip.Prefix // where load balancers' addresses come from; unset: none
	lastLBAddr netip.Addr   // the last one given
}

// nextLBAddr gives a load balancer an address of lbAddrs that none had
// before, skipping .0 and .255 (a loopback block's claim address ends in
// .255: providers/loopback), or the zero Addr when there is no range or it
// is used up.
func (s *state) nextLBAddr() netip.Addr {
	if !s.lbAddrs.IsValid() {
		return netip.Addr{}
	}
	a := s.lastLBAddr
	if !a.IsValid() {
		a = s.lbAddrs.Addr()
	}
	for {
		a = a.Next()
		if !s.lbAddrs.Contains(a) {
			return netip.Addr{}
		}
		if last := a.As4()[3]; last != 0 && last != 255 {
			s.lastLBAddr = a
			return a
		}
	}
}

type subnet struct {
	id, zone string
	cidr     netip.Prefix
	cidr6    netip.Prefix
	tags     tags
}

// newID makes a resource ID: the prefix and 17 hex digits, as EC2's look.
func (s *state) newID(prefix string) string {
	s.counter++
	return fmt.Sprintf("%s-%017x", prefix, 0xc0ffee000000+s.counter)
}

// clusterTagKey is the tag that marks a resource as the cluster's
// (kubernetes.io/cluster/<id>), with owned or shared.
func (s *state) clusterTagKey() string { return "kubernetes.io/cluster/" + s.clusterID }

// match reports whether a resource with the given attribute values and
// tags passes every filter. A filter's values are alternatives and may use
// * and ? as EC2 allows; tag:K and tag-key filter on tags.
func match(fs []filter, attrs map[string][]string, t tags) (bool, *apiError) {
	for _, f := range fs {
		var have []string
		switch {
		case strings.HasPrefix(f.name, "tag:"):
			if v, ok := t.get(strings.TrimPrefix(f.name, "tag:")); ok {
				have = []string{v}
			}
		case f.name == "tag-key":
			for _, x := range t {
				have = append(have, x.Key)
			}
		default:
			v, ok := attrs[f.name]
			if !ok {
				return false, errCode("InvalidParameterValue", "The filter '%s' is invalid", f.name)
			}
			have = v
		}
		if !slices.ContainsFunc(f.values, func(want string) bool {
			return slices.ContainsFunc(have, func(h string) bool {
				ok, err := path.Match(want, h)
				return err == nil && ok
			})
		}) {
			return false, nil
		}
	}
	return true, nil
}

package cloud

import (
	"errors"
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// The DNS server answers for the emulated load balancers' names: a classic
// load balancer's ingress is its DNSName, and a client must resolve it to
// reach the data path. It serves UDP on the address it is given
// (aws-cloud --dns), authoritative for the load balancers only: an A query
// for a load balancer's DNSName gets its address, any other type for it an
// empty answer, and any other name NXDOMAIN. The harness's probes ask it
// through the profile's loadBalancer.ingressNameserver (docs/profile.md).

// dnsTTL is short: a name deleted and made again gets a new address.
const dnsTTL = 1

// lookupLB returns the address of the load balancer whose DNSName is name
// (any case, with or without the final dot), and whether one has it.
func (s *state) lookupLB(name string) (netip.Addr, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, lb := range s.elbs {
		if strings.ToLower(lb.dnsName) == name {
			return lb.addr, true
		}
	}
	for _, lb := range s.nlbs {
		if strings.ToLower(lb.dnsName) == name {
			return lb.addr, true
		}
	}
	return netip.Addr{}, false
}

// serveDNS answers queries on conn until it is closed.
func (s *state) serveDNS(conn net.PacketConn) error {
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if out, ok := s.answerDNS(buf[:n]); ok {
			_, _ = conn.WriteTo(out, from)
		}
	}
}

// answerDNS builds the response to one query message; ok is false for a
// message that is not a query with one question (it is dropped).
func (s *state) answerDNS(query []byte) (out []byte, ok bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	resp := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	addr, known := s.lookupLB(q.Name.String())
	switch {
	case !known:
		resp.RCode = dnsmessage.RCodeNameError
	case !addr.Is4():
		resp.RCode = dnsmessage.RCodeServerFailure // a load balancer the data path does not serve
	}
	b := dnsmessage.NewBuilder(nil, resp)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if resp.RCode == dnsmessage.RCodeSuccess && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		if b.AResource(rh, dnsmessage.AResource{A: addr.As4()}) != nil {
			return nil, false
		}
	}
	out, err = b.Finish()
	return out, err == nil
}

package cloudapi

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// Address pools. The defaults put node InternalIPs and load balancer
// ingress IPs on loopback (127.0.0.0/8 is all routed to lo on Linux), so a
// simulated node can really listen on its InternalIP and a test can really
// connect to a load balancer. ExternalIPs come from the documentation
// ranges of RFC 5737 and RFC 3849, then (past the 762 addresses those give,
// for clouds of a thousand instances) from the benchmarking range of RFC
// 2544: they are reported, never sent traffic.
var (
	defaultNodeIPRange    = netip.MustParsePrefix("127.64.0.0/16")
	defaultIngressIPRange = netip.MustParsePrefix("127.65.0.0/16")
	externalIPv4Pools     = []netip.Prefix{
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("198.18.0.0/15"),
	}
	internalIPv6Base = netip.MustParseAddr("fd00:64::")
	externalIPv6Base = netip.MustParseAddr("2001:db8::")
)

// Default placement of new instances.
const (
	defaultRegion       = "region-1"
	defaultInstanceType = "ref.small"
)

var defaultZones = []string{"zone-a", "zone-b", "zone-c"}

// nthIPv4 returns the n-th (from 1) address of an IPv4 prefix, skipping
// addresses that end in .0 or .255 so that none looks like a network or
// broadcast address: n=1 is x.y.0.1, n=254 is x.y.0.254, n=255 is x.y.1.1.
func nthIPv4(prefix netip.Prefix, n int) (netip.Addr, error) {
	if n < 1 || !prefix.Addr().Is4() {
		return netip.Addr{}, fmt.Errorf("no address %d in %s", n, prefix)
	}
	base := prefix.Masked().Addr().As4()
	offset := uint32((n-1)/254)*256 + uint32((n-1)%254) + 1
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(base[:])+offset)
	addr := netip.AddrFrom4(b)
	if !prefix.Contains(addr) {
		return netip.Addr{}, fmt.Errorf("address range %s is exhausted", prefix)
	}
	return addr, nil
}

// nthExternalIPv4 returns the n-th (from 1) address across the external
// IPv4 pools.
func nthExternalIPv4(n int) (netip.Addr, error) {
	for _, pool := range externalIPv4Pools {
		size := poolSize(pool)
		if n <= size {
			return nthIPv4(pool, n)
		}
		n -= size
	}
	return netip.Addr{}, fmt.Errorf("external IPv4 pools are exhausted")
}

// poolSize is how many addresses nthIPv4 hands out from an IPv4 prefix:
// 254 of every 256.
func poolSize(prefix netip.Prefix) int {
	return (1 << (32 - prefix.Bits())) / 256 * 254
}

// nthIPv6 returns base + n, counting in the low 64 bits.
func nthIPv6(base netip.Addr, n int) netip.Addr {
	b := base.As16()
	binary.BigEndian.PutUint64(b[8:], binary.BigEndian.Uint64(b[8:])+uint64(n))
	return netip.AddrFrom16(b)
}

// allocateAddresses returns the addresses of the n-th instance: the
// InternalIPs in family order, then the ExternalIPs in family order, then
// the Hostname.
func allocateAddresses(nodeRange netip.Prefix, n int, name string, families []string) ([]Address, error) {
	var internal, external []Address
	for _, family := range families {
		switch family {
		case IPv4:
			in, err := nthIPv4(nodeRange, n)
			if err != nil {
				return nil, fmt.Errorf("allocating InternalIP: %w", err)
			}
			ex, err := nthExternalIPv4(n)
			if err != nil {
				return nil, fmt.Errorf("allocating ExternalIP: %w", err)
			}
			internal = append(internal, Address{Type: AddressInternalIP, Address: in.String()})
			external = append(external, Address{Type: AddressExternalIP, Address: ex.String()})
		case IPv6:
			internal = append(internal, Address{Type: AddressInternalIP, Address: nthIPv6(internalIPv6Base, n).String()})
			external = append(external, Address{Type: AddressExternalIP, Address: nthIPv6(externalIPv6Base, n).String()})
		default:
			return nil, fmt.Errorf("unknown IP family %q (want IPv4 or IPv6)", family)
		}
	}
	addrs := append(internal, external...)
	return append(addrs, Address{Type: AddressHostname, Address: name}), nil
}

// providerIDPrefix starts every providerID of this cloud.
const providerIDPrefix = "reference://"

// ProviderID returns the providerID of an instance: reference://<zone>/<id>.
func ProviderID(zone, id string) string {
	return providerIDPrefix + zone + "/" + id
}

// ParseProviderID returns the zone and instance ID of a providerID made by
// ProviderID.
func ParseProviderID(providerID string) (zone, id string, err error) {
	rest, ok := strings.CutPrefix(providerID, providerIDPrefix)
	if ok {
		zone, id, ok = strings.Cut(rest, "/")
	}
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", "", fmt.Errorf("providerID %q: want %s<zone>/<instance ID>", providerID, providerIDPrefix)
	}
	return zone, id, nil
}

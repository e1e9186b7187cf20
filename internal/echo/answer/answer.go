// Package answer is the line the echo server (internal/echo) sends to every
// TCP connection, UDP datagram and HTTP GET /, and that the data path specs
// read back (framework.ParseEchoAnswer). It is a leaf package, importing the
// standard library only, so that the server does not link the framework and
// the spec binaries do not link the server.
//
// The line is
//
//	echo pod=<pod> node=<node> client=<ip>
//
// with the fields separated by one space and ended by "\n" on the wire:
//
//   - pod: the answering pod's name (env POD_NAME);
//   - node: the node it runs on (env NODE_NAME);
//   - client: the source IP the server saw, without a port; an IPv4
//     client of a dual-stack socket is written as IPv4 (10.0.0.1, not
//     ::ffff:10.0.0.1).
//
// An unknown value is written "-". A value never holds a space, "=" or a
// control character: String writes each as "_". Parse takes the fields in
// any order, needs each of the three exactly once and ignores fields it
// does not know, so that the line can grow without breaking older readers.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package answer

import (
	"fmt"
	"net/netip"
	"strings"
)

// Prefix is the line's first word.
const Prefix = "echo"

// Unknown is written for an empty value.
const Unknown = "-"

// The keys of the line's fields, in the order String writes them.
const (
	KeyPod    = "pod"
	KeyNode   = "node"
	KeyClient = "client"
)

// Answer is what one line says. An empty field is unknown.
type Answer struct {
	// Pod is the name of the pod that answered.
	Pod string
	// Node is the name of the node the pod runs on.
	Node string
	// Client is the source IP the server saw, without a port.
	Client string
}

// String is the line, without its "\n".
func (a Answer) String() string {
	return Prefix + " " + KeyPod + "=" + value(a.Pod) + " " + KeyNode + "=" + value(a.Node) + " " + KeyClient + "=" + value(a.Client)
}

// value is v as a field's value: Unknown when empty, with spaces, "=" and
// control characters replaced by "_".
func value(v string) string {
	if v == "" {
		return Unknown
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == '=' || r == 0x7f {
			return '_'
		}
		return r
	}, v)
}

// Parse reads a line String wrote; surrounding white space (the "\n") is
// ignored. A client that is not Unknown must be an IP address.
func Parse(line string) (Answer, error) {
	fields := strings.Split(strings.TrimSpace(line), " ")
	if fields[0] != Prefix {
		return Answer{}, fmt.Errorf("echo answer %q: expected it to start with %q", line, Prefix+" ")
	}
	var a Answer
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return Answer{}, fmt.Errorf("echo answer %q: field %q is not key=value", line, f)
		}
		var dst *string
		switch k {
		case KeyPod:
			dst = &a.Pod
		case KeyNode:
			dst = &a.Node
		case KeyClient:
			dst = &a.Client
		default:
			continue
		}
		if seen[k] {
			return Answer{}, fmt.Errorf("echo answer %q: field %q given twice", line, k)
		}
		seen[k] = true
		if v != Unknown {
			*dst = v
		}
	}
	var missing []string
	for _, k := range []string{KeyPod, KeyNode, KeyClient} {
		if !seen[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Answer{}, fmt.Errorf("echo answer %q: missing field(s) %s", line, strings.Join(missing, ", "))
	}
	if a.Client != "" {
		if _, err := netip.ParseAddr(a.Client); err != nil {
			return Answer{}, fmt.Errorf("echo answer %q: client %q is not an IP address", line, a.Client)
		}
	}
	return a, nil
}

// ClientIP is the form of addr's IP that the line's client field holds:
// without a port or zone, an IPv4-mapped IPv6 address as IPv4. It is
// empty when addr is not an IP address.
func ClientIP(addr netip.Addr) string {
	if !addr.IsValid() {
		return ""
	}
	return addr.Unmap().WithZone("").String()
}

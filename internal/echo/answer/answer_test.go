package answer

import (
	"net/netip"
	"strings"
	"testing"
)

func TestStringAndParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Answer
		line string
		// back is what Parse gives for line, when not in.
		back *Answer
	}{
		{name: "all fields", in: Answer{Pod: "echo-7d9f-abcde", Node: "kind-worker", Client: "10.244.1.1"}, line: "echo pod=echo-7d9f-abcde node=kind-worker client=10.244.1.1"},
		{name: "IPv6 client", in: Answer{Pod: "p", Node: "n", Client: "fd00:10:244::1"}, line: "echo pod=p node=n client=fd00:10:244::1"},
		{name: "unknown fields", in: Answer{}, line: "echo pod=- node=- client=-"},
		{name: "only the node", in: Answer{Node: "node-1"}, line: "echo pod=- node=node-1 client=-"},
		{name: "spaces and = replaced", in: Answer{Pod: "a b=c", Node: "n\tm\n", Client: "::1"}, line: "echo pod=a_b_c node=n_m_ client=::1", back: &Answer{Pod: "a_b_c", Node: "n_m_", Client: "::1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.String(); got != tc.line {
				t.Fatalf("%#v.String() = %q, expected %q", tc.in, got, tc.line)
			}
			want := tc.in
			if tc.back != nil {
				want = *tc.back
			}
			for _, line := range []string{tc.line, tc.line + "\n", tc.line + "\r\n"} {
				got, err := Parse(line)
				if err != nil {
					t.Fatalf("Parse(%q): %v", line, err)
				}
				if got != want {
					t.Fatalf("Parse(%q) = %#v, expected %#v", line, got, want)
				}
			}
		})
	}
}

func TestParseOtherForms(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Answer
	}{
		{"echo client=1.2.3.4 node=n pod=p", Answer{Pod: "p", Node: "n", Client: "1.2.3.4"}},
		{"echo pod=p node=n client=1.2.3.4 zone=z version=2", Answer{Pod: "p", Node: "n", Client: "1.2.3.4"}},
		{"  echo pod=p node=n client=-  ", Answer{Pod: "p", Node: "n"}},
	} {
		got, err := Parse(tc.line)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.line, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %#v, expected %#v", tc.line, got, tc.want)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range []struct {
		line string
		// says is part of the error.
		says string
	}{
		{"", `start with "echo "`},
		{"kind-worker", `start with "echo "`},
		{"ECHO pod=p node=n client=-", `start with "echo "`},
		{"echo", "missing field(s) pod, node, client"},
		{"echo pod=p node=n", "missing field(s) client"},
		{"echo pod=p  node=n client=-", `field "" is not key=value`},
		{"echo pod=p node client=-", `field "node" is not key=value`},
		{"echo pod= node=n client=-", `field "pod=" is not key=value`},
		{"echo =p node=n client=-", `field "=p" is not key=value`},
		{"echo pod=p node=n client=- pod=q", `field "pod" given twice`},
		{"echo pod=p node=n client=10.0.0.1:8080", `client "10.0.0.1:8080" is not an IP address`},
		{"echo pod=p node=n client=kind-worker", `client "kind-worker" is not an IP address`},
	} {
		got, err := Parse(tc.line)
		if err == nil {
			t.Errorf("Parse(%q) = %#v, expected an error", tc.line, got)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "echo answer") {
			t.Errorf("Parse(%q): error %q, expected it to say %q", tc.line, err, tc.says)
		}
	}
}

func TestClientIP(t *testing.T) {
	for _, tc := range []struct {
		addr netip.Addr
		want string
	}{
		{netip.MustParseAddr("10.0.0.1"), "10.0.0.1"},
		{netip.MustParseAddr("::ffff:10.0.0.1"), "10.0.0.1"},
		{netip.MustParseAddr("fe80::1%eth0"), "fe80::1"},
		{netip.MustParseAddr("::1"), "::1"},
		{netip.Addr{}, ""},
	} {
		if got := ClientIP(tc.addr); got != tc.want {
			t.Errorf("ClientIP(%v) = %q, expected %q", tc.addr, got, tc.want)
		}
	}
}

package echo

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	env := map[string]string{EnvPodName: "echo-abc", EnvNodeName: "kind-worker"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name string
		args []string
		want Options
		addr Addresses
	}{
		{
			name: "defaults",
			want: Options{TCPPorts: []int{8080}, UDPPorts: []int{8080}, HTTPPort: 8081, Pod: "echo-abc", Node: "kind-worker"},
			addr: Addresses{TCP: []string{":8080"}, UDP: []string{":8080"}, HTTP: ":8081"},
		},
		{
			name: "lists and drain",
			args: []string{"--tcp-ports", "80, 443", "--udp-ports=53,5353", "--http-port=9000", "--drain=2s"},
			want: Options{TCPPorts: []int{80, 443}, UDPPorts: []int{53, 5353}, HTTPPort: 9000, Drain: 2 * time.Second, Pod: "echo-abc", Node: "kind-worker"},
			addr: Addresses{TCP: []string{":80", ":443"}, UDP: []string{":53", ":5353"}, HTTP: ":9000"},
		},
		{
			name: "no UDP, no HTTP",
			args: []string{"--udp-ports=", "--http-port=0"},
			want: Options{TCPPorts: []int{8080}, HTTPPort: 0, Pod: "echo-abc", Node: "kind-worker"},
			addr: Addresses{TCP: []string{":8080"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFlags(tc.args, getenv, io.Discard)
			if err != nil {
				t.Fatalf("ParseFlags(%q): %v", tc.args, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseFlags(%q) = %#v, expected %#v", tc.args, got, tc.want)
			}
			if a := got.Addresses(); !reflect.DeepEqual(a, tc.addr) {
				t.Fatalf("Addresses() = %#v, expected %#v", a, tc.addr)
			}
		})
	}
}

func TestParseFlagsRejects(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--tcp-ports=http"}, `"http" is not a port number`},
		{[]string{"--tcp-ports=80,80"}, "port 80 given twice"},
		{[]string{"--tcp-ports=0"}, "--tcp-ports: 0 is not a port"},
		{[]string{"--udp-ports=70000"}, "--udp-ports: 70000 is not a port"},
		{[]string{"--http-port=-1"}, "--http-port: -1 is not a port"},
		{[]string{"--http-port=8080"}, "--http-port 8080 is also in --tcp-ports"},
		{[]string{"--tcp-ports=", "--udp-ports=", "--http-port=0"}, "nothing to serve"},
		{[]string{"--drain=-1s"}, "--drain: -1s is negative"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
	} {
		_, err := ParseFlags(tc.args, getenv, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseFlags(%q): error %v, expected one saying %q", tc.args, err, tc.says)
		}
	}
}

func TestMainExitCodes(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"-h"}, 0, "echo pod=$POD_NAME node=$NODE_NAME client=<source IP>"},
		{[]string{"--tcp-ports=x"}, 2, `echo-server: invalid value "x" for flag -tcp-ports`},
	} {
		var out strings.Builder
		if code := Main(t.Context(), tc.args, getenv, &out); code != tc.code {
			t.Errorf("Main(%q) = %d, expected %d; output:\n%s", tc.args, code, tc.code, out.String())
		}
		if !strings.Contains(out.String(), tc.says) {
			t.Errorf("Main(%q) wrote %q, expected it to say %q", tc.args, out.String(), tc.says)
		}
	}
	if _, err := ParseFlags([]string{"-help"}, getenv, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("ParseFlags(-help): %v, expected flag.ErrHelp", err)
	}
}

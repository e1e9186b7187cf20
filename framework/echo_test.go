package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/echo"
)

func TestEchoAnswerRoundTrip(t *testing.T) {
	for _, a := range []EchoAnswer{
		{Pod: "echo-6c9f-x2k4q", Node: "kind-worker2", Client: "172.18.0.1"},
		{Pod: "echo-6c9f-x2k4q", Node: "kind-worker2", Client: "fc00:f853:ccd:e793::1"},
		{},
	} {
		got, err := ParseEchoAnswer(a.String())
		if err != nil {
			t.Errorf("ParseEchoAnswer(%q): %v", a.String(), err)
			continue
		}
		if got != a {
			t.Errorf("ParseEchoAnswer(%q) = %#v, expected %#v", a.String(), got, a)
		}
	}
	for _, line := range []string{"kind-worker", "echo pod=p node=n", "echo pod=p node=n client=n"} {
		if a, err := ParseEchoAnswer(line); err == nil {
			t.Errorf("ParseEchoAnswer(%q) = %#v, expected an error", line, a)
		}
	}
}

// The data path probes read what the echo server writes: Prober.TCP gets
// the line without sending anything, Prober.UDP gets it for its datagram.
func TestEchoServerAnswersProbes(t *testing.T) {
	const timeout = 5 * time.Second
	l, err := echo.Listen(echo.Addresses{TCP: []string{"127.0.0.1:0"}, UDP: []string{"127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&echo.Server{Pod: "echo-1", Node: "node-1"}).Serve(ctx, l) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	want := EchoAnswer{Pod: "echo-1", Node: "node-1", Client: "127.0.0.1"}
	for _, p := range []struct {
		proto string
		probe func(context.Context, string, time.Duration) (string, error)
		addr  string
	}{
		{"tcp", Prober{}.TCP, l.TCP[0].Addr().String()},
		{"udp", Prober{}.UDP, l.UDP[0].LocalAddr().String()},
	} {
		line, err := p.probe(t.Context(), p.addr, timeout)
		if err != nil {
			t.Errorf("probing %s %s: %v", p.proto, p.addr, err)
			continue
		}
		got, err := ParseEchoAnswer(line)
		if err != nil {
			t.Errorf("%s %s: %v", p.proto, p.addr, err)
			continue
		}
		if got != want {
			t.Errorf("%s %s answered %#v, expected %#v", p.proto, p.addr, got, want)
		}
		if strings.Contains(line, "\n") {
			t.Errorf("%s %s: the probe returned %q with its newline", p.proto, p.addr, line)
		}
	}
}

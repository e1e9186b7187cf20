package clouddriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeDriver writes a shell script that answers the handshake and runs
// body for every other verb ("$1 $2" is the verb, stdin the request).
func fakeDriver(t *testing.T, body string) []string {
	t.Helper()
	script := `#!/bin/sh
if [ "$1" = info ]; then
  echo '{"protocolVersion":"v1","provider":"fake","verbs":["instances list","instance get","instance delete","loadbalancer get","loadbalancers list","calls list"]}'
  exit 0
fi
` + body
	path := filepath.Join(t.TempDir(), "driver")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{path}
}

func TestDriverAnswers(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		call      func(context.Context, *Driver) error
		wantErr   []string // substrings; empty means success
		notFound  bool
		unsupport bool
		// protocol: the driver broke the protocol, and Faults counts it.
		protocol bool
	}{
		{
			name: "valid answer",
			body: `cat >/dev/null; echo '{"instances":[{"name":"n1","zone":"z"}]}'`,
			call: func(ctx context.Context, d *Driver) error {
				in, err := d.ListInstances(ctx)
				if err == nil && (len(in) != 1 || in[0].Zone != "z") {
					return errors.New("wrong decode")
				}
				return err
			},
		},
		{
			name:     "invalid JSON quotes stdout",
			body:     `echo 'this is not json'`,
			call:     func(ctx context.Context, d *Driver) error { _, err := d.ListInstances(ctx); return err },
			wantErr:  []string{`cloud driver driver broke the protocol: "instances list" answered with invalid JSON`, "this is not json"},
			protocol: true,
		},
		{
			name:    "non-zero exit quotes stderr",
			body:    `echo 'quota exceeded in zone-a' >&2; exit 1`,
			call:    func(ctx context.Context, d *Driver) error { _, err := d.GetInstance(ctx, "n1"); return err },
			wantErr: []string{`cloud driver driver "instance get": failed`, "exit code 1", "stderr: quota exceeded in zone-a"},
		},
		{
			name:     "exit 3 is not found",
			body:     `echo 'no instance n1' >&2; exit 3`,
			call:     func(ctx context.Context, d *Driver) error { return d.DeleteInstance(ctx, "n1") },
			wantErr:  []string{"no instance n1"},
			notFound: true,
		},
		{
			name: "every load balancer",
			body: `cat >/dev/null; echo '{"loadBalancers":[{"exists":true,"name":"lb1","serviceNamespace":"ns","serviceName":"web"}]}'`,
			call: func(ctx context.Context, d *Driver) error {
				lbs, err := d.ListLoadBalancers(ctx)
				if err == nil && (len(lbs) != 1 || lbs[0].Name != "lb1" || lbs[0].ServiceNamespace != "ns" || lbs[0].ServiceName != "web") {
					return fmt.Errorf("wrong decode: %+v", lbs)
				}
				return err
			},
		},
		{
			name:     "a load balancer list without the list",
			body:     `echo '{}'`,
			call:     func(ctx context.Context, d *Driver) error { _, err := d.ListLoadBalancers(ctx); return err },
			wantErr:  []string{`broke the protocol: "loadbalancers list" answered without "loadBalancers"`},
			protocol: true,
		},
		{
			name: "missing object in answer",
			body: `echo '{}'`,
			call: func(ctx context.Context, d *Driver) error {
				_, err := d.GetLoadBalancer(ctx, ServiceRef{Name: "s"})
				return err
			},
			wantErr:  []string{`broke the protocol: "loadbalancer get" answered without a "loadBalancer"`},
			protocol: true,
		},
		{
			name:     "two JSON values",
			body:     `echo '{"instances":[]} {"instances":[]}'`,
			call:     func(ctx context.Context, d *Driver) error { _, err := d.ListInstances(ctx); return err },
			wantErr:  []string{"more than one JSON value"},
			protocol: true,
		},
		{
			name:    "hangs past the call timeout",
			body:    `exec sleep 30`,
			call:    func(ctx context.Context, d *Driver) error { _, err := d.ListInstances(ctx); return err },
			wantErr: []string{"did not answer within"},
		},
		{
			name:      "verb not listed",
			body:      `echo '{}'`,
			call:      func(ctx context.Context, d *Driver) error { return d.StopInstance(ctx, "n1") },
			wantErr:   []string{`does not implement "instance stop"`},
			unsupport: true,
		},
		{
			name: "call log: after and operations go in, calls and last come out",
			body: `req=$(cat); case "$req" in *'"after":7,"operations":["CreateRoute"]'*) echo '{"calls":[{"seq":9,"time":"2026-01-02T03:04:05Z","operation":"CreateRoute","caller":"ccm-a"}],"last":12}';; *) echo "got $req" >&2; exit 1;; esac`,
			call: func(ctx context.Context, d *Driver) error {
				calls, last, err := d.ListCalls(ctx, 7, OpCreateRoute)
				if err == nil && (len(calls) != 1 || calls[0].Seq != 9 || calls[0].Caller != "ccm-a" || calls[0].Time.IsZero() || last != 12) {
					return fmt.Errorf("wrong decode: %+v, last %d", calls, last)
				}
				return err
			},
		},
		{
			name: "request arrives on stdin",
			body: `req=$(cat); case "$req" in *'"name":"n7"'*) echo '{"instance":{"name":"n7"}}';; *) echo "got $req" >&2; exit 1;; esac`,
			call: func(ctx context.Context, d *Driver) error { _, err := d.GetInstance(ctx, "n7"); return err },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			d, err := New(ctx, Options{Command: fakeDriver(t, tt.body), CallTimeout: 2 * time.Second})
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			err = tt.call(ctx, d)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if IsNotFound(err) != tt.notFound {
				t.Errorf("IsNotFound = %v, want %v", IsNotFound(err), tt.notFound)
			}
			var u *UnsupportedError
			if errors.As(err, &u) != tt.unsupport {
				t.Errorf("unsupported = %v, want %v", errors.As(err, &u), tt.unsupport)
			}
			if IsProtocolError(err) != tt.protocol {
				t.Errorf("IsProtocolError = %v, want %v", IsProtocolError(err), tt.protocol)
			}
			wantFaults := 0
			if tt.protocol {
				wantFaults = 1
			}
			if got := d.Faults(); got != wantFaults {
				t.Errorf("Faults = %d, want %d", got, wantFaults)
			}
			if got := d.FaultsSince(0); len(got) != wantFaults || wantFaults == 1 && got[0].Error() != err.Error() {
				t.Errorf("FaultsSince(0) = %v, want the call's error", got)
			}
		})
	}
}

func TestHandshakeRejectsOtherProtocols(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driver")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho '{\"protocolVersion\":\"v9\",\"verbs\":[]}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{Command: []string{path}})
	if err == nil || !strings.Contains(err.Error(), `"v9"`) {
		t.Fatalf("err = %v, want one naming the driver's protocol", err)
	}
}

func TestHandshakeGarbage(t *testing.T) {
	tests := []struct {
		name, answer string
		want         []string
	}{
		{"not JSON", "hello", []string{"driver broke the protocol", `"info" answered with invalid JSON`, "hello"}},
		{"verbs not a list", `{"protocolVersion":"v1","verbs":"instances list"}`, []string{"invalid JSON", "verbs"}},
		{"no protocol version", `{"verbs":[]}`, []string{`answered protocol version ""`}},
		{"an empty verb", `{"protocolVersion":"v1","verbs":["instances list",""]}`, []string{"empty verb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "driver")
			if err := os.WriteFile(path, []byte("#!/bin/sh\ncat <<'EOF'\n"+tt.answer+"\nEOF\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := New(context.Background(), Options{Command: []string{path}})
			if err == nil || !IsProtocolError(err) {
				t.Fatalf("err = %v, want a protocol error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFaultsSince(t *testing.T) {
	d, err := New(context.Background(), Options{Command: fakeDriver(t, `echo garbage`)})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = d.ListInstances(context.Background())
	mark := d.Faults()
	if len(d.FaultsSince(mark)) != 0 {
		t.Errorf("FaultsSince(mark) right after mark is not empty")
	}
	_, _ = d.GetInstance(context.Background(), "n1")
	got := d.FaultsSince(mark)
	if len(got) != 1 || got[0].Verb != VerbInstanceGet {
		t.Errorf("FaultsSince(mark) = %v, want the instance get call", got)
	}
	var nilDriver *Driver
	if nilDriver.Faults() != 0 || nilDriver.FaultsSince(0) != nil {
		t.Errorf("a nil driver has faults")
	}
}

package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestDenied(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "no error", err: nil},
		{name: "connection refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, want: true},
		{name: "dial deadline", err: fmt.Errorf("dial: %w", context.DeadlineExceeded), want: true},
		{name: "read timeout", err: fmt.Errorf("reading from x: %w", &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}), want: true},
		{name: "closed at once", err: fmt.Errorf("reading from x: %w", io.EOF)},
		{name: "reset", err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
		{name: "other", err: errors.New("no such host")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Denied(tt.err); got != tt.want {
				t.Errorf("Denied(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// A Prober with a NameserverResolver resolves an ingress hostname at that
// server only: a name the machine's resolver has never heard of reaches
// the listener the server names, and a name the server does not know
// fails to resolve instead of reaching anything.
func TestProberResolvesAtTheNameserver(t *testing.T) {
	ctx := context.Background()
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "n1 default/web")
			c.Close()
		}
	}()
	ns, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	const known = "web-1.us-east-1.elb.example.test."
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := ns.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			resp := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true}
			if q.Name.String() != known {
				resp.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, resp)
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if resp.RCode == dnsmessage.RCodeSuccess && q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 1}, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
			}
			out, _ := b.Finish()
			_, _ = ns.WriteTo(out, from)
		}
	}()
	_, port, _ := net.SplitHostPort(backend.Addr().String())
	p := Prober{Resolver: NameserverResolver(ns.LocalAddr().String())}
	answer, err := p.TCP(ctx, net.JoinHostPort(strings.TrimSuffix(known, "."), port), 3*time.Second)
	if err != nil || answer != "n1 default/web" {
		t.Fatalf("probing %s through the nameserver: %q, %v; want the backend's line", known, answer, err)
	}
	if answer, err := p.TCP(ctx, net.JoinHostPort("gone-2.us-east-1.elb.example.test", port), 3*time.Second); err == nil {
		t.Errorf("a name the nameserver does not know reached %q", answer)
	} else if Denied(err) {
		t.Errorf("a name that does not resolve counts as a denial: %v", err)
	}
	if _, err := (Prober{}).TCP(ctx, net.JoinHostPort(strings.TrimSuffix(known, "."), port), 3*time.Second); err == nil {
		t.Errorf("the machine's resolver knows %s; the test proves nothing", known)
	}
}

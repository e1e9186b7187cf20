package echo

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/echo/answer"
)

// testTimeout bounds every network step of these tests.
const testTimeout = 5 * time.Second

// started is a Server serving on loopback, stopped at the end of the test.
type started struct {
	l      *Listeners
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, s *Server, a Addresses) *started {
	t.Helper()
	l, err := Listen(a)
	if err != nil {
		t.Fatalf("Listen(%+v): %v", a, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	st := &started{l: l, cancel: cancel, done: make(chan error, 1)}
	go func() { st.done <- s.Serve(ctx, l) }()
	t.Cleanup(func() { st.stop(t) })
	return st
}

// stop cancels Serve's context and returns how long Serve took to return.
func (st *started) stop(t *testing.T) time.Duration {
	t.Helper()
	begin := time.Now()
	st.cancel()
	select {
	case err, ok := <-st.done:
		if ok && err != nil {
			t.Errorf("Serve: %v", err)
		}
		if ok {
			close(st.done)
		}
	case <-time.After(testTimeout):
		t.Fatalf("Serve did not return %s after its context was done", testTimeout)
	}
	return time.Since(begin)
}

func readTCP(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatalf("dialing tcp %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading tcp %s: %v", addr, err)
	}
	return string(all)
}

func askUDP(t *testing.T, addr, payload string) string {
	t.Helper()
	c, err := net.DialTimeout("udp", addr, testTimeout)
	if err != nil {
		t.Fatalf("dialing udp %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := c.Write([]byte(payload)); err != nil {
		t.Fatalf("sending to udp %s: %v", addr, err)
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading udp %s: %v", addr, err)
	}
	return string(buf[:n])
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: testTimeout}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestServerAnswers(t *testing.T) {
	s := &Server{Pod: "echo-abc", Node: "kind-worker"}
	st := start(t, s, Addresses{
		TCP:  []string{"127.0.0.1:0", "127.0.0.1:0"},
		UDP:  []string{"127.0.0.1:0"},
		HTTP: "127.0.0.1:0",
	})
	const want = "echo pod=echo-abc node=kind-worker client=127.0.0.1\n"
	for _, ln := range st.l.TCP {
		if got := readTCP(t, ln.Addr().String()); got != want {
			t.Errorf("tcp %s sent %q, expected %q and the connection closed", ln.Addr(), got, want)
		}
	}
	for _, payload := range []string{"ccm-conformance probe\n", ""} {
		if got := askUDP(t, st.l.UDP[0].LocalAddr().String(), payload); got != want {
			t.Errorf("udp %s answered %q to %q, expected %q", st.l.UDP[0].LocalAddr(), got, payload, want)
		}
	}
	base := "http://" + st.l.HTTP.Addr().String()
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", http.StatusOK, "ok\n"},
		{"/", http.StatusOK, want},
		{"/other", http.StatusNotFound, ""},
	} {
		code, body := get(t, base+tc.path)
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("GET %s = %d %q, expected %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}
	if d := st.stop(t); d > 2*time.Second {
		t.Errorf("Serve took %s to return after its context was done, expected about 1s at most", d)
	}
	if _, err := net.DialTimeout("tcp", st.l.TCP[0].Addr().String(), testTimeout); err == nil {
		t.Errorf("tcp %s still accepts connections after Serve returned", st.l.TCP[0].Addr())
	}
}

// A client that sends data before reading still gets the line: the server
// reads what it sent before closing, instead of resetting the connection.
func TestServerTCPClientThatSends(t *testing.T) {
	st := start(t, &Server{Pod: "p"}, Addresses{TCP: []string{"127.0.0.1:0"}})
	addr := st.l.TCP[0].Addr().String()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := c.Write([]byte(strings.Repeat("GET / HTTP/1.0\r\n", 100))); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading tcp %s: %v", addr, err)
	}
	if want := "echo pod=p node=- client=127.0.0.1\n"; line != want {
		t.Errorf("tcp %s sent %q, expected %q", addr, line, want)
	}
}

// Listening on ":0", as the flags' ":PORT" do, takes IPv4 and IPv6
// clients on one socket, and names an IPv4 client as IPv4.
func TestServerDualStack(t *testing.T) {
	probe, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	st := start(t, &Server{Node: "n"}, Addresses{TCP: []string{":0"}, UDP: []string{":0"}})
	_, tcpPort, _ := net.SplitHostPort(st.l.TCP[0].Addr().String())
	_, udpPort, _ := net.SplitHostPort(st.l.UDP[0].LocalAddr().String())
	for _, ip := range []string{"127.0.0.1", "::1"} {
		want := answer.Answer{Node: "n", Client: ip}.String() + "\n"
		if got := readTCP(t, net.JoinHostPort(ip, tcpPort)); got != want {
			t.Errorf("tcp to %s sent %q, expected %q", ip, got, want)
		}
		if got := askUDP(t, net.JoinHostPort(ip, udpPort), "x"); got != want {
			t.Errorf("udp to %s answered %q, expected %q", ip, got, want)
		}
	}
}

// With Drain, the server keeps answering after its context is done while
// /healthz fails, and closes when the drain is over.
func TestServerDrain(t *testing.T) {
	draining := make(chan time.Duration, 1)
	over := make(chan time.Time)
	s := &Server{Pod: "p", Node: "n", Drain: time.Minute}
	s.after = func(d time.Duration) <-chan time.Time {
		draining <- d
		return over
	}
	st := start(t, s, Addresses{TCP: []string{"127.0.0.1:0"}, HTTP: "127.0.0.1:0"})
	base := "http://" + st.l.HTTP.Addr().String()
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("GET /healthz = %d before the drain, expected 200", code)
	}
	st.cancel()
	select {
	case d := <-draining:
		if d != time.Minute {
			t.Errorf("drained for %s, expected %s", d, time.Minute)
		}
	case <-time.After(testTimeout):
		t.Fatal("the drain did not start after the context was done")
	}
	if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable || body != "draining\n" {
		t.Errorf("GET /healthz = %d %q while draining, expected 503 %q", code, body, "draining\n")
	}
	if got, want := readTCP(t, st.l.TCP[0].Addr().String()), "echo pod=p node=n client=127.0.0.1\n"; got != want {
		t.Errorf("tcp sent %q while draining, expected %q", got, want)
	}
	select {
	case err := <-st.done:
		t.Fatalf("Serve returned (%v) before the drain was over", err)
	default:
	}
	close(over)
	st.stop(t)
}

// When one address cannot be had, Listen closes the sockets it opened.
func TestListenRollsBack(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()

	_, err = Listen(Addresses{TCP: []string{freeAddr}, HTTP: busy.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "listening on http "+busy.Addr().String()) {
		t.Fatalf("Listen with a busy HTTP address: %v, expected an error naming it", err)
	}
	again, err := net.Listen("tcp", freeAddr)
	if err != nil {
		t.Fatalf("tcp %s is still taken after Listen failed: %v", freeAddr, err)
	}
	again.Close()
}

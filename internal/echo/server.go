// Package echo is the echo server of the data path specs on real clusters:
// a backend pod that answers every TCP connection, UDP datagram and HTTP
// GET / with one line naming itself (the format is package answer's,
// which the specs read with framework.ParseEchoAnswer), and serves GET
// /healthz for readiness probes. cmd/echo-server is its main; its image is
// built by internal/images (docs/images.md).
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package echo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/echo/answer"
)

// Bounds of the server's work.
const (
	// connTimeout bounds one TCP connection: writing the line, then
	// reading until the client closes, so that what the client sent is
	// read before the close (a close with unread data resets the
	// connection, and a reset can discard the line before the client
	// reads it).
	connTimeout = 500 * time.Millisecond
	// maxDiscard is the most a TCP connection reads from its client.
	maxDiscard = 64 << 10
	// shutdownTimeout bounds the HTTP server's shutdown after SIGTERM
	// (and Drain).
	shutdownTimeout = 500 * time.Millisecond
	// readHeaderTimeout bounds an HTTP request's header.
	readHeaderTimeout = 5 * time.Second
	// maxDatagram is the largest UDP datagram read whole.
	maxDatagram = 64 << 10
)

// Addresses are what a server listens on, each "host:port".
type Addresses struct {
	// TCP and UDP get one socket each.
	TCP, UDP []string
	// HTTP is the address of GET /healthz and GET /; "" serves no HTTP.
	HTTP string
}

// Listeners are the sockets a Server serves.
type Listeners struct {
	TCP  []net.Listener
	UDP  []net.PacketConn
	HTTP net.Listener
}

// Listen opens a socket on every address; when one fails, those already
// open are closed.
func Listen(a Addresses) (*Listeners, error) {
	l := &Listeners{}
	for _, addr := range a.TCP {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("listening on tcp %s: %w", addr, err)
		}
		l.TCP = append(l.TCP, ln)
	}
	for _, addr := range a.UDP {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("listening on udp %s: %w", addr, err)
		}
		l.UDP = append(l.UDP, pc)
	}
	if a.HTTP != "" {
		ln, err := net.Listen("tcp", a.HTTP)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("listening on http %s: %w", a.HTTP, err)
		}
		l.HTTP = ln
	}
	return l, nil
}

// Close closes every socket, returning the errors other than an already
// closed socket's.
func (l *Listeners) Close() error {
	var errs []error
	closeOne := func(c io.Closer) {
		if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, ln := range l.TCP {
		closeOne(ln)
	}
	for _, pc := range l.UDP {
		closeOne(pc)
	}
	if l.HTTP != nil {
		closeOne(l.HTTP)
	}
	return errors.Join(errs...)
}

// Server answers on Listeners.
type Server struct {
	// Pod and Node name the answering pod; empty is unknown.
	Pod, Node string
	// Drain is how long Serve keeps answering once its context is done,
	// with /healthz failing, before it closes the sockets. Default 0.
	Drain time.Duration
	// Log receives a line when serving starts and stops. Default: none.
	Log *slog.Logger

	// after is time.After; tests replace it.
	after func(time.Duration) <-chan time.Time
	// draining is set once the context is done.
	draining atomic.Bool
}

// line is the answer to a client at addr.
func (s *Server) line(addr netip.Addr) string {
	return answer.Answer{Pod: s.Pod, Node: s.Node, Client: answer.ClientIP(addr)}.String() + "\n"
}

// Serve answers on l until ctx is done, keeps answering for Drain, then
// closes l and returns nil once every connection has been answered (about
// connTimeout at most). It returns an error, having closed l, when a
// socket fails before that.
func (s *Server) Serve(ctx context.Context, l *Listeners) error {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	after := s.after
	if after == nil {
		after = time.After
	}
	n := len(l.TCP) + len(l.UDP) + 1
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for _, ln := range l.TCP {
		wg.Go(func() {
			if err := s.serveTCP(ln, &wg); err != nil {
				errc <- err
			}
		})
	}
	for _, pc := range l.UDP {
		wg.Go(func() {
			if err := s.serveUDP(pc, log); err != nil {
				errc <- err
			}
		})
	}
	var hs *http.Server
	if l.HTTP != nil {
		hs = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: readHeaderTimeout}
		wg.Go(func() {
			if err := hs.Serve(l.HTTP); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("serving http on %s: %w", l.HTTP.Addr(), err)
			}
		})
	}
	log.Info("serving", "tcp", addrs(l.TCP), "udp", packetAddrs(l.UDP), "http", addrOf(l.HTTP), "pod", s.Pod, "node", s.Node)

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errc:
	}
	s.draining.Store(true)
	if failed == nil && s.Drain > 0 {
		log.Info("draining", "for", s.Drain)
		select {
		case <-after(s.Drain):
		case failed = <-errc:
		}
	}
	log.Info("stopping")
	// TCP and UDP first, so that all stop answering at once; the HTTP
	// server closes its listener itself, and lets its requests finish.
	closeErr := (&Listeners{TCP: l.TCP, UDP: l.UDP}).Close()
	if hs != nil {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		cancel()
	}
	closeErr = errors.Join(closeErr, l.Close())
	wg.Wait()
	if failed != nil {
		return failed
	}
	if closeErr != nil {
		return fmt.Errorf("closing the sockets: %w", closeErr)
	}
	log.Info("stopped")
	return nil
}

// serveTCP answers every connection ln accepts until ln is closed; each
// connection's goroutine is counted in wg.
func (s *Server) serveTCP(ln net.Listener, wg *sync.WaitGroup) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accepting on tcp %s: %w", ln.Addr(), err)
		}
		wg.Go(func() { s.answerTCP(c) })
	}
}

// answerTCP writes the line to c, closes c's sending side and reads what
// the client sends until it closes too, for connTimeout at most.
func (s *Server) answerTCP(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(connTimeout))
	if _, err := io.WriteString(c, s.line(ipOf(c.RemoteAddr()))); err != nil {
		return
	}
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, c, maxDiscard)
}

// serveUDP answers every datagram pc receives until pc is closed.
func (s *Server) serveUDP(pc net.PacketConn, log *slog.Logger) error {
	buf := make([]byte, maxDatagram)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("reading on udp %s: %w", pc.LocalAddr(), err)
		}
		if _, err := pc.WriteTo([]byte(s.line(ipOf(from))), from); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Info("answering a datagram failed", "udp", pc.LocalAddr().String(), "client", from.String(), "err", err)
		}
	}
}

// Handler serves GET /healthz (200 "ok", 503 "draining" once Serve's
// context is done) and GET / (the line, client the request's source IP).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.draining.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "draining\n")
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var ip netip.Addr
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			ip = ap.Addr()
		}
		_, _ = io.WriteString(w, s.line(ip))
	})
	return mux
}

// ipOf is addr's IP, invalid when addr has none.
func ipOf(addr net.Addr) netip.Addr {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr()
	case *net.UDPAddr:
		return a.AddrPort().Addr()
	}
	if addr == nil {
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}

func addrs(ls []net.Listener) []string {
	var s []string
	for _, ln := range ls {
		s = append(s, ln.Addr().String())
	}
	return s
}

func packetAddrs(pcs []net.PacketConn) []string {
	var s []string
	for _, pc := range pcs {
		s = append(s, pc.LocalAddr().String())
	}
	return s
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

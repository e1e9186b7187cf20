package loopback

import (
	"io"
	"net"
	"sync"
)

// Splice copies both ways between a client's connection and a backend's,
// the core of a simulated load balancer's TCP forwarding, until both sides
// are done. EOF on one side is passed on as a half-close; an error on
// either side closes both.
func Splice(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		if _, err := io.Copy(dst, src); err != nil {
			_ = a.Close()
			_ = b.Close()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Go(func() { half(b, a) })
	wg.Go(func() { half(a, b) })
	wg.Wait()
	_ = a.Close()
	_ = b.Close()
}

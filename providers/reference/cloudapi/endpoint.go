package cloudapi

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// An endpoint names where the cloud API is served:
//
//	unix:///run/cloud.sock   a unix socket (the usual form on one machine)
//	tcp://127.0.0.1:8080     a TCP address
//	http://127.0.0.1:8080    the same; accepted so httptest URLs work as-is

// ParseEndpoint splits an endpoint into a network ("unix" or "tcp") and an
// address for net.Dial or net.Listen.
func ParseEndpoint(endpoint string) (network, address string, err error) {
	scheme, rest, ok := strings.Cut(endpoint, "://")
	if !ok || rest == "" {
		return "", "", fmt.Errorf("endpoint %q: want unix:///path, tcp://host:port or http://host:port", endpoint)
	}
	switch scheme {
	case "unix":
		return "unix", rest, nil
	case "tcp", "http":
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return "", "", fmt.Errorf("endpoint %q: %w", endpoint, err)
		}
		return "tcp", rest, nil
	default:
		return "", "", fmt.Errorf("endpoint %q: unsupported scheme %q (want unix, tcp or http)", endpoint, scheme)
	}
}

// Listen opens a listener for endpoint. For a unix socket it binds and
// listens under a temporary name in the same directory and then renames the
// socket into place, so that a process waiting for the socket file to
// appear can connect as soon as it sees it. Closing the listener removes the
// socket file.
func Listen(endpoint string) (net.Listener, error) {
	network, address, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if network == "tcp" {
		l, err := net.Listen("tcp", address)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", endpoint, err)
		}
		return l, nil
	}

	// A short temporary name keeps us under the 108-byte limit of a socket
	// path whenever the final path fits.
	tmp := filepath.Join(filepath.Dir(address), fmt.Sprintf(".rc%d", os.Getpid()))
	_ = os.Remove(tmp)
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", endpoint, err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the file moves; unixListener.Close removes it
	if err := os.Rename(tmp, address); err != nil {
		_ = ul.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("moving socket into place at %s: %w", address, err)
	}
	return &unixListener{UnixListener: ul, path: address}, nil
}

// unixListener removes its socket file when closed.
type unixListener struct {
	*net.UnixListener
	path string
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if rmErr := os.Remove(l.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("removing socket %s: %w", l.path, rmErr))
	}
	return err
}

package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
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

package main

import (
	"context"
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// TestServeUnixSocket checks the contract a waiter relies on: once the
// socket file exists it answers, and after shutdown the file is gone.
func TestServeUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cloud.sock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, "unix://"+sock, cloudapi.Options{DisableDataPath: true}, nil, log.New(io.Discard, "", 0))
	}()

	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the socket never appeared")
		}
		time.Sleep(time.Millisecond)
	}
	c, err := cloudapi.NewClient("unix://"+sock, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListInstances(t.Context()); err != nil {
		t.Fatalf("first call after the socket appeared: %v", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("after shutdown the socket is still there (stat: %v)", err)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--listen", "unix:///tmp/x.sock", "extra"},
		{"--listen", "unix:///tmp/x.sock", "--node-ip-range", "fd00::/64"},
		{"--listen", "unix:///tmp/x.sock", "--ingress-ip-range", "nope"},
		{"--no-such-flag"},
	} {
		if code := run(args); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
}

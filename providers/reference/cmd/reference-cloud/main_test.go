package main

import (
	"context"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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

// asReferenceCloud, in the environment, makes this test binary run as
// reference-cloud with the arguments after "--" (see TestMain).
const asReferenceCloud = "REFERENCE_CLOUD_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asReferenceCloud) == "1" {
		args := os.Args[1:]
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Exit(run(args))
	}
	os.Exit(m.Run())
}

// A service manager, or a test's cleanup after its context's cancel,
// may send SIGTERM again while the cloud shuts down. The second signal
// must not kill it before it has released what it holds (with
// --kind-cluster, a host route that would outlive it): the cloud exits
// with its own status. The cloud runs as a process with a fake docker
// CLI (one node container) and a fake ip command on its PATH; the fake
// takes half a second to remove the route, and SIGTERMs keep coming
// every millisecond from the first "shutting down" until the exit.
func TestIntegrationRepeatedSIGTERMLetsShutdownFinish(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the cloud as a process")
	}
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	for name, body := range map[string]string{
		"docker": `case "$1" in
ps) echo "ccmc-1-control-plane control-plane" ;;
inspect) echo '{"ccmc-1":{"IPAddress":"172.18.0.2","GlobalIPv6Address":""}}' ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac
`,
		"ip": `case "$*" in
*" del "*) sleep 0.5 ;;
esac
`,
	} {
		script := "#!/bin/sh\necho \"" + name + " $*\" >>" + calls + "\n" + body
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "cloud.sock")
	logPath := filepath.Join(dir, "cloud.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "--listen", "unix://"+sock, "--no-data-path", "--kind-cluster", "ccmc-1")
	cmd.Env = append(os.Environ(), asReferenceCloud+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	showLog := func() string { data, _ := os.ReadFile(logPath); return string(data) }
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil }, "the socket", showLog)
	if !strings.Contains(showLog(), "load balancer ingress IPs from 100.72.") {
		_ = cmd.Process.Kill()
		t.Fatalf("the cloud did not take a routed ingress range; its log:\n%s", showLog())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, func() bool { return strings.Contains(showLog(), "shutting down") }, `"shutting down" in the log`, showLog)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for err = nil; ; {
		select {
		case err = <-done:
		case <-tick.C:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			continue
		}
		break
	}
	if err != nil {
		t.Fatalf("the cloud ended with %v, want exit 0; its log:\n%s", err, showLog())
	}
	data, _ := os.ReadFile(calls)
	if !regexp.MustCompile(`(?m)^ip -4 route del local 100\.72\.\d+\.0/24 dev lo$`).Match(data) {
		t.Errorf("the cloud never removed its ingress route; commands it ran:\n%s", data)
	}
}

func waitFor(t *testing.T, cond func() bool, what string, showLog func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s; the cloud's log:\n%s", what, showLog())
		}
		time.Sleep(time.Millisecond)
	}
}

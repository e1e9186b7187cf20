package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIntegrationProgram builds vsphere-cloud and runs it as the harness
// does: it must write the ready file last and exit cleanly on SIGTERM.
func TestIntegrationProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the program: %v", err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "vsphere-cloud")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no directory", nil},
		{"an argument", []string{"--dir", tmp, "extra"}},
		{"an unknown flag", []string{"--dir", tmp, "--no-such-flag"}},
	} {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, tc.args...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); exitCode(err) != 2 {
			t.Errorf("%s: exit %v, want 2; stderr: %s", tc.name, err, stderr.String())
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--dir", tmp, "--listen", "127.0.0.1:0", "--zones", "zone-x,zone-y", "--ip-family", "bad")
	cmd.Stderr = &stderr
	if err := cmd.Run(); exitCode(err) != 1 || !strings.Contains(stderr.String(), "ip family") {
		t.Errorf("a bad --ip-family: exit %v, stderr %s", err, stderr.String())
	}

	dir := filepath.Join(tmp, "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	cmd = exec.Command(bin, "--dir", dir, "--listen", "127.0.0.1:0", "--zones", "zone-x,zone-y", "--ip-family", "ipv4,ipv6")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	ready := filepath.Join(dir, "vsphere-cloud.ready")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("vsphere-cloud exited before it was ready: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30s\n%s", ready, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "vsphere.conf"))
	if err != nil || !strings.Contains(string(conf), `ip-family = "ipv4,ipv6"`) {
		t.Errorf("the cloud config: %v\n%s", err, conf)
	}
	if !strings.Contains(stderr.String(), "DC0_C0=zone-x, DC0_C1=zone-y") {
		t.Errorf("the log does not name the clusters' zones:\n%s", stderr.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("vsphere-cloud after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("vsphere-cloud did not exit 10s after SIGTERM\n%s", stderr.String())
	}
	if _, err := os.Stat(ready); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ready file after exit: %v", err)
	}
}

func exitCode(err error) int {
	if e, ok := errors.AsType[*exec.ExitError](err); ok {
		return e.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

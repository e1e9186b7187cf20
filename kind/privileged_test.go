package kind

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kinderrors "sigs.k8s.io/kind/pkg/errors"
	kindexec "sigs.k8s.io/kind/pkg/exec"
)

// TestWrapperRewritesPrivileged runs the docker wrapper over a fake
// docker that prints its arguments, one a line.
func TestWrapperRewritesPrivileged(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "real-docker")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nfor a do echo \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapperDir, err := writeWrapper(filepath.Join(dir, "bin"), fake)
	if err != nil {
		t.Fatal(err)
	}
	fallback := strings.Join(FallbackRunArgs(), "\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--name", "n", "--privileged", "--tmpfs", "/tmp", "img"}, "run\n--name\nn\n" + fallback + "\n--tmpfs\n/tmp\nimg"},
		{[]string{"create", "--privileged", "img"}, "create\n" + fallback + "\nimg"},
		{[]string{"container", "run", "--privileged", "img"}, "container\nrun\n" + fallback + "\nimg"},
		{[]string{"exec", "--privileged", "-i", "node", "sh", "-c", "echo a b"}, "exec\n-i\nnode\nsh\n-c\necho a b"},
		{[]string{"inspect", "--privileged"}, "inspect\n--privileged"},
		{[]string{"ps", "-a", "--filter", "label=x y"}, "ps\n-a\n--filter\nlabel=x y"},
	}
	for _, tt := range tests {
		out, err := exec.Command(filepath.Join(wrapperDir, "docker"), tt.args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", tt.args, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("docker %v ran as:\n%s\nwant:\n%s", tt.args, got, tt.want)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	o, err := Options{Getenv: getenv}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Privileged != PrivilegedAuto || !strings.HasPrefix(o.ClusterName, clusterNamePrefix) || len(o.ClusterName) != len(clusterNamePrefix)+8 {
		t.Errorf("defaults: privileged %s, name %s", o.Privileged, o.ClusterName)
	}
	if o.EtcdImageTag != "3.6.16-0" {
		t.Errorf("EtcdImageTag %s", o.EtcdImageTag)
	}
	env[EnvPrivileged] = "fallback"
	env[EnvNodeImage] = "my/node:1"
	if o, _ = (Options{Getenv: getenv}).withDefaults(); o.Privileged != PrivilegedFallback || o.NodeImage != "my/node:1" {
		t.Errorf("environment ignored: %s %s", o.Privileged, o.NodeImage)
	}
	env[EnvPrivileged] = "sometimes"
	if _, err := (Options{Getenv: getenv}).withDefaults(); err == nil {
		t.Error("a bad privileged mode was accepted")
	}
}

func TestWithoutCrictl(t *testing.T) {
	crictl := &kindexec.RunError{Command: []string{"docker", "exec", "--privileged", "n", "crictl", "images"}, Inner: errors.New("exit status 126")}
	other := &kindexec.RunError{Command: []string{"docker", "exec", "--privileged", "n", "journalctl"}, Inner: errors.New("exit status 1")}
	if err := withoutCrictl(kinderrors.NewAggregate([]error{crictl})); err != nil {
		t.Errorf("only crictl failed, got %v", err)
	}
	if err := withoutCrictl(kinderrors.NewAggregate([]error{crictl, other})); err == nil || !strings.Contains(err.Error(), "journalctl") {
		t.Errorf("a journalctl failure was dropped: %v", err)
	}
	if err := withoutCrictl(errors.New("plain")); err == nil {
		t.Error("an error that is not an aggregate was dropped")
	}
	if withoutCrictl(nil) != nil {
		t.Error("nil became an error")
	}
}

func TestNetworkGone(t *testing.T) {
	for out, want := range map[string]bool{
		"Error response from daemon: network ccmc-1 not found":        true,
		"Error: No such network: ccmc-1":                              true,
		"Error response from daemon: error while removing network: x": false,
	} {
		if got := networkGone(out); got != want {
			t.Errorf("networkGone(%q) = %v, want %v", out, got, want)
		}
	}
}

func TestLoggerWarningPrefix(t *testing.T) {
	var b strings.Builder
	l := newLogger(&b)
	l.Warn("WARNING: Here be dragons!")
	l.Warnf("cgroup v%d", 1)
	if got, want := b.String(), "kind: WARNING: Here be dragons!\nkind: WARNING: cgroup v1\n"; got != want {
		t.Errorf("logged %q, want %q", got, want)
	}
}

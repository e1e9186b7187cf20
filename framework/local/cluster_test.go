package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

// writeScript writes an executable shell script and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeBinaries points the binary overrides at scripts, so that Start builds
// nothing. kube-apiserver and kube-controller-manager fail if ever run.
func fakeBinaries(t *testing.T, etcdBody string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(k8sbin.EnvEtcd, writeScript(t, dir, "etcd", etcdBody))
	t.Setenv(k8sbin.EnvKubeAPIServer, writeScript(t, dir, "kube-apiserver", "echo should not run >&2; exit 1\n"))
	t.Setenv(k8sbin.EnvKubeControllerManager, writeScript(t, dir, "kube-controller-manager", "echo should not run >&2; exit 1\n"))
	t.Setenv(k8sbin.EnvCacheDir, filepath.Join(dir, "cache"))
}

// checkEtcdGone fails the test if the fake etcd that wrote its pid to
// pidFile still runs.
func checkEtcdGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid <= 0 || pidAlive(pid) {
		t.Errorf("etcd (pid %d) still runs after Start failed", pid)
	}
}

func TestStartFailsCleanlyWhenEtcdExits(t *testing.T) {
	fakeBinaries(t, "echo \"fake etcd: refusing to start with $1\" >&2\nexit 1\n")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where Start makes its temporary Dir

	c, err := Start(context.Background(), Options{})
	if err == nil {
		c.Stop(context.Background())
		t.Fatal("Start succeeded with an etcd that exits")
	}
	var compErr *ComponentError
	if !errors.As(err, &compErr) || compErr.Component != ComponentEtcd {
		t.Fatalf("error = %v, want a *ComponentError for etcd", err)
	}
	for _, want := range []string{
		"starting the local cluster: etcd: exited before it was ready: exit status 1",
		"command: " + os.Getenv(k8sbin.EnvEtcd) + " --name=local --data-dir=",
		"fake etcd: refusing to start with --name=local",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("Start left %v in TMPDIR", entries)
	}
}

func TestStartStopsWhatItStartedWhenEtcdIsNeverReady(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "etcd.pid")
	fakeBinaries(t, "echo $$ > "+pidFile+"\necho fake etcd: serving nothing\nexec sleep 600\n")
	dir := filepath.Join(t.TempDir(), "cluster")

	start := time.Now()
	c, err := Start(context.Background(), Options{Dir: dir, ReadyTimeout: time.Second, StopGracePeriod: time.Second})
	if err == nil {
		c.Stop(context.Background())
		t.Fatal("Start succeeded with an etcd that never answers")
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Start took %s to give up", elapsed)
	}
	for _, want := range []string{"etcd: not ready after 1s", "fake etcd: serving nothing", "last lines of " + filepath.Join(dir, "logs", "etcd.log")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	checkEtcdGone(t, pidFile)
	// A Dir the caller gave is kept, with the logs but without state.json.
	if _, err := os.Stat(filepath.Join(dir, "logs", "etcd.log")); err != nil {
		t.Errorf("the log is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); !os.IsNotExist(err) {
		t.Errorf("state.json is left behind: %v", err)
	}
}

func TestStartRefusesANonEmptyDir(t *testing.T) {
	fakeBinaries(t, "exit 1\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "is not empty") || !strings.Contains(err.Error(), "stop that cluster first") {
		t.Errorf("error = %v, want one saying the dir holds a cluster", err)
	}
}

func TestStartReportsMissingOverride(t *testing.T) {
	fakeBinaries(t, "exit 1\n")
	t.Setenv(k8sbin.EnvKubeControllerManager, filepath.Join(t.TempDir(), "missing"))
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), k8sbin.EnvKubeControllerManager) {
		t.Errorf("error = %v, want one naming %s", err, k8sbin.EnvKubeControllerManager)
	}
}

// startDetached starts a shell command the way a detached component is
// started, reaps it in the background, and returns its Component.
func startDetached(t *testing.T, name, script string) Component {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	if err := proc.StartCommand(cmd, proc.Tie{Detach: true}); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	started, err := procStartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	return Component{Name: name, PID: pid, StartTime: started}
}

func TestStopDir(t *testing.T) {
	dir := t.TempDir()
	etcd := startDetached(t, ComponentEtcd, "exec sleep 600")
	// Ignores SIGTERM, so it must be killed after the grace period; the
	// ignored disposition carries over to its child sleep.
	apiServer := startDetached(t, ComponentAPIServer, "trap '' TERM; sleep 600; sleep 600")
	// Its recorded start time differs: the pid now names another process,
	// which StopDir must leave alone.
	stranger := startDetached(t, ComponentControllerManager, "exec sleep 600")
	stranger.StartTime++
	time.Sleep(100 * time.Millisecond) // let the shells set their traps

	state := State{
		FormatVersion:   stateFormatVersion,
		Dir:             dir,
		StopGracePeriod: "300ms",
		Components:      []Component{etcd, apiServer, stranger},
	}
	if err := writeState(dir, state); err != nil {
		t.Fatal(err)
	}
	if err := StopDir(context.Background(), dir); err != nil {
		t.Fatalf("StopDir: %v", err)
	}
	for _, c := range []Component{etcd, apiServer} {
		if pidAlive(c.PID) {
			t.Errorf("%s (pid %d) still runs", c.Name, c.PID)
		}
	}
	if !pidAlive(stranger.PID) {
		t.Errorf("StopDir killed pid %d, whose start time did not match", stranger.PID)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("StopDir left %s: %v", dir, err)
	}
}

func TestStopDirWithoutState(t *testing.T) {
	dir := t.TempDir()
	err := StopDir(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "state.json") {
		t.Errorf("error = %v, want one about the missing state.json", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("StopDir removed a dir with no cluster in it: %v", err)
	}
}

func TestDisposableClusterIsKilledWithoutGrace(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "etcd.pid")
	// An etcd that ignores SIGTERM: only SIGKILL stops it.
	fakeBinaries(t, "trap '' TERM\necho $$ > "+pidFile+"\nexec sleep 600\n")
	dir := filepath.Join(t.TempDir(), "cluster")

	start := time.Now()
	c, err := Start(context.Background(), Options{Dir: dir, ReadyTimeout: time.Second, StopGracePeriod: time.Minute, Disposable: true})
	if err == nil {
		c.Stop(context.Background())
		t.Fatal("Start succeeded with an etcd that never answers")
	}
	// Without Disposable, the stop after the failed start would wait out
	// the minute's grace period before SIGKILL.
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("Start took %s to give up and stop etcd; a disposable cluster is killed at once", elapsed)
	}
	checkEtcdGone(t, pidFile)
}

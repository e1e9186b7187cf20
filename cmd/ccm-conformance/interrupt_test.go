package main_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Interrupting `make conformance` the way Ctrl-C does (SIGINT to the
// foreground process group) stops every process the run started, removes
// its temporary directories, and still writes partial results.
func TestIntegrationInterruptLeavesNothingBehind(t *testing.T) {
	skipUnlessIntegration(t)
	tmp := shortTempDir(t)
	artifacts := t.TempDir()

	cmd := exec.Command("make", "conformance")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "ARTIFACTS="+artifacts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var mu sync.Mutex
	specsRunning := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			// Lane 1's nodes: the log checked below is lane 1's, and on a
			// busy machine another lane may be ready seconds before it.
			if line := sc.Text(); strings.Contains(line, "registered 3 simulated nodes") &&
				(strings.HasPrefix(line, "[lane 1] ") || !strings.HasPrefix(line, "[lane ")) {
				once.Do(func() { close(specsRunning) })
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()

	select {
	case <-specsRunning:
	case err := <-exited:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("make conformance ended before the specs started: %v\n%s", err, tail(out.String(), 40))
	case <-time.After(40 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("the run did not reach its specs within 40 minutes")
	}
	// Let a spec get under way, then press Ctrl-C.
	time.Sleep(3 * time.Second)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err == nil {
			t.Error("make conformance exited 0 after SIGINT")
		}
	case <-time.After(3 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("the run did not end within 3 minutes of SIGINT")
	}
	mu.Lock()
	output := out.String()
	mu.Unlock()

	if leftover := processesMentioning(t, tmp); len(leftover) > 0 {
		for _, p := range leftover {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		t.Errorf("processes left running after SIGINT:\n%s", formatProcs(leftover))
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "go-build") {
			names = append(names, e.Name())
		}
	}
	if len(names) > 0 {
		t.Errorf("temporary files left in TMPDIR after SIGINT: %v", names)
	}
	for _, f := range []string{"summary.txt", "started.json", "finished.json", "build-log.txt", "artifacts/logs/lane-1/ccm.log"} {
		if _, err := os.Stat(filepath.Join(artifacts, f)); err != nil {
			t.Errorf("partial result %s not written: %v", f, err)
		}
	}
	if junits, _ := filepath.Glob(filepath.Join(artifacts, "artifacts", "junit_*.xml")); len(junits) == 0 {
		t.Errorf("no partial junit file under %s/artifacts", artifacts)
	}
	if v := runHarness(t, nil, "validate-artifacts", artifacts); v.code != 0 {
		t.Errorf("validate-artifacts rejects the interrupted run's directory (exit %d):\n%s%s", v.code, v.stdout, v.stderr)
	}
	if finished, err := os.ReadFile(filepath.Join(artifacts, "finished.json")); err != nil || !strings.Contains(string(finished), `"passed": false`) || !strings.Contains(string(finished), `"ABORTED"`) {
		t.Errorf("finished.json of an interrupted run does not say passed: false, result ABORTED (%v):\n%s", err, finished)
	}
	if !strings.Contains(output, "interrupted") {
		t.Errorf("the output does not say the run was interrupted:\n%s", tail(output, 30))
	}
}

type procInfo struct {
	pid     int
	cmdline string
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(t *testing.T, s string) []procInfo {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []procInfo
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		cmdline := strings.ReplaceAll(string(data), "\x00", " ")
		if !strings.Contains(cmdline, s) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(d, "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue
		}
		var pid int
		for _, c := range filepath.Base(d) {
			pid = pid*10 + int(c-'0')
		}
		out = append(out, procInfo{pid, cmdline})
	}
	return out
}

func formatProcs(ps []procInfo) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  ")
		b.WriteString(strings.TrimSpace(p.cmdline))
		b.WriteString("\n")
	}
	return b.String()
}

package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartStopAndLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "p.log")
	// A process that ignores SIGTERM and has a child in its group: Stop
	// must escalate to SIGKILL and take the whole group.
	p, err := Start(Options{Name: "stubborn", Command: []string{"sh", "-c", "trap '' TERM; echo started; sleep 300 & wait"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Tail(5), "started") {
		if time.Now().After(deadline) {
			t.Fatal("process never logged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Stop(context.Background(), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if exited, _ := p.Exited(); !exited {
		t.Error("process still running after Stop")
	}
	// SIGKILLed members may linger a moment as zombies until reaped.
	deadline = time.Now().Add(5 * time.Second)
	for syscall.Kill(-p.Pid(), 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the process group still has members 5s after Stop")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExitErrorQuotesCommandAndLog(t *testing.T) {
	p, err := Start(Options{Name: "ccm", Command: []string{"sh", "-c", "echo 'failed to load cloud config' >&2; exit 3"}, LogPath: filepath.Join(t.TempDir(), "ccm.log")})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	msg := p.ExitError().Error()
	for _, want := range []string{"ccm exit status 3", "sh -c", "failed to load cloud config"} {
		if !strings.Contains(msg, want) {
			t.Errorf("ExitError %q does not contain %q", msg, want)
		}
	}
}

func TestStartMissingExecutable(t *testing.T) {
	_, err := Start(Options{Name: "svc", Command: []string{"/nonexistent/bin"}, LogPath: filepath.Join(t.TempDir(), "l")})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/bin") {
		t.Fatalf("err = %v, want one naming the executable", err)
	}
}

func TestCommandLine(t *testing.T) {
	if got := CommandLine([]string{"ccm", "--flag=a b", ""}); got != `ccm "--flag=a b" ""` {
		t.Errorf("CommandLine = %s", got)
	}
}

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var long strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&long, "%s line %d\n", strings.Repeat("x", 20), i)
	}
	tests := []struct {
		name string
		path string
		want []string
	}{
		{name: "short", path: write("short", "one\ntwo\n"), want: []string{"one", "two"}},
		{name: "empty", path: write("empty", ""), want: []string{"(log is empty)"}},
		{name: "last lines of a long log", path: write("long", long.String()+"last\n"), want: []string{"xxxxxxxxxxxxxxxxxxxx line 4999", "last"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LogTail(tt.path, len(tt.want))
			if !slices.Equal(got, tt.want) {
				t.Errorf("LogTail = %q, want %q", got, tt.want)
			}
		})
	}
	if got := LogTail(filepath.Join(dir, "missing"), 3); len(got) != 1 || !strings.Contains(got[0], "log unreadable") {
		t.Errorf("LogTail of a missing file = %q", got)
	}
}

package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a stand-in harness (TestMain): it starts
// the script in helperScriptEnv with the Tie named by the value and sleeps
// until it is killed.
const (
	helperEnv       = "PROC_TEST_HARNESS_TIE"
	helperScriptEnv = "PROC_TEST_HARNESS_CHILD"
)

func TestMain(m *testing.M) {
	if tie := os.Getenv(helperEnv); tie != "" {
		actAsHarness(tie)
		return
	}
	os.Exit(m.Run())
}

func actAsHarness(name string) {
	tie := map[string]Tie{"default": {}, "sigterm": {DeathSignal: syscall.SIGTERM}, "detach": {Detach: true}}[name]
	cmd := exec.Command("/bin/sh", "-c", os.Getenv(helperScriptEnv))
	if err := StartCommand(cmd, tie); err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(3)
	}
	time.Sleep(time.Hour)
}

// alive reports whether pid is a process that has not exited; an exited
// orphan may wait as a zombie for a parent that does not reap.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// What becomes of a child when the harness that started it is killed:
// SIGKILL by default, SIGTERM (which it may trap to clean up) when asked,
// nothing when detached.
func TestTieWhenTheHarnessDies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux ties a child's life to its parent's")
	}
	tests := []struct {
		tie        string
		wantAlive  bool
		wantTermed bool
	}{
		{tie: "default"},
		{tie: "sigterm", wantTermed: true},
		{tie: "detach", wantAlive: true},
	}
	for _, tt := range tests {
		t.Run(tt.tie, func(t *testing.T) {
			dir := t.TempDir()
			pidFile, termFile := filepath.Join(dir, "pid"), filepath.Join(dir, "termed")
			script := "trap 'echo yes > " + termFile + "; exit 0' TERM; echo $$ > " + pidFile + ".new; mv " + pidFile + ".new " + pidFile + "; while :; do sleep 0.05; done"
			harness := exec.Command(os.Args[0], "-test.run=^$")
			harness.Env = append(os.Environ(), helperEnv+"="+tt.tie, helperScriptEnv+"="+script)
			if err := harness.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the child's pid file", func() bool { _, err := os.Stat(pidFile); return err == nil })
			data, _ := os.ReadFile(pidFile)
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })

			harness.Process.Kill()
			harness.Wait()
			if tt.wantAlive {
				time.Sleep(300 * time.Millisecond)
				if !alive(pid) {
					t.Fatalf("the child (pid %d) died with the harness, want it to outlive it", pid)
				}
				return
			}
			waitFor(t, "the child to die with the harness", func() bool { return !alive(pid) })
			_, err = os.Stat(termFile)
			if termed := err == nil; termed != tt.wantTermed {
				t.Errorf("the child trapped SIGTERM: %v, want %v", termed, tt.wantTermed)
			}
		})
	}
}

// Linux sends the death signal when the thread that forked the child
// exits. A goroutine that locks its thread and returns ends that thread
// (unless it is the main thread, which Go keeps: hence three tries); a
// child it started must not die of it.
func TestStartCommandOutlivesTheCallersThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux ties a child's life to its parent's")
	}
	exited := make(chan *exec.Cmd, 3)
	for range 3 {
		cmd := exec.Command("sleep", "30")
		started := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			started <- StartCommand(cmd, Tie{})
		}()
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		go func() { cmd.Wait(); exited <- cmd }()
	}
	select {
	case cmd := <-exited:
		t.Fatalf("a child died when the thread of the goroutine that started it ended: %v", cmd.ProcessState)
	case <-time.After(time.Second):
	}
}

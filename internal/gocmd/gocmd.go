// Package gocmd runs the go command for the builds that fill the binary
// cache from the Go module proxy: internal/k8sbin (Kubernetes and etcd) and
// internal/ccmbuild (a provider's CCM from its module). It gives both the
// same environment (BuildEnv), progress while `go build -v` compiles (Run),
// `go mod download -json` (Download), and an error that carries the command
// line and the tail of its output (Error).
//
// It is a leaf: it imports no harness package.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package gocmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/command"
)

const (
	// OutputTailLines is how many of the last lines of the go command's
	// output an Error keeps.
	OutputTailLines = command.TailLines
	// cancelDelay is how long a cancelled go command gets to stop after
	// an interrupt before it is killed.
	cancelDelay = 5 * time.Second
	// defaultProgressInterval is Command.ProgressInterval's default.
	defaultProgressInterval = 10 * time.Second
)

// Error is a go command that failed: the harness's one command error
// (command.Error), whose message carries the command line, the directory
// and the last lines of the command's output.
type Error = command.Error

// BuildEnv is the environment the go command runs with, beyond the
// caller's: the project's static builds (CGO_ENABLED=0, as
// scripts/goenv.sh sets; callers pass -trimpath on the command line), a
// build module whose go.mod and go.sum the go command may complete
// (-mod=mod), and GOWORK=off, which keeps a go.work above the cache out of
// it. Builds with the same flags share the go build cache.
func BuildEnv() []string {
	return []string{"CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off"}
}

// Command is one go command.
type Command struct {
	// Go is the go command. Required.
	Go string
	// Dir is the directory it runs in. Required.
	Dir string
	// Env is added to this process's environment and leads the command
	// line in errors.
	Env []string
	// Args are its arguments, such as build -v -o out pkg.
	Args []string
	// Progress, if set, is called with the number of packages compiled
	// so far (the package lines of `go build -v`) at most every
	// ProgressInterval while the command runs.
	Progress func(compiled int)
	// ProgressInterval defaults to 10s.
	ProgressInterval time.Duration
}

// Run runs c and returns the number of packages it compiled. A failure is
// an *Error. Cancelling ctx interrupts the command, then kills it.
func Run(ctx context.Context, c Command) (int, error) {
	interval := c.ProgressInterval
	if interval <= 0 {
		interval = defaultProgressInterval
	}
	progress := c.Progress
	if progress == nil {
		progress = func(int) {}
	}
	cmd := exec.CommandContext(ctx, c.Go, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = cancelDelay
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw

	var (
		mu       sync.Mutex
		compiled int
		tail     []string
	)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			if isPackageLine(line) {
				compiled++
			}
			tail = append(tail, line)
			if len(tail) > OutputTailLines {
				tail = tail[len(tail)-OutputTailLines:]
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner must not block the command
	}()
	snapshot := func() (int, []string) {
		mu.Lock()
		defer mu.Unlock()
		return compiled, slices.Clone(tail)
	}

	if err := cmd.Start(); err != nil {
		pw.Close()
		<-scanned
		return 0, &Error{Command: command.Line(c.Go, c.Env, c.Args), Dir: c.Dir, Err: err}
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		waited <- err
	}()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case err := <-waited:
			<-scanned
			n, lines := snapshot()
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("%w (%v)", ctx.Err(), err)
				}
				return n, &Error{Command: command.Line(c.Go, c.Env, c.Args), Dir: c.Dir, Output: lines, Err: err}
			}
			return n, nil
		case <-ticker.C:
			n, _ := snapshot()
			progress(n)
		}
	}
}

// Output runs a short go command (go version -m, go env) and returns its
// standard output; a failure is an *Error with its standard error.
func Output(ctx context.Context, goCmd, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &Error{Command: command.Line(goCmd, env, args), Dir: dir, Output: command.Tail(stderr.String(), OutputTailLines), Err: err}
	}
	return out, nil
}

// ModuleInfo is what `go mod download -json` reports about one module.
type ModuleInfo struct {
	Path    string
	Version string
	Error   string
	Info    string // path of the .info file
	GoMod   string // path of the go.mod file
	Sum     string // the module's h1: sum
	// Origin is where the proxy got the module from, when it says (not
	// every proxy does, nor for every module).
	Origin *struct {
		VCS  string
		URL  string
		Hash string // the commit
		Ref  string // the tag, refs/tags/<version>
	}
}

// Download runs `go mod download -json modVersion` (path@version) in dir,
// which must hold a go.mod, with BuildEnv and then env added to the
// environment. Only the module's go.mod and .info are needed afterwards;
// the go command also fetches its zip.
func Download(ctx context.Context, goCmd, dir, modVersion string, env ...string) (ModuleInfo, error) {
	var out strings.Builder
	cmd := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", modVersion)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), BuildEnv()...), env...)
	cmd.Stdout = &out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	var info ModuleInfo
	if err := json.Unmarshal([]byte(out.String()), &info); err != nil || runErr != nil || info.Error != "" || info.GoMod == "" {
		if runErr == nil && info.Error != "" {
			runErr = errors.New(info.Error)
		}
		if runErr == nil {
			runErr = fmt.Errorf("unexpected output %q", out.String())
		}
		lines := command.Tail(stderr.String()+out.String(), OutputTailLines)
		return info, &Error{Command: command.Line(goCmd, BuildEnv(), cmd.Args[1:]), Dir: dir, Output: lines, Err: runErr}
	}
	return info, nil
}

// isPackageLine reports whether a line of `go build -v` output names a
// package being compiled rather than, say, a module being downloaded.
func isPackageLine(line string) bool {
	return line != "" && !strings.HasPrefix(line, "go: ") && !strings.HasPrefix(line, "#") &&
		!strings.ContainsAny(line, " \t:")
}

package nodeimage

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/command"
)

// outputTail is how many of the last lines of a command's output its
// error keeps.
const outputTail = 30

// buildCommand is one external command of the build.
type buildCommand struct {
	args  []string
	dir   string
	env   []string // added to the environment
	stdin io.Reader
	// step names the command in progress lines; with a non-zero interval a
	// line "<step>: <last output line>, <elapsed> elapsed" is written to
	// progress at most that often while it runs.
	step     string
	progress io.Writer
	interval time.Duration
}

// run runs c and returns its combined output's last lines on failure in a
// *command.Error.
func (c buildCommand) run(ctx context.Context) error {
	_, err := c.output(ctx)
	return err
}

// output runs c and returns its stdout (stderr goes to the tail only).
func (c buildCommand) output(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, c.args[0], c.args[1:]...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdin = c.stdin
	cmd.WaitDelay = 10 * time.Second
	var stdout strings.Builder
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(&stdout, pw)
	cmd.Stderr = pw

	var (
		mu   sync.Mutex
		tail []string
	)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			mu.Lock()
			tail = append(tail, sc.Text())
			if len(tail) > outputTail {
				tail = tail[len(tail)-outputTail:]
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, pr)
	}()
	last := func() (string, []string) {
		mu.Lock()
		defer mu.Unlock()
		if len(tail) == 0 {
			return "", nil
		}
		return tail[len(tail)-1], append([]string(nil), tail...)
	}
	if err := cmd.Start(); err != nil {
		pw.Close()
		<-scanned
		return "", &command.Error{Command: commandLine(c.args), Err: err}
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		waited <- err
	}()
	start := time.Now()
	var tick <-chan time.Time
	if c.interval > 0 && c.progress != nil {
		t := time.NewTicker(c.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case err := <-waited:
			<-scanned
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("%w (%v)", ctx.Err(), err)
				}
				_, lines := last()
				return stdout.String(), &command.Error{Command: commandLine(c.args), Output: lines, Err: err}
			}
			return stdout.String(), nil
		case <-tick:
			line, _ := last()
			if len(line) > 100 {
				line = line[:100] + "…"
			}
			fmt.Fprintf(c.progress, "%s: %s elapsed, last output: %s\n", c.step, time.Since(start).Round(time.Second), line)
		}
	}
}

// commandLine renders args as a shell would take them.
func commandLine(args []string) string { return command.Line(args[0], nil, args[1:]) }

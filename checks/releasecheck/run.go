package releasecheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// maxOutput bounds what is kept of a run's output.
const maxOutput = 1 << 20

// waitDelay is how long a run's output pipes stay open after it is
// killed.
const waitDelay = 2 * time.Second

// cappedBuffer keeps the first maxOutput bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// run runs exe with args in dir, an environment of HOME and TMPDIR (dir)
// only, and returns its stdout and stderr together. A non-zero exit is an
// error carrying the command line and the output's last lines.
func run(ctx context.Context, dir, exe string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + dir}
	cmd.WaitDelay = waitDelay
	var out cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(ctxErr, context.DeadlineExceeded) {
		return out.String(), fmt.Errorf("%s: did not exit in time: %s", strings.Join(cmd.Args, " "), tail(out.String()))
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, tail(out.String()))
	}
	return out.String(), nil
}

// tail is the last lines of output, on one line.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	t := strings.Join(lines, " | ")
	if t == "" {
		return "no output"
	}
	return t
}

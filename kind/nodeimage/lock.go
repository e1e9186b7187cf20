package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lock takes an exclusive flock on path, so that two processes never build
// the same node image at once; it returns the function that releases it.
// While another process holds it, waiting is called every interval.
func lock(ctx context.Context, path string, interval time.Duration, waiting func(time.Duration)) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var reported time.Time
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if time.Since(reported) >= interval {
			reported = time.Now()
			waiting(time.Since(start))
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another build of the node image (lock %s): %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

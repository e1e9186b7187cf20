// Package filelock is the lock that keeps two processes from building the
// same cached thing at once (a Kubernetes binary, a kind node image): an
// flock on a file beside it, waited for with progress.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// pollInterval is how often a caller waiting for another build's lock
// tries again.
const pollInterval = 250 * time.Millisecond

// Lock takes an exclusive flock on path, creating it if needed, and
// returns the function that releases it. While another holder keeps the lock
// it calls waiting at once and then every interval, and gives up when ctx
// ends. An flock belongs to an open file description, so it excludes other
// goroutines of this process as well as other processes, and it is released
// by the kernel if the holder dies.
func Lock(ctx context.Context, path string, interval time.Duration, waiting func(waited time.Duration)) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var lastReport time.Time
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
		if lastReport.IsZero() || time.Since(lastReport) >= interval {
			lastReport = time.Now()
			waiting(time.Since(start))
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

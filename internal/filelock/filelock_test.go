package filelock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(context.Background(), path, time.Hour, func(time.Duration) { t.Error("the first Lock waited") })
	if err != nil {
		t.Fatal(err)
	}

	// A second holder waits, says so at once, and gives up with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	waits := 0
	if _, err := Lock(ctx, path, time.Hour, func(time.Duration) { waits++ }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock while held: err %v, want the context's deadline", err)
	}
	if waits != 1 {
		t.Errorf("waiting called %d times in one interval, want 1 (at once)", waits)
	}

	// Once released, it is taken.
	unlock()
	again, err := Lock(context.Background(), path, time.Hour, func(time.Duration) { t.Error("Lock waited for a released lock") })
	if err != nil {
		t.Fatal(err)
	}
	again()
}

package freeport

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// claim takes port's byte of the claim file with an open-file-description
// lock (F_OFD_SETLK). Such a lock conflicts with every other open of the
// file, in this process or another, and the kernel drops it when the file is
// closed or its process exits, so a crashed harness leaves no claim behind.
//
// It reports false when someone else holds the port. Where the claim file
// cannot be opened or locked (another user's file, a kernel without OFD
// locks), it reports true with nothing held: the bind check alone decides.
func claim(path string, port int) (release func(), ok bool) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return func() {}, true
	}
	// Other users' harnesses share the file; umask may have narrowed it.
	_ = f.Chmod(0o666)
	lock := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: int64(port), Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lock); err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, false
		}
		return func() {}, true
	}
	return func() { f.Close() }, true
}

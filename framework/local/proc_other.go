//go:build unix && !linux

package local

import (
	"errors"
	"syscall"
)

// sysProcAttr makes a component lead a process group of its own (a session
// if detached). Only Linux can also tie its life to the harness's.
func sysProcAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// procStartTime is unknown off Linux; StopDir then trusts the pid alone.
func procStartTime(int) (uint64, error) {
	return 0, errors.New("process start times are only known on Linux")
}

func isZombie(int) bool { return false }

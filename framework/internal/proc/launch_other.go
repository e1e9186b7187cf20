//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr: only Linux can tie a child's life to the harness's, so
// elsewhere a child only leads a process group (a session if detached).
func sysProcAttr(tie Tie) *syscall.SysProcAttr {
	if tie.Detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

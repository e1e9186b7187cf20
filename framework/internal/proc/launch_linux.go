package proc

import "syscall"

func sysProcAttr(tie Tie) *syscall.SysProcAttr {
	if tie.Detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	sig := tie.DeathSignal
	if sig == 0 {
		sig = syscall.SIGKILL
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}

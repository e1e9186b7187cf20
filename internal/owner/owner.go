// Package owner identifies the process that made something that outlives
// it if it is killed (a container, a kind cluster), so that a later run can
// tell what a killed harness left behind from what a running one uses.
// SIGKILL leaves a process no chance to clean up; its successor can.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package owner

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Owner is a process, told apart from a later one that reuses its pid by
// its start time, in the pid namespace where its pid means something.
type Owner struct {
	PID int `json:"pid"`
	// Start is the process's start time in clock ticks since boot (field
	// 22 of /proc/PID/stat).
	Start uint64 `json:"start"`
	// PIDNamespace is /proc/self/ns/pid's link, e.g. "pid:[4026531836]".
	PIDNamespace string `json:"pidNamespace"`
}

// Self is this process, or an error where /proc cannot say.
func Self() (Owner, error) {
	pid := os.Getpid()
	start, err := StartTime(pid)
	if err != nil {
		return Owner{}, err
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return Owner{}, err
	}
	return Owner{PID: pid, Start: start, PIDNamespace: ns}, nil
}

// Gone says whether o no longer runs: it was of this pid namespace, and
// its pid runs no process now, or another one. Where that cannot be told
// (another namespace, /proc unreadable), it says false: what o made is
// left alone.
func (o Owner) Gone() bool {
	self, err := Self()
	if err != nil || o.PIDNamespace != self.PIDNamespace || o.PID <= 0 {
		return false
	}
	start, err := StartTime(o.PID)
	return err != nil || start != o.Start
}

// StartTime reads a process's start time in clock ticks since boot (field
// 22 of /proc/PID/stat).
func StartTime(pid int) (uint64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after it are separated by single spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

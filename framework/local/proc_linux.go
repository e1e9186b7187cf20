package local

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procStartTime returns when pid started, in clock ticks since boot (field
// 22 of /proc/<pid>/stat). Together with the pid it names one process: a
// pid reused by another process has another start time.
func procStartTime(pid int) (uint64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	fields, err := statFields(stat)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return strconv.ParseUint(string(fields[19]), 10, 64)
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields, err := statFields(stat)
	return err == nil && len(fields) > 0 && string(fields[0]) == "Z"
}

// statFields returns the fields of /proc/<pid>/stat after the command name,
// which is in parentheses and may hold spaces.
func statFields(stat []byte) ([][]byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("no command name")
	}
	return bytes.Fields(stat[i+1:]), nil
}

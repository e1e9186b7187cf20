package ccm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Labels that tie a container to the harness process that started it, so
// that a later run can tell a container whose harness was killed (SIGKILL
// leaves no chance to clean up) from one of a run still going.
const (
	// LabelOwnerPID is the pid of the process that started the container.
	LabelOwnerPID = "ccm-conformance.owner-pid"
	// LabelOwnerStart is that process's start time in clock ticks since
	// boot (field 22 of /proc/PID/stat), which tells a reused pid apart.
	LabelOwnerStart = "ccm-conformance.owner-start"
	// LabelOwnerPIDNamespace is that process's pid namespace
	// (/proc/self/ns/pid): a pid means something only there, so a harness
	// in another namespace (another container) leaves the container alone.
	LabelOwnerPIDNamespace = "ccm-conformance.owner-pidns"
)

// ownerLabels are this process's LabelOwnerPID and LabelOwnerStart, or
// none where /proc cannot say.
func ownerLabels() map[string]string {
	pid := os.Getpid()
	start, err := procStartTime(pid)
	if err != nil {
		return nil
	}
	ns, err := pidNamespace()
	if err != nil {
		return nil
	}
	return map[string]string{LabelOwnerPID: strconv.Itoa(pid), LabelOwnerStart: strconv.FormatUint(start, 10), LabelOwnerPIDNamespace: ns}
}

// pidNamespace names this process's pid namespace, e.g. "pid:[4026531836]".
func pidNamespace() (string, error) {
	return os.Readlink("/proc/self/ns/pid")
}

// RemoveOrphans removes the containers a harness left when it was killed:
// those of this pid namespace whose LabelOwnerPID process no longer runs
// (or is another process now, by its start time). It returns their names. Where /proc cannot say
// whether a process runs, it removes nothing.
func RemoveOrphans(ctx context.Context, cli string) ([]string, error) {
	if cli == "" {
		cli = "docker"
	}
	if _, err := procStartTime(os.Getpid()); err != nil {
		return nil, nil
	}
	ns, err := pidNamespace()
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, dockerCommandTimeout)
	defer cancel()
	format := fmt.Sprintf(`{{.Names}}\t{{.Label %q}}\t{{.Label %q}}`, LabelOwnerPID, LabelOwnerStart)
	out, err := docker(ctx, cli, "ps", "--all", "--filter", "label="+LabelOwnerPIDNamespace+"="+ns, "--format", format)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, name := range orphans(out, procStartTime) {
		if _, err := docker(ctx, cli, "rm", "--force", name); err != nil && !isGone(err) && !isBeingRemoved(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// orphans picks, from `docker ps` lines "NAME\tPID\tSTART", the containers
// whose owner is gone. startTime answers for a running pid.
func orphans(psOutput string, startTime func(int) (uint64, error)) []string {
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(psOutput), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			continue
		}
		pid, err := strconv.Atoi(fields[1])
		if err != nil || pid <= 0 {
			continue
		}
		want, err := strconv.ParseUint(fields[2], 10, 64)
		if err != nil {
			continue
		}
		if got, err := startTime(pid); err == nil && got == want {
			continue // its harness still runs
		}
		names = append(names, fields[0])
	}
	return names
}

// procStartTime reads a process's start time in clock ticks since boot
// (field 22 of /proc/PID/stat).
func procStartTime(pid int) (uint64, error) {
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

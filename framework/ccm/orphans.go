package ccm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/internal/owner"
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

// ownerLabels are this process's LabelOwnerPID, LabelOwnerStart and
// LabelOwnerPIDNamespace, or none where /proc cannot say.
func ownerLabels() map[string]string {
	self, err := owner.Self()
	if err != nil {
		return nil
	}
	return map[string]string{LabelOwnerPID: strconv.Itoa(self.PID), LabelOwnerStart: strconv.FormatUint(self.Start, 10), LabelOwnerPIDNamespace: self.PIDNamespace}
}

// RemoveOrphans removes the containers a harness left when it was killed:
// those of this pid namespace whose LabelOwnerPID process no longer runs
// (or is another process now, by its start time). It returns their names. Where /proc cannot say
// whether a process runs, it removes nothing.
func RemoveOrphans(ctx context.Context, cli string) ([]string, error) {
	if cli == "" {
		cli = "docker"
	}
	self, err := owner.Self()
	if err != nil {
		return nil, nil
	}
	ns := self.PIDNamespace
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

// procStartTime reads a process's start time (owner.StartTime).
func procStartTime(pid int) (uint64, error) { return owner.StartTime(pid) }

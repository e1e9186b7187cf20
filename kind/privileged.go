package kind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
)

// Privileged says how node containers get the rights kind gives them
// with --privileged.
type Privileged string

const (
	// PrivilegedAuto probes whether Docker runs a privileged container
	// and uses the fallback only when it refuses.
	PrivilegedAuto Privileged = "auto"
	// PrivilegedOn runs kind unchanged.
	PrivilegedOn Privileged = "on"
	// PrivilegedFallback always uses the fallback.
	PrivilegedFallback Privileged = "fallback"
)

// FallbackRunArgs replace --privileged on `docker run` and `docker create`
// where the Docker daemon refuses privileged containers (its capability
// bounding set lacks CAP_SYS_RESOURCE and Docker 20.10 gives a privileged
// container every capability): every capability but that one, sysfs and
// procfs without Docker's masks, and every device allowed. The node
// image's entrypoint makes /sys and the cgroup mounts writable and
// creates /dev/kmsg (nodeimage.NodeEntrypoint).
func FallbackRunArgs() []string {
	return []string{"--cap-add=ALL", "--cap-drop=SYS_RESOURCE", "--security-opt=systempaths=unconfined", "--device-cgroup-rule=a *:* rwm"}
}

// probeTimeout bounds each probe container.
const probeTimeout = 2 * time.Minute

// probeLabel marks the probe containers (run with --rm).
const probeLabel = "ccm-conformance.kind-probe=true"

// probePrivileged reports whether Docker runs a privileged container of
// image; when it does not, it checks that the fallback runs one and
// returns why privileged failed.
func probePrivileged(ctx context.Context, docker, image string) (ok bool, why string, err error) {
	run := func(extra ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		args := append([]string{"run", "--rm", "--label", probeLabel, "--entrypoint", "/bin/true"}, extra...)
		args = append(args, image)
		out, err := exec.CommandContext(ctx, docker, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, perr := run("--privileged")
	if perr == nil {
		return true, "", nil
	}
	why = firstline.Of(out)
	if why == "" {
		why = perr.Error()
	}
	if out2, err := run(FallbackRunArgs()...); err != nil {
		return false, why, fmt.Errorf("docker refuses --privileged (%s), and the fallback failed too: %s: %v", why, firstline.Of(out2), err)
	}
	return false, why, nil
}

// wrapperScript is a `docker` that kind finds first on PATH: it runs the
// real docker with --privileged replaced by FallbackRunArgs on run and
// create and dropped on exec, and everything else unchanged.
func wrapperScript(realDocker string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("# Written by ccm-conformance's kind backend (docs/kind.md): this machine's\n")
	b.WriteString("# Docker refuses --privileged, so run and create get the fallback instead\n")
	b.WriteString("# and exec runs without it.\n")
	b.WriteString("cmd=$1\n")
	b.WriteString("if [ \"$cmd\" = container ]; then cmd=$2; fi\n")
	b.WriteString("for a do\n\tshift\n\tif [ \"$a\" = --privileged ]; then\n\t\tcase $cmd in\n\t\trun|create) set -- \"$@\"")
	for _, a := range FallbackRunArgs() {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" ;;\n\t\texec) ;;\n\t\t*) set -- \"$@\" \"$a\" ;;\n\t\tesac\n\telse\n\t\tset -- \"$@\" \"$a\"\n\tfi\ndone\n")
	b.WriteString("exec " + shellQuote(realDocker) + " \"$@\"\n")
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeWrapper writes the docker wrapper into dir/docker and returns dir.
func writeWrapper(dir, realDocker string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(wrapperScript(realDocker)), 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

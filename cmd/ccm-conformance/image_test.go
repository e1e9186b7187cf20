package main_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// skipUnlessDocker skips an integration test that runs the CCM's image
// where the local Docker engine does not answer.
func skipUnlessDocker(t *testing.T) {
	t.Helper()
	skipUnlessIntegration(t)
	if err := testbin.DockerAvailable(); err != nil {
		t.Skipf("the local Docker engine is not available: %v", err)
	}
}

// runLabel is the value of the ccm-conformance.run label the run's output
// names for its containers.
var runLabel = regexp.MustCompile(`in container \S+ \(label ccm-conformance\.run=([0-9a-f]+)\)`)

// checkNoContainersLeft fails t if a container of the run in output is
// still known to Docker, and removes it.
func checkNoContainersLeft(t *testing.T, output string) {
	t.Helper()
	m := runLabel.FindStringSubmatch(output)
	if m == nil {
		t.Errorf("the run's output names no container of the CCM:\n%s", tail(output, 30))
		return
	}
	if left := testbin.ContainersLabelled(t, "ccm-conformance.run", m[1]); len(left) > 0 {
		t.Errorf("containers of run %s left after it: %v", m[1], left)
	}
}

// The reference CCM's image, run with Docker on the local cluster, passes
// as the binary does, and the results name the image and its digest.
func TestIntegrationCCMImage(t *testing.T) {
	skipUnlessDocker(t)
	image, id := testbin.ReferenceCCMImage(t)
	artifacts := t.TempDir()
	profile := testbin.ReferenceImageProfile(t, t.TempDir(), binDir, image, nil, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", artifacts,
		"--cluster-dir", testbin.SharedCluster(t), "--label-filter", "InstancesV2 && !NodeIPAnnotation")
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 80), res.stderr)
	}
	checkNoContainersLeft(t, res.stdout)
	passed := 0
	for _, c := range readJUnit(t, artifacts) {
		switch c.Status {
		case "passed":
			passed++
		case "skipped":
		default:
			t.Errorf("spec %q: %s, want passed", c.Name, c.Status)
		}
	}
	if passed == 0 {
		t.Error("no spec passed")
	}
	meta := readMetadata(t, artifacts)
	if meta["ccm-image"] != image || meta["ccm-digest"] != id {
		t.Errorf("metadata.json: ccm-image %v, ccm-digest %v; want %s and %s", meta["ccm-image"], meta["ccm-digest"], image, id)
	}
	if _, ok := meta["ccm-binary"]; ok {
		t.Errorf("metadata.json names a ccm-binary for a run of an image: %v", meta["ccm-binary"])
	}
	log, err := os.ReadFile(filepath.Join(artifacts, "artifacts", "logs", "ccm.log"))
	if err != nil || !strings.Contains(string(log), "reference") {
		t.Errorf("the CCM's log is not in the artifacts (%v):\n%s", err, tail(string(log), 10))
	}
}

// A defect switched on in the image fails the spec that checks for it.
func TestIntegrationCCMImageDefectFailsTheRightSpec(t *testing.T) {
	skipUnlessDocker(t)
	runDefectCase(t, defectCase{
		name: "image with wrong zone", defects: "wrong-zone", image: true,
		labelFilter: "InstancesV2 && !NodeIPAnnotation",
		failing: map[string][]string{
			"labels each node with its instance's zone and region": {"node ccm-node-", "topology.kubernetes.io/zone", "-wrong"},
		},
		afterRun: func(t *testing.T, _ string, res result) { checkNoContainersLeft(t, res.stdout) },
	})
}

// Ctrl-C during a run of the image removes its containers: the harness
// tears its world down on SIGINT, and stopping a CCM container removes it.
func TestIntegrationCCMImageInterruptRemovesContainers(t *testing.T) {
	skipUnlessDocker(t)
	image, _ := testbin.ReferenceCCMImage(t)
	profile := testbin.ReferenceImageProfile(t, t.TempDir(), binDir, image, nil, nil)
	cmd := exec.Command(filepath.Join(binDir, "ccm-conformance"), "run", "--provider", profile, "--artifacts", t.TempDir(),
		"--cluster-dir", testbin.SharedCluster(t), "--label-filter", "NodeLifecycle")
	cmd.Env = append(os.Environ(), "TMPDIR="+shortTempDir(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	specsRunning := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		var once sync.Once
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "registered 3 simulated nodes") {
				once.Do(func() { close(specsRunning) })
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	output := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }

	select {
	case <-specsRunning:
	case err := <-exited:
		t.Fatalf("the run ended before its specs started: %v\n%s", err, tail(output(), 40))
	case <-time.After(5 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("the run did not reach its specs within 5 minutes:\n%s", tail(output(), 40))
	}
	time.Sleep(2 * time.Second) // a spec under way
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err == nil {
			t.Error("the run exited 0 after SIGINT")
		}
	case <-time.After(3 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("the run did not end within 3 minutes of SIGINT:\n%s", tail(output(), 40))
	}
	checkNoContainersLeft(t, output())
}

// A CCM image that exits at once (an unknown flag) is a harness error
// that quotes its output, and its container is gone.
func TestIntegrationCCMImageThatExitsLeavesNoContainer(t *testing.T) {
	skipUnlessDocker(t)
	image, _ := testbin.ReferenceCCMImage(t)
	profile := testbin.ReferenceImageProfile(t, t.TempDir(), binDir, image, []string{"--no-such-flag"}, nil)
	res := runHarness(t, []string{"TMPDIR=" + shortTempDir(t)}, "run", "--provider", profile, "--artifacts", t.TempDir(),
		"--cluster-dir", testbin.SharedCluster(t), "--label-filter", "InstancesV2 && !NodeIPAnnotation")
	if res.code != 2 {
		t.Fatalf("exit code %d, want 2\nstdout:\n%s\nstderr:\n%s", res.code, tail(res.stdout, 40), res.stderr)
	}
	for _, want := range []string{"docker run --rm", "unknown flag: --no-such-flag"} {
		if !strings.Contains(res.stdout+res.stderr, want) {
			t.Errorf("the run's output does not contain %q:\n%s\n%s", want, tail(res.stdout, 30), res.stderr)
		}
	}
	checkNoContainersLeft(t, res.stdout)
}

package releasecheck

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// dockerTimeout bounds each docker command of the integration test.
const dockerTimeout = 2 * time.Minute

// TestIntegrationDockerDaemon loads the reference image into the local
// Docker engine under a tag of its own, checks it by name (daemon.Image),
// and removes the tag.
func TestIntegrationDockerDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	docker := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := docker("version"); err != nil {
		t.Skipf("the Docker engine does not answer: %v", err)
	}
	ref := fmt.Sprintf("ccm-conformance/releasecheck-test:t%d", time.Now().UnixNano())
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/image.tar"
	if err := tarball.WriteToFile(path, tag, referenceImage(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := docker("load", "-i", path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := docker("rmi", ref); err != nil {
			t.Errorf("removing %s: %v", ref, err)
		}
	})
	rep, err := Check(context.Background(), ref, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Source != "docker-daemon" || rep.Result != "pass" {
		t.Errorf("source %s, result %s, want docker-daemon, pass:\n%s", rep.Source, rep.Result, statuses(rep))
	}
	if it, _ := rep.Item(RuleVersion); it.Status != Pass {
		t.Errorf("RG6 %s: %s", it.Status, it.Evidence)
	}
}

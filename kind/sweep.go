package kind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/ccm-conformance/ccm-conformance/internal/owner"
)

// A harness killed with SIGKILL cannot delete its kind cluster. So every
// cluster the backend makes is first written down in the cache, in
// clusters/<name>.json with the owner process; Stop removes the record
// with the cluster. A later Start deletes the clusters whose owner is gone
// (owner.Gone) and says so in one line; a cluster whose harness still runs,
// or runs in another pid namespace, is left alone.

// clusterRecord is clusters/<name>.json.
type clusterRecord struct {
	Name  string      `json:"name"`
	Owner owner.Owner `json:"owner"`
}

func recordPath(dir, name string) string { return filepath.Join(dir, name+".json") }

// recordCluster writes the record of a cluster about to be made. Where
// /proc cannot name this process, it writes nothing: no later run could
// tell the cluster's harness gone.
func recordCluster(dir, name string) error {
	self, err := owner.Self()
	if err != nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, _ := json.Marshal(clusterRecord{Name: name, Owner: self})
	return os.WriteFile(recordPath(dir, name), data, 0o644)
}

// abandoned lists the recorded clusters whose owner is gone.
func abandoned(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec clusterRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.Name == "" || !strings.HasPrefix(rec.Name, clusterNamePrefix) ||
			filepath.Base(f) != rec.Name+".json" {
			continue // not ours to judge
		}
		if rec.Owner.Gone() {
			names = append(names, rec.Name)
		}
	}
	return names, nil
}

// sweep deletes the recorded clusters whose harness is gone, with their
// Docker networks, and their records.
func sweep(ctx context.Context, dir, docker string, progress io.Writer) error {
	names, err := abandoned(dir)
	if err != nil || len(names) == 0 {
		return err
	}
	fmt.Fprintf(progress, "kind: deleting %d clusters whose harness is gone (killed before it could clean up): %s\n", len(names), strings.Join(names, ", "))
	provider := kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(newLogger(io.Discard)))
	var errs []error
	for _, name := range names {
		// A kubeconfig path of its own, which does not exist: kind would
		// otherwise edit the user's.
		if err := provider.Delete(name, filepath.Join(dir, name+".kubeconfig")); err != nil {
			errs = append(errs, fmt.Errorf("deleting kind cluster %s: %w", name, err))
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
		out, err := exec.CommandContext(ctx, docker, "network", "rm", name).CombinedOutput()
		cancel()
		if err != nil && !networkGone(string(out)) {
			errs = append(errs, fmt.Errorf("docker network rm %s: %v: %s", name, err, strings.TrimSpace(string(out))))
			continue
		}
		os.Remove(recordPath(dir, name))
	}
	return errors.Join(errs...)
}

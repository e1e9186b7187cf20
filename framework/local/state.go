package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// stateFormatVersion is the version of the state.json format written here.
const stateFormatVersion = 1

// State is the content of <Dir>/state.json, which Start writes and updates
// as each component starts, so that another process can find and stop the
// cluster (StopDir). docs/local-cluster.md describes the format.
type State struct {
	// FormatVersion is the version of this format, now 1.
	FormatVersion int `json:"formatVersion"`
	// Dir is the cluster's working directory, absolute.
	Dir string `json:"dir"`
	// Temporary says whether Start created Dir as a temporary directory.
	Temporary bool `json:"temporary"`
	// Detached says whether the components outlive the process that
	// started them (Options.Detach).
	Detached bool `json:"detached"`
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string `json:"kubeconfig"`
	// APIServerURL is the https URL of kube-apiserver.
	APIServerURL string `json:"apiServerURL"`
	// KubernetesVersion and EtcdVersion are the releases running.
	KubernetesVersion string `json:"kubernetesVersion"`
	EtcdVersion       string `json:"etcdVersion"`
	// ClusterCIDRs and ServiceCIDRs are the pod and Service networks.
	ClusterCIDRs []string `json:"clusterCIDRs"`
	ServiceCIDRs []string `json:"serviceCIDRs"`
	// StopGracePeriod is how long StopDir lets a component exit after
	// SIGTERM, as a Go duration ("10s").
	StopGracePeriod string `json:"stopGracePeriod"`
	// NodeMonitorGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period, as a Go duration ("6s").
	NodeMonitorGracePeriod string `json:"nodeMonitorGracePeriod,omitempty"`
	// Components are the processes started, in start order.
	Components []Component `json:"components"`
}

// writeState writes state to <dir>/state.json atomically.
func writeState(dir string, state State) error {
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", stateFile, err)
	}
	tmp, err := os.CreateTemp(dir, "."+stateFile+"-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", stateFile, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	_, err = tmp.Write(append(data, '\n'))
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, stateFile))
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", stateFile, err)
	}
	return nil
}

// ReadState reads <dir>/state.json.
func ReadState(dir string) (*State, error) {
	path := filepath.Join(dir, stateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading local cluster state: %w", err)
	}
	var state State
	if err := json.Unmarshal(data, &state); err != nil {
		return nil, fmt.Errorf("reading local cluster state %s: %w", path, err)
	}
	if state.FormatVersion != stateFormatVersion {
		return nil, fmt.Errorf("reading local cluster state %s: format version %d, want %d", path, state.FormatVersion, stateFormatVersion)
	}
	return &state, nil
}

// StopDir stops the cluster whose working directory is dir, from any
// process: it reads dir's state.json, stops kube-controller-manager,
// kube-apiserver and etcd in that order as Cluster.Stop does, and removes
// dir. A component that already exited is skipped. If a component cannot be
// stopped, dir is left in place and the error says which.
func StopDir(ctx context.Context, dir string) error {
	state, err := ReadState(dir)
	if err != nil {
		return fmt.Errorf("stopping the local cluster in %s: %w", dir, err)
	}
	grace, err := time.ParseDuration(state.StopGracePeriod)
	if err != nil || grace <= 0 {
		grace = DefaultStopGracePeriod
	}
	var errs []error
	for _, c := range slices.Backward(state.Components) {
		if !sameProcess(c) {
			continue
		}
		gone := func() bool { return !sameProcess(c) }
		if err := terminate(ctx, c.PID, grace, gone); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s (pid %d): %w", c.Name, c.PID, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("stopping the local cluster in %s: %w", dir, errors.Join(errs...))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("stopping the local cluster in %s: %w", dir, err)
	}
	return nil
}

// sameProcess reports whether the component still runs as the process
// recorded: its pid is alive and, where start times are known, started when
// the component did.
func sameProcess(c Component) bool {
	if c.PID <= 0 || !pidAlive(c.PID) {
		return false
	}
	if c.StartTime == 0 {
		return true
	}
	started, err := procStartTime(c.PID)
	return err == nil && started == c.StartTime
}

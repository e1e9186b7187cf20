package runner

// The profile's node manager (ccm.nodeManager): a process beside each
// simulated node while its kubelet runs, as a provider's DaemonSet pod
// runs on each real node.

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// nodeManagerAgent is the simulated nodes' agent that runs the profile's
// node manager executable, or nil when the profile has none (a node
// manager image runs as a DaemonSet instead: startNodeManagerDaemonSet).
func (w *world) nodeManagerAgent() nodes.Agent {
	nm := w.profile.CCM.NodeManager
	if nm == nil || nm.Path == "" {
		return nil
	}
	return func(_ context.Context, node string) (func(), error) {
		command, env, err := nodeManagerCommand(nm, w.ccmExpander, node, w.cluster.Kubeconfig())
		if err != nil {
			return nil, err
		}
		command[0] = w.profile.ResolvePath(command[0])
		p, err := proc.Start(proc.Options{
			Name:    "node manager of " + node,
			Command: command,
			Env:     env,
			LogPath: filepath.Join(w.logDir, "node-manager-"+node+".log"),
		})
		if err != nil {
			return nil, err
		}
		w.logf("started the node manager of %s (pid %d): %s", node, p.Pid(), proc.CommandLine(command))
		// A node manager that ends on its own leaves its node to nobody:
		// the run says so with its last log lines, not only its log file.
		var stopping atomic.Bool
		go func() {
			<-p.Done()
			if !stopping.Load() {
				w.logf("the node manager of %s ended on its own: %v", node, p.ExitError())
			}
		}()
		return func() {
			stopping.Store(true)
			if err := p.Stop(context.Background(), ccm.StopGrace); err != nil {
				w.logf("stopping the node manager of %s: %v", node, err)
			}
		}, nil
	}
}

// nodeManagerCommand is the node manager's command line for one node and
// its environment: the profile's args expanded, with --node-name and
// --kubeconfig added unless the args set them.
func nodeManagerCommand(nm *profile.NodeManager, e *profile.Expander, node, kubeconfig string) ([]string, []string, error) {
	path, err := e.Expand(nm.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("ccm.nodeManager.path: %w", err)
	}
	args, err := e.ExpandAll(nm.Args)
	if err != nil {
		return nil, nil, fmt.Errorf("ccm.nodeManager.args: %w", err)
	}
	env, err := e.Environ(nm.Env)
	if err != nil {
		return nil, nil, fmt.Errorf("ccm.nodeManager.env: %w", err)
	}
	if _, ok := ccm.FlagValue(args, "node-name"); !ok {
		args = append(args, "--node-name="+node)
	}
	if _, ok := ccm.FlagValue(args, "kubeconfig"); !ok {
		args = append(args, "--kubeconfig="+kubeconfig)
	}
	return append([]string{path}, args...), env, nil
}

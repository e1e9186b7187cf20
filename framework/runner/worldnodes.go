package runner

// The world's simulated nodes, on a cluster without machines of its own.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
)

// registerNodes creates the profile's simulated machines: one cloud
// instance each, and a kubelet that registers it.
func (w *world) registerNodes(ctx context.Context, sim cluster.NodeSimulator) error {
	// CheckProfile refused a driver without these before anything started;
	// this holds should its second handshake answer otherwise.
	if missing := missingVerbs(w.driverInfo(), machineVerbs); len(missing) > 0 {
		return &InputError{fmt.Errorf("profile %s: cloudDriver: the %s backend simulates its nodes and needs a cloud driver that implements %s; %s",
			w.profile.Path, w.backend.Name(), quoteVerbs(machineVerbs), driverLacks(w.driverInfo(), missing))}
	}
	if err := w.removeLeftoverNodes(ctx); err != nil {
		return &SetupError{Step: "simulated nodes", Err: err}
	}
	// The kubelets have a client of their own, as real ones do, so that
	// their heartbeats never wait behind the specs' requests.
	kubeletClient, err := kubernetes.NewForConfig(w.config)
	if err != nil {
		return &SetupError{Step: "simulated nodes", Err: err}
	}
	w.kubelets = nodes.NewPool(kubeletClient, nodes.Options{
		KubeletVersion:    sim.KubeletVersion(),
		HeartbeatInterval: sim.NodeHeartbeatInterval(),
		ServeNodePorts:    true,
		Agent:             w.nodeManagerAgent(),
	})
	w.machines = framework.NewMachines(w.driver, w.kubelets, w.profile.Cluster.IPFamilies, w.watch)
	w.onTeardown("remove simulated nodes", func(ctx context.Context) error {
		var errs []error
		for _, name := range w.nodes {
			errs = append(errs, w.machines.Delete(ctx, name))
		}
		return errors.Join(append(errs, w.kubelets.Close(ctx))...)
	})
	// The machines come up together; each is independent of the others.
	names := make([]string, w.profile.Cluster.Nodes)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := range names {
		names[i] = fmt.Sprintf("ccm-node-%d", i+1)
		req := framework.MachineRequest{Name: names[i], OS: nodes.OSLinux}
		if i >= len(names)-w.profile.Cluster.WindowsNodes {
			req.OS = nodes.OSWindows
		}
		wg.Go(func() {
			_, errs[i] = w.machines.Add(ctx, req)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			w.nodes = append(w.nodes, names[i])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &SetupError{Step: "simulated nodes", Err: err}
	}
	windows := ""
	if n := w.profile.Cluster.WindowsNodes; n > 0 {
		windows = fmt.Sprintf("; Windows: %s", strings.Join(names[len(names)-n:], ", "))
	}
	w.logf("registered %d simulated nodes (%s%s)", len(names), strings.Join(w.profile.Cluster.IPFamilies, ","), windows)
	return nil
}

// removeLeftoverNodes deletes simulated Nodes an earlier run on the same
// cluster left behind (an attached cluster outlives its runs; a run killed
// with SIGKILL cannot clean up). A spec that reads every node must see only
// this run's.
func (w *world) removeLeftoverNodes(ctx context.Context) error {
	removed, err := nodes.RemoveSimulated(ctx, w.client)
	if len(removed) > 0 {
		w.logf("removed %d simulated nodes an earlier run left behind: %s", len(removed), strings.Join(removed, ", "))
	}
	return err
}

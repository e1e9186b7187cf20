package runner

// The world's cluster: started from its backend, and asked what it is.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

func (w *world) startCluster(ctx context.Context) error {
	w.logf("starting the cluster (%s backend)", w.backend.Name())
	start := time.Now()
	c, err := w.backend.Start(ctx, cluster.StartInput{
		Dir:               w.runDir,
		Nodes:             w.profile.Cluster.Nodes,
		IPFamilies:        w.profile.Cluster.IPFamilies,
		CloudRoutesPods:   w.profile.Cluster.PodRoutes == profile.PodRoutesCloud,
		KubernetesVersion: cmp.Or(w.kubernetesVersion, w.profile.Cluster.KubernetesVersion),
		Progress:          w.out,
	})
	if err != nil {
		var inErr *cluster.InputError
		if errors.As(err, &inErr) {
			return &InputError{inErr.Err}
		}
		return &SetupError{Step: "cluster", Err: err}
	}
	w.cluster = c
	w.onTeardown("stop the cluster", func(ctx context.Context) error {
		var errs []error
		if le, ok := c.(cluster.LogExporter); ok {
			if err := le.ExportLogs(ctx, w.logDir); err != nil {
				errs = append(errs, fmt.Errorf("exporting the cluster's logs: %w", err))
			}
		}
		return errors.Join(append(errs, c.Stop(ctx))...)
	})
	w.config = c.RESTConfig()
	// client-go's default limit (5 requests a second) would make every
	// spec queue behind the others' polls.
	w.config.QPS, w.config.Burst = clientQPS, clientBurst
	w.client, err = kubernetes.NewForConfig(w.config)
	if err != nil {
		return &SetupError{Step: "cluster client", Err: err}
	}
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	w.onTeardown("stop watching", func(context.Context) error { stopWatch(); return nil })
	if w.watch, err = framework.StartWatch(watchCtx, w.client); err != nil {
		return &SetupError{Step: "cluster watch", Err: err}
	}
	w.info.Backend = c.Backend()
	if d, ok := c.(cluster.Describer); ok {
		w.info.BackendMetadata = d.Metadata()
	}
	if v, err := w.client.Discovery().ServerVersion(); err == nil {
		w.info.KubernetesVersion = v.GitVersion
		w.info.KubernetesCommit = GitCommit(v.GitCommit)
		w.emulation = emulatedMinor(v.Major, v.Minor, v.EmulationMajor, v.EmulationMinor)
	} else {
		w.logf("asking the API server for its version: %v (specs with a Kubernetes version range will run as if they applied)", err)
	}
	if vc, ok := c.(cluster.Versioned); ok && w.info.KubernetesCommit == "" {
		// A binary built before the cache stamped its commit reports
		// none; the backend may know it another way.
		w.info.KubernetesCommit = GitCommit(vc.KubernetesCommit())
	}
	w.logf("cluster API ready in %s: Kubernetes %s at %s", time.Since(start).Round(logPrecision), w.info.KubernetesVersion, w.config.Host)
	return nil
}

// giveEchoImage decides which echo server image the data path specs run
// as backend pods on real nodes. A cluster that loads images (kind) gets
// it from the Docker engine: the one named, else the default that make
// images builds. Any other cluster runs the image named as it is, pulled
// from its registry or already on its nodes; with none named the specs
// that need it skip, saying so.
func (w *world) giveEchoImage(ctx context.Context) error {
	if _, simulated := w.cluster.(cluster.NodeSimulator); simulated {
		// Simulated nodes run no pods; the specs answer on them otherwise.
		return nil
	}
	loader, ok := w.cluster.(cluster.ImageLoader)
	if !ok {
		if w.echoRef != "" {
			w.logf("the data path specs run the echo server image %s as the cluster's own pods: the cluster pulls it or has it already", w.echoRef)
		}
		w.echoImage = w.echoRef
		return nil
	}
	ref := cmp.Or(w.echoRef, framework.DefaultEchoImage)
	if _, err := ccm.InspectImage(ctx, "", ref); err != nil {
		return &InputError{fmt.Errorf("the data path specs on the %s backend run the echo server image %s as backends, and the Docker engine has none (build it with make images): %w",
			w.backend.Name(), ref, err)}
	}
	if err := loader.LoadImage(ctx, ref); err != nil {
		return &SetupError{Step: "echo image", Err: err}
	}
	w.echoImage = ref
	return nil
}

// emulatedMinor is the minor ("1.35") an API server of release
// major.minor emulates, from /version's emulationMajor and emulationMinor
// (KEP-4330), or "" when it emulates its own release or does not say.
// The minor may carry a "+" (a vendor's build).
func emulatedMinor(major, minor, emuMajor, emuMinor string) string {
	if emuMajor == "" || emuMinor == "" {
		return ""
	}
	if emuMajor == major && emuMinor == strings.TrimSuffix(minor, "+") {
		return ""
	}
	return emuMajor + "." + emuMinor
}

// GitCommit returns commit if it is a git commit hash (40 hexadecimal
// digits), else "": a build without git stamping reports the unexpanded
// "$Format:%H$" or nothing, and no placeholder may reach the results.
func GitCommit(commit string) string {
	commit = strings.TrimSpace(commit)
	if len(commit) != 40 {
		return ""
	}
	for _, r := range commit {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return ""
		}
	}
	return strings.ToLower(commit)
}

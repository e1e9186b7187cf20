package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/k8sbin"
)

func newClusterCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Bring the embedded local cluster up or down, to poke at it by hand",
	}
	var dir, version string
	up := &cobra.Command{
		Use:   "up",
		Short: "Start etcd, kube-apiserver and kube-controller-manager on loopback",
		Long: `Up starts the embedded local cluster in --dir and returns once it is ready,
leaving it running in the background; it prints the kubeconfig path. Stop it
with 'ccm-conformance cluster down --dir DIR'. Binaries are built from the Go
module proxy on first use (a cold build takes about 15 minutes) and cached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			abs, err := filepath.Abs(dir)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			c, err := local.Start(ctx, local.Options{Dir: abs, KubernetesVersion: version, Detach: true, Progress: stderr})
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("cluster up: %w", err)}
			}
			fmt.Fprintf(stdout, "local cluster %s is up at %s\nexport KUBECONFIG=%s\nstop it with: ccm-conformance cluster down --dir %s\n",
				c.KubernetesVersion(), c.APIServerURL(), c.Kubeconfig(), abs)
			return nil
		},
	}
	up.Flags().StringVar(&dir, "dir", defaultClusterDir(), "working directory of the cluster (certificates, kubeconfig, logs)")
	up.Flags().StringVar(&version, "kubernetes-version", "", "Kubernetes release (default: the pinned one)")

	down := &cobra.Command{
		Use:   "down",
		Short: "Stop a cluster started with 'cluster up' and remove its directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("cluster down: no cluster in %s (%v)", dir, err)}
			}
			if err := local.StopDir(ctx, dir); err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("cluster down: %w", err)}
			}
			fmt.Fprintf(stdout, "local cluster in %s stopped and removed\n", dir)
			return nil
		},
	}
	down.Flags().StringVar(&dir, "dir", defaultClusterDir(), "working directory given to 'cluster up'")
	var prebuildVersion string
	prebuild := &cobra.Command{
		Use:   "prebuild",
		Short: "Build and cache etcd, kube-apiserver and kube-controller-manager without starting them",
		Long: `Prebuild does the slow part of the first run up front: it builds the local
cluster's binaries from the Go module proxy (about 15 minutes cold on two
cores), shows progress, caches them, and prints their paths.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			b, err := local.EnsureBinaries(ctx, local.Options{KubernetesVersion: prebuildVersion, Progress: stderr})
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("cluster prebuild: %w", err)}
			}
			for _, c := range []struct{ name, path string }{{"etcd", b.Etcd}, {"kube-apiserver", b.APIServer}, {"kube-controller-manager", b.ControllerManager}} {
				how := ""
				if bi, err := k8sbin.ReadBuildInfo(c.path); err == nil {
					how = " (" + bi.How() + ")"
				}
				fmt.Fprintf(stdout, "%s: %s%s\n", c.name, c.path, how)
			}
			return nil
		},
	}
	prebuild.Flags().StringVar(&prebuildVersion, "kubernetes-version", "", "Kubernetes release (default: the pinned one)")
	cmd.AddCommand(up, down, prebuild)
	return cmd
}

func defaultClusterDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ccm-conformance", "cluster")
	}
	return filepath.Join(os.TempDir(), "ccm-conformance-cluster")
}

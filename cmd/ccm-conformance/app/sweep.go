package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/framework/sweep"
)

func newSweepCommand(stdout io.Writer) *cobra.Command {
	var providerPath, kubeconfig string
	var dryRun bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "sweep --provider P [--kubeconfig K] [--dry-run]",
		Short: "Remove what earlier runs left on a cluster and in its cloud",
		Long: `sweep removes what runs of the harness left behind when they were killed or
their CI job was aborted: the namespaces the harness labels as its own, the
machines and Nodes it names (ccm-join-xxxxx, ccm-node-xxxxx, ccmc-check-xxxxx),
their routes and validate-driver's, all through the profile's cloud driver.
The load balancers of the harness's Services are the CCM's to delete when their
namespaces go; sweep waits for that (--wait) and reports any that stay.

Run it when no run uses the cluster. Without --kubeconfig (or $KUBECONFIG) it
sweeps the cloud only. The cloud driver talks to the cloud as it is: the
profile's services are not started.

Exit codes: 0 nothing left, 1 something left that sweep may not remove (named
on stdout), 2 bad input or a failure to list or remove.`,
		Example: `  ccm-conformance sweep --provider my.yaml --kubeconfig ~/.kube/config --dry-run
  ccm-conformance sweep --provider my.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			bad := func(err error) error { return &exitError{code: runner.ExitHarnessError, err: err} }
			p, err := profile.Load(providerPath)
			if err != nil {
				return bad(err)
			}
			if kubeconfig == "" {
				kubeconfig = os.Getenv("KUBECONFIG")
			}
			opts := sweep.Options{DryRun: dryRun, Wait: wait, Out: stdout}
			if kubeconfig != "" {
				cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
				if err != nil {
					return bad(fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err))
				}
				if opts.Client, err = kubernetes.NewForConfig(cfg); err != nil {
					return bad(fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err))
				}
				if _, err := opts.Client.Discovery().ServerVersion(); err != nil {
					return bad(fmt.Errorf("--kubeconfig %s: the cluster does not answer: %w", kubeconfig, err))
				}
			} else {
				fmt.Fprintln(stdout, "sweep: no --kubeconfig and no $KUBECONFIG: sweeping the cloud only")
			}
			drv, done, err := runner.OpenCloudDriver(ctx, p, kubeconfig)
			if err != nil {
				return bad(err)
			}
			defer done()
			opts.Driver = drv
			if drv == nil {
				fmt.Fprintf(stdout, "sweep: profile %s has no cloud driver: sweeping the cluster only\n", providerPath)
			}
			if opts.Client == nil && drv == nil {
				return bad(errors.New("nothing to sweep: no cluster (--kubeconfig) and no cloud driver in the profile"))
			}
			rep, err := sweep.Run(ctx, opts)
			if err != nil {
				return bad(fmt.Errorf("sweep: %w", err))
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			fmt.Fprintf(stdout, "sweep: %s %d, left %d\n", verb, len(rep.Removed), len(rep.Left))
			if len(rep.Left) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("sweep: %d leftover(s) it may not remove, named above", len(rep.Left))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&providerPath, "provider", "", "provider profile (YAML): its cloud driver reaches the cloud")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster (default $KUBECONFIG; without either, only the cloud is swept)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	cmd.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the namespaces to go and the CCM to delete their load balancers")
	_ = cmd.MarkFlagRequired("provider")
	return cmd
}

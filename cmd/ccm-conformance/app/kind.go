package app

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/kind/nodeimage"
)

func newKindCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "Work with the kind backend's node image",
	}
	var opts nodeimage.Options
	nodeImage := &cobra.Command{
		Use:   "node-image",
		Short: "Build the kind node image offline (or find it cached) and print its tag",
		Long: `Node-image builds the kind node image without a registry (docs/kind.md): a
Debian root filesystem from debootstrap, kind's base files from the
sigs.k8s.io/kind module, kubelet, kubeadm and kubectl built from the Go module
proxy, and the control-plane images made here and preloaded into the node's
containerd; then it imports the image into Docker. Everything is cached by
the versions it holds: a second run finds the image and builds nothing. A
cold build takes 20-40 CPU-minutes; progress goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			opts.Progress = stderr
			img, err := nodeimage.Ensure(ctx, opts)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("kind node-image: %w", err)}
			}
			fmt.Fprintln(stdout, img.Tag)
			return nil
		},
	}
	nodeImage.Flags().StringVar(&opts.KubernetesVersion, "kubernetes-version", "", "Kubernetes release (default "+nodeimage.DefaultKubernetesVersion+")")
	nodeImage.Flags().StringVar(&opts.EtcdVersion, "etcd-version", "", "etcd release (default "+nodeimage.DefaultEtcdVersion+")")
	nodeImage.Flags().StringVar(&opts.DebianMirror, "debian-mirror", "", "Debian mirror for debootstrap (default $"+nodeimage.EnvDebianMirror+", else the machine's apt sources)")
	cmd.AddCommand(nodeImage)
	return cmd
}

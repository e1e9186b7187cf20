package app

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/kind"
	"github.com/ccm-conformance/ccm-conformance/kind/nodeimage"
)

func newKindCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "Work with the kind backend's node image, or configure a stock kind cluster",
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
	var workers int
	var families []string
	config := &cobra.Command{
		Use:   "config [--workers N] [--ip-family IPv4,IPv6]",
		Short: "Print a kind configuration for a stock node image whose nodes a CCM must initialize",
		Long: `config prints the kind cluster configuration that a cluster made from a stock
kind node image (kindest/node) needs for a CCM deployed into it to be tested:
--cloud-provider=external on kube-controller-manager and every kubelet, so that
new nodes carry the uninitialized taint, and kind's own provider ID removed, so
that the CCM sets it. kind's CNI, CoreDNS and etcd stay as kind makes them.
Give it to kubetest2's kind deployer (--config) or to kind create cluster
(docs/kubetest2.md). The harness's own kind backend makes its clusters itself.`,
		Example: `  ccm-conformance kind config --workers 2 > kind-ccm.yaml
  kubetest2 kind --config kind-ccm.yaml --up --down --test=ccm -- --provider my.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := kind.StockConfig(workers, families)
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("kind config: %w", err)}
			}
			_, err = stdout.Write(data)
			return err
		},
	}
	config.Flags().IntVar(&workers, "workers", 2, "worker nodes besides the control plane")
	config.Flags().StringSliceVar(&families, "ip-family", []string{"IPv4"}, "IP families of the cluster: IPv4, IPv6, or both")
	cmd.AddCommand(nodeImage, config)
	return cmd
}

// Command reference-node-manager is the reference provider's cloud node
// manager: node initialization by an agent on each node, for the one Node
// it runs on, while the central CCM runs its other controllers with
// --controllers=*,-cloud-node-controller. Azure runs its CCM this way
// (cloud-node-manager, a DaemonSet), and so does OpenShift.
//
// It runs k8s.io/cloud-provider's own cloud node controller (the one the
// CCM's cloud-node-controller runs) on an informer that sees only its Node,
// against the reference cloud:
//
//	reference-node-manager --node-name=ccm-node-1 --kubeconfig=... \
//	    --node-status-update-frequency=1s --reference-defects=wrong-zone
//
// The endpoint comes from --cloud-config or $REFERENCE_CLOUD_ENDPOINT, as
// for reference-ccm. See docs/reference-provider.md.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	nodecontroller "k8s.io/cloud-provider/controllers/node"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/klog/v2"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloud"
)

// flags are the command line of the node manager.
type flags struct {
	nodeName         string
	kubeconfig       string
	cloudConfig      string
	statusUpdateFreq time.Duration
	reference        *cloud.Options
}

func parseFlags(args []string) (flags, error) {
	f := flags{reference: cloud.NewOptions()}
	fs := pflag.NewFlagSet("reference-node-manager", pflag.ContinueOnError)
	fs.StringVar(&f.nodeName, "node-name", "", "Name of the Node this manager initializes and keeps up to date (required).")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means the in-cluster configuration.")
	fs.StringVar(&f.cloudConfig, "cloud-config", "", "Path to the reference cloud's configuration file (endpoint).")
	fs.DurationVar(&f.statusUpdateFreq, "node-status-update-frequency", 5*time.Minute, "How often the Node's addresses are read again from the cloud.")
	f.reference.AddFlags(fs)
	// klog's flags (--v and the rest), as the CCM takes them.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q: everything is a flag", fs.Args())
	}
	if f.nodeName == "" {
		return f, errors.New("--node-name is required")
	}
	if f.statusUpdateFreq <= 0 {
		return f, fmt.Errorf("--node-status-update-frequency=%s must be positive", f.statusUpdateFreq)
	}
	return f, nil
}

func main() {
	f, err := parseFlags(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "reference-node-manager: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f); err != nil {
		klog.ErrorS(err, "Node manager failed", "node", f.nodeName)
		code := 1
		var bad badInput
		if errors.As(err, &bad) {
			code = 2
		}
		klog.FlushAndExit(klog.ExitFlushTimeout, code)
	}
	klog.Flush()
}

// badInput is an error in what the node manager was given (a kubeconfig
// or cloud config it cannot read or use): it exits 2, as for a bad flag.
type badInput struct{ error }

func (b badInput) Unwrap() error { return b.error }

// run initializes and updates f.nodeName until ctx ends.
func run(ctx context.Context, f flags) error {
	config, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return badInput{fmt.Errorf("--kubeconfig %s: %w", f.kubeconfig, err)}
	}
	config = rest.CopyConfig(config)
	config.UserAgent = "reference-node-manager/" + f.nodeName
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	var cloudConfig io.Reader
	if f.cloudConfig != "" {
		file, err := os.Open(f.cloudConfig)
		if err != nil {
			return badInput{fmt.Errorf("--cloud-config: %w", err)}
		}
		defer file.Close()
		cloudConfig = file
	}
	provider, err := cloud.New(cloudConfig, *f.reference)
	if err != nil {
		return badInput{err}
	}
	provider.Initialize(clientbuilder.SimpleControllerClientBuilder{ClientConfig: config}, ctx.Done())

	// An informer that lists and watches this Node alone: the controller
	// never sees another, as a node manager on a real node would not.
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", f.nodeName).String()
		}))
	controller, err := nodecontroller.NewCloudNodeController(factory.Core().V1().Nodes(), client, provider, f.statusUpdateFreq, 1, 1)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	klog.InfoS("Node manager started", "node", f.nodeName, "nodeStatusUpdateFrequency", f.statusUpdateFreq)
	controller.RunWithContext(ctx, controllersmetrics.NewControllerManagerMetrics("reference-node-manager"))
	factory.Shutdown()
	return nil
}

package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
	"github.com/ccm-conformance/ccm-conformance/labels"
)

// reachTimeout bounds the first request to an existing cluster, so that an
// unreachable one is reported in seconds, not after client-go's retries.
const reachTimeout = 10 * time.Second

// FromKubeconfig is the backend of a cluster that already runs: the run
// uses it as the kubeconfig at path describes it and leaves it running.
func FromKubeconfig(path string) Backend { return existingBackend{path: path} }

type existingBackend struct{ path string }

func (b existingBackend) Name() string { return labels.BackendKubeconfig }

func (b existingBackend) SimulatesNodes() bool { return false }

// Start loads the kubeconfig and checks that the cluster answers. Errors
// name the kubeconfig: one that does not load is an *InputError.
func (b existingBackend) Start(ctx context.Context, in StartInput) (Cluster, error) {
	NoteVersionIgnored(in)
	config, err := clientcmd.BuildConfigFromFlags("", b.path)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("--kubeconfig %s: %s", b.path, firstline.Marked(err.Error()))}
	}
	probe := rest.CopyConfig(config)
	probe.Timeout = reachTimeout
	client, err := kubernetes.NewForConfig(probe)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("--kubeconfig %s: %w", b.path, err)}
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("cluster %s (from %s) is unreachable: %s", config.Host, b.path, firstline.Marked(err.Error()))
	}
	return &existing{path: b.path, config: config}, nil
}

type existing struct {
	path   string
	config *rest.Config
}

func (e *existing) Backend() string                { return "kubeconfig" }
func (e *existing) Kubeconfig() string             { return e.path }
func (e *existing) RESTConfig() *rest.Config       { return rest.CopyConfig(e.config) }
func (e *existing) Stop(ctx context.Context) error { return nil }

// InputError is a backend's complaint about its input (a kubeconfig that
// does not load, a malformed option), as opposed to a cluster that would
// not come up.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// NoteVersionIgnored says on the run's progress that a Kubernetes version
// asked for is ignored: the cluster already runs, whatever its version.
func NoteVersionIgnored(in StartInput) {
	if in.KubernetesVersion != "" && in.Progress != nil {
		fmt.Fprintf(in.Progress, "note: Kubernetes %s (cluster.kubernetesVersion) is ignored: the run uses an existing cluster, whatever its version\n", in.KubernetesVersion)
	}
}

// Package cluster says what the harness needs of a Kubernetes cluster,
// whatever brought it up. A run gets its cluster from a Backend chosen by
// the caller (the CLI picks one from its flags): the embedded local cluster
// (framework/local), an existing cluster reached through a kubeconfig
// (FromKubeconfig here), or kind (the top-level kind package). There is no
// registry: a backend is a value built by its package's constructor.
//
// Cluster holds only what every backend has. What some backends can do is
// an optional interface, found by type assertion: simulated nodes
// (NodeSimulator), logs to keep (LogExporter), work that goes on after
// Start returned (Finisher), known pod networks (PodNetworks), facts for
// the run's metadata (Describer), its build's commit (Versioned), a
// network of its own (Networked) and images loaded into its nodes
// (ImageLoader).
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package cluster

import (
	"context"
	"io"
	"time"

	"k8s.io/client-go/rest"
)

// Cluster is a running Kubernetes cluster the suites can reach.
type Cluster interface {
	// Backend names how the cluster was brought up ("local", "kubeconfig",
	// "kind"); it goes into the run's metadata.
	Backend() string
	// Kubeconfig is the path of a kubeconfig with admin rights.
	Kubeconfig() string
	// RESTConfig returns a new admin client configuration.
	RESTConfig() *rest.Config
	// Stop releases what the backend brought up for the run, also when ctx
	// is already done. A cluster the harness did not create is left
	// running.
	Stop(ctx context.Context) error
}

// Backend brings up (or attaches to) the cluster of one run.
type Backend interface {
	// Name is what Cluster.Backend will return.
	Name() string
	// SimulatesNodes says whether its clusters have no machines of their
	// own, so that the harness simulates the nodes (and their clusters are
	// NodeSimulators). It is known before Start, so that input that needs
	// real nodes, or a CCM already deployed, is refused at once.
	SimulatesNodes() bool
	// Start returns a running cluster. On error nothing is left behind.
	Start(ctx context.Context, in StartInput) (Cluster, error)
}

// StartInput is what a run tells its backend.
type StartInput struct {
	// Dir is a private, empty directory of the run the backend may use.
	Dir string
	// Nodes is how many worker nodes the profile asks for (backends with
	// real nodes create them; the local backend's nodes are simulated by
	// the runner).
	Nodes int
	// IPFamilies of the cluster: IPv4, IPv6 or both.
	IPFamilies []string
	// CloudRoutesPods says that only the cloud's routes (the CCM's route
	// controller's) may carry pod traffic between nodes: a backend with
	// real nodes then sets no routes of its own between them
	// (profile cluster.podRoutes: cloud).
	CloudRoutesPods bool
	// KubernetesVersion is the release of a cluster the backend makes
	// (the run's --kubernetes-version, else the profile's
	// cluster.kubernetesVersion); "" for the backend's default. A backend
	// that attaches to a running cluster says that it ignores it.
	KubernetesVersion string
	// Progress receives human-readable progress of long steps.
	Progress io.Writer
}

// NodeSimulator is a cluster without machines of its own: the harness
// registers simulated kubelets as its nodes and makes cloud instances for
// them through the cloud driver (the local backend).
type NodeSimulator interface {
	// KubeletVersion is what the simulated kubelets report.
	KubeletVersion() string
	// NodeHeartbeatInterval is how often a simulated kubelet must renew its
	// Lease and Ready condition for the cluster to keep it Ready.
	NodeHeartbeatInterval() time.Duration
}

// Finisher is a cluster whose Start returns before every component is
// ready, so that the run can start its CCM and nodes meanwhile. Ready
// blocks until the rest is up.
type Finisher interface {
	Ready(ctx context.Context) error
}

// LogExporter is a cluster with logs worth keeping with the run's results:
// its components', its nodes' (kubelet, container runtime) or its pods'.
type LogExporter interface {
	// ExportLogs copies the logs into dir. It is called before Stop.
	ExportLogs(ctx context.Context, dir string) error
}

// PodNetworks is a cluster that knows its pod networks (the
// kube-controller-manager's --cluster-cidr).
type PodNetworks interface {
	ClusterCIDRs() []string
}

// Versioned is a cluster that knows the git commit of its Kubernetes
// build when its API server does not report one (a binary built before
// the cache stamped the commit into it). It returns "" when it does not
// know either.
type Versioned interface {
	KubernetesCommit() string
}

// Describer is a cluster with facts that tell two runs apart (a node
// image, which workaround ran), for the run's metadata.
type Describer interface {
	Metadata() map[string]string
}

// Networked is a cluster whose nodes are machines apart from the
// harness's (containers on a network of their own): it has a name, and an
// address at which its nodes reach the harness's machine. They are the
// profile's ${CLUSTER_NAME} and ${HOST_IP}, so that a service the harness
// starts (a cloud simulator) can listen where a CCM on a node reaches it.
type Networked interface {
	Name() string
	HostIP() string
}

// ImageLoader is a cluster whose nodes can be given an image of the local
// Docker engine without a registry (kind). The harness deploys a CCM image
// into such a cluster rather than running it beside the cluster.
type ImageLoader interface {
	// LoadImage makes image (a reference or ID the Docker engine knows)
	// available to every node's container runtime under its tags.
	LoadImage(ctx context.Context, image string) error
}

// ControlPlaneHost is a cluster whose control-plane node the harness can
// write files on (kind's node containers): it can run the CCM as a static
// pod of that node's kubelet, beside kube-controller-manager.
type ControlPlaneHost interface {
	// ControlPlaneNode names the control-plane node (its Node's name).
	ControlPlaneNode() string
	// StaticPodDir is that node's kubelet's static pod directory.
	StaticPodDir() string
	// WriteNodeFile writes content to the absolute path on the
	// control-plane node with the permission bits mode, making its
	// directory.
	WriteNodeFile(ctx context.Context, path string, content []byte, mode uint32) error
	// RemoveNodePath removes path on the control-plane node, a directory
	// with what it holds; a path that is not there is no error.
	RemoveNodePath(ctx context.Context, path string) error
}

// Package local runs the embedded local cluster: a real etcd, kube-apiserver
// and kube-controller-manager on loopback, with no kubelets and no cloud
// controllers. Simulated nodes are added by the harness, and the
// cloud-controller-manager under test is started separately with the admin
// kubeconfig.
//
// The control plane is dual-stack and runs kube-controller-manager with
// --cloud-provider=external, so a Node created through the API waits for a
// CCM to initialize it, and gets podCIDRs of both families from node IPAM.
//
//	c, err := local.Start(ctx, local.Options{Progress: os.Stderr})
//	if err != nil { ... }
//	defer c.Stop(context.Background())
//	clientset, err := kubernetes.NewForConfig(c.RESTConfig())
//
// The binaries come from a per-version cache and are built from the Go
// module proxy on first use; see docs/local-cluster.md for the cache, its
// environment overrides, the directory layout, and the state file through
// which a detached cluster is stopped by StopDir.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package local

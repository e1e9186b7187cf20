// Package kubernetes is a stub of k8s.io/client-go/kubernetes for a test's build info.
package kubernetes

// Stub is referenced so that the package is linked.
var Stub = "k8s.io/client-go stub"

// Package cloudprovider is a stub of k8s.io/cloud-provider for a test's build info.
package cloudprovider

// Stub is referenced so that the package is linked.
var Stub = "k8s.io/cloud-provider stub"

// A trimmed k8s.io/kubernetes go.mod in the shape of v1.37.2's: staging
// modules required at v0.0.0 and replaced with ./staging directories, one of
// them on a line of its own, and one replacement that is not staging.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/go-logr/logr v1.4.3
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
	k8s.io/cloud-provider v0.0.0
	k8s.io/sample-apiserver v0.0.0
	k8s.io/utils v0.0.0-20260626114624-be93311217bd
)

require k8s.io/gengo/v2 v2.0.0-20260408192533-25e2208e0dc3 // indirect

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/cloud-provider => ./staging/src/k8s.io/cloud-provider
	k8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
	k8s.io/sample-controller => ./staging/src/k8s.io/sample-controller
)

replace github.com/example/forked => github.com/example/forked v1.2.3

replace k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery

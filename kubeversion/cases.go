package kubeversion

// Case is one string and whether Parse accepts it. Cases is exported so
// that the tests of every caller (matrix, the profile, run, lkg) can run
// the same table and show that they accept and refuse alike.
type Case struct {
	In string
	OK bool
}

// Cases covers releases, pre-releases, and the near misses users type.
var Cases = []Case{
	{"v1.37.2", true},
	{"v1.35.4", true},
	{"v1.38.0-rc.1", true},
	{"v1.38.0-beta.0", true},
	{"v1.38.0-alpha.3", true},
	{"1.37.2", false},
	{"v1.37", false},
	{"v1.37.2.1", false},
	{"v1.037.2", false},
	{"v2.0.0", false},
	{"v1.38.0-rc1", false},
	{"v1.38.0-gke.100", false},
	{"v1.37.2+k3s1", false},
	{"v1.37.2-dirty", false},
	{"latest", false},
	{"", false},
}

// stagingModules are the k8s.io modules published from the staging tree of
// k8s.io/kubernetes, versioned v0.N.P alongside release v1.N.P. k8s.io/klog,
// k8s.io/utils and k8s.io/kube-openapi are not among them.
var stagingModules = map[string]bool{
	"k8s.io/api": true, "k8s.io/apiextensions-apiserver": true, "k8s.io/apimachinery": true,
	"k8s.io/apiserver": true, "k8s.io/cli-runtime": true, "k8s.io/client-go": true,
	"k8s.io/cloud-provider": true, "k8s.io/cluster-bootstrap": true, "k8s.io/code-generator": true,
	"k8s.io/component-base": true, "k8s.io/component-helpers": true, "k8s.io/controller-manager": true,
	"k8s.io/cri-api": true, "k8s.io/cri-client": true, "k8s.io/cri-streaming": true,
	"k8s.io/csi-translation-lib": true, "k8s.io/dynamic-resource-allocation": true,
	"k8s.io/endpointslice": true, "k8s.io/externaljwt": true, "k8s.io/kms": true,
	"k8s.io/kube-aggregator": true, "k8s.io/kube-controller-manager": true, "k8s.io/kube-proxy": true,
	"k8s.io/kube-scheduler": true, "k8s.io/kubectl": true, "k8s.io/kubelet": true,
	"k8s.io/metrics": true, "k8s.io/mount-utils": true, "k8s.io/pod-security-admission": true,
	"k8s.io/sample-apiserver": true, "k8s.io/streaming": true,
}

// IsStagingModule reports whether path is a staging module of
// k8s.io/kubernetes.
func IsStagingModule(path string) bool { return stagingModules[path] }

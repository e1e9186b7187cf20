// Package profile reads and validates a provider profile: the file that tells
// the harness which CCM to test, how to start it, which capabilities it
// claims, how to reach its cloud driver, and how long each wait may take.
//
// The format is documented in docs/profile.md.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package profile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ccm-conformance/ccm-conformance/kubeversion"
)

// APIVersion and Kind identify a profile document.
const (
	APIVersion = "ccm-conformance.dev/v1alpha1"
	Kind       = "Profile"
)

// Profile describes one provider's CCM under test.
type Profile struct {
	APIVersion  string `json:"apiVersion"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`

	// CCM says how to run the cloud-controller-manager under test.
	CCM CCM `json:"ccm"`
	// Services are helper processes started before the CCM and stopped after
	// it, for example a cloud API simulator.
	Services []Service `json:"services,omitempty"`
	// CloudDriver is the provider's cloud driver (docs/cloud-driver.md).
	// Without one, specs that check or act on the cloud side are skipped.
	CloudDriver *CloudDriver `json:"cloudDriver,omitempty"`
	// Capabilities the CCM claims. Specs labelled with a capability that is
	// not listed here are skipped and say which one was missing.
	Capabilities []Capability `json:"capabilities"`
	// Cluster holds settings for clusters the harness makes itself.
	Cluster Cluster `json:"cluster,omitempty"`
	// Timeouts override the named waits; unset ones keep their defaults.
	Timeouts Timeouts `json:"timeouts,omitempty"`
	// LeaderMigration describes how the provider ships its CCM for a leader
	// migration; only the leader migration suite reads it.
	LeaderMigration *LeaderMigrationOptions `json:"leaderMigration,omitempty"`
	// LoadBalancer says how the provider's load balancers behave where
	// clouds differ and each way is correct.
	LoadBalancer LoadBalancerOptions `json:"loadBalancer,omitempty"`

	// Dir is the directory of the profile file; relative paths in the profile
	// are resolved against it.
	Dir string `json:"-"`
	// Path is the file the profile was read from.
	Path string `json:"-"`
	// envNames are the NAMEs of the ${env:NAME} the document uses
	// (EnvSecrets).
	envNames []string
	// Digest is the sha256 of the profile file's content
	// ("sha256:<hex>"), so that results tell two versions of one profile
	// apart; empty for a profile that was not read from a file.
	Digest string `json:"-"`
}

// CCM says how the CCM under test runs. Exactly one field is set.
type CCM struct {
	// Binary runs the CCM as a local process that the harness starts.
	Binary *BinaryCCM `json:"binary,omitempty"`
	// Image runs the CCM from a container image that the local Docker
	// engine has; the harness starts it (docs/images.md).
	Image *ImageCCM `json:"image,omitempty"`
	// Deployed is a CCM already running in the cluster under test (as a
	// DaemonSet or Deployment); the harness only reads its logs.
	Deployed *DeployedCCM `json:"deployed,omitempty"`
	// NodeManager is a cloud node manager that initializes each node from
	// the node itself, as Azure's cloud-node-manager does, while the CCM
	// runs its other controllers: the harness runs one beside each
	// simulated node (docs/profile.md, "A node manager per node").
	NodeManager *NodeManager `json:"nodeManager,omitempty"`
}

// NodeManager is a provider's per-node agent, started from an executable
// on this machine for each simulated node while its kubelet runs.
type NodeManager struct {
	// Path to the executable, beside ccm.binary: one process per
	// simulated node of the local cluster. Relative to the profile's
	// directory.
	Path string `json:"path,omitempty"`
	// Image of the node manager, beside ccm.image on kind: a DaemonSet on
	// every node (ccm.NodeManagerDaemonSet). It must be in the local
	// Docker engine; it is loaded into the nodes.
	Image string `json:"image,omitempty"`
	// Args are passed as they are, after variable expansion. The harness
	// adds --node-name=<the node> (and, for a process, --kubeconfig)
	// unless the args set them.
	Args []string `json:"args,omitempty"`
	// Env is added to the harness's own environment (a process), or is the
	// container's environment (an image).
	Env map[string]string `json:"env,omitempty"`
}

// DeployedCCM locates a CCM that runs in the cluster.
type DeployedCCM struct {
	// Namespace of the CCM's pods. Default kube-system.
	Namespace string `json:"namespace,omitempty"`
	// LabelSelector selects the CCM's pods, e.g. "k8s-app=cloud-controller-manager".
	LabelSelector string `json:"labelSelector"`
	// Container whose log is read; default the pod's first container.
	Container string `json:"container,omitempty"`
}

// BinaryCCM is a CCM started from an executable on this machine: one the
// profile names (Path), or one the harness builds from the provider's Go
// module (Module). Exactly one of the two is set.
type BinaryCCM struct {
	// Path to the executable; relative to the profile's directory.
	Path string `json:"path,omitempty"`
	// Module is the provider's CCM as a Go module at a version, which the
	// harness builds unmodified into its binary cache on first use
	// (docs/profile.md, "A CCM built from its module").
	Module *ModuleCCM `json:"module,omitempty"`
	// Args are passed as they are, after variable expansion. The harness adds
	// --kubeconfig and --authentication-kubeconfig/--authorization-kubeconfig
	// unless the args set them, and --secure-port when the args do not.
	Args []string `json:"args,omitempty"`
	// Env is added to the harness's own environment.
	Env map[string]string `json:"env,omitempty"`
}

// ModuleCCM is a CCM built from its Go module as the module proxy serves
// it: never edited or patched, with only replace directives copied from
// the module's own go.mod.
type ModuleCCM struct {
	// Path is the module path, e.g. k8s.io/cloud-provider-vsphere.
	Path string `json:"path"`
	// Version is a semver release or pseudo-version, e.g. v1.36.0; never a
	// query such as latest, so that two runs test the same code.
	Version string `json:"version"`
	// Package is the CCM's main package, inside the module, e.g.
	// k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager.
	Package string `json:"package"`
	// Replace lists replace directives copied from the module's own
	// go.mod where the build needs them, each "old => new version" (the
	// old side may carry a version too), as go.mod writes them. A module
	// whose go.mod has replaces cannot be built with go install.
	Replace []string `json:"replace,omitempty"`
}

// ModuleReplace is one replace directive of ccm.binary.module.replace.
type ModuleReplace struct {
	// Old is the module replaced; its version is empty when every version
	// is.
	Old module.Version
	// New is the module and version that replace it.
	New module.Version
}

// String writes r as go.mod does: "old [version] => new version".
func (r ModuleReplace) String() string {
	old := r.Old.Path
	if r.Old.Version != "" {
		old += " " + r.Old.Version
	}
	return old + " => " + r.New.Path + " " + r.New.Version
}

// ParseReplace parses one entry of ccm.binary.module.replace: "old =>
// new version" or "old version => new version". The new side must name a
// module and version, since a directory of upstream's repository is not
// there to copy.
func ParseReplace(s string) (ModuleReplace, error) {
	var r ModuleReplace
	oldSide, newSide, ok := strings.Cut(s, "=>")
	if !ok || strings.Contains(newSide, "=>") {
		return r, errors.New(`want "old => new version", as in a go.mod replace directive`)
	}
	old, nw := strings.Fields(oldSide), strings.Fields(newSide)
	switch len(old) {
	case 1:
		r.Old = module.Version{Path: old[0]}
	case 2:
		r.Old = module.Version{Path: old[0], Version: old[1]}
	default:
		return r, errors.New(`want "old => new version", as in a go.mod replace directive`)
	}
	if len(nw) != 2 {
		return r, errors.New(`the new side needs a module path and a version ("old => new version"); a directory cannot be copied from upstream`)
	}
	r.New = module.Version{Path: nw[0], Version: nw[1]}
	if err := module.CheckPath(r.Old.Path); err != nil {
		return r, err
	}
	if r.Old.Version != "" {
		if err := checkModuleVersion(r.Old); err != nil {
			return r, err
		}
	}
	if err := checkModuleVersion(r.New); err != nil {
		return r, err
	}
	return r, nil
}

// checkModuleVersion checks that m names a module at a canonical semver
// version (a release or a pseudo-version) that fits its path's major
// version.
func checkModuleVersion(m module.Version) error {
	if !isCanonicalVersion(m.Version) {
		return fmt.Errorf("%s@%s: not a semver release such as v1.36.0 or a pseudo-version", m.Path, m.Version)
	}
	return module.Check(m.Path, m.Version)
}

func isCanonicalVersion(v string) bool {
	return semver.IsValid(v) && semver.Canonical(v) == strings.TrimSuffix(v, "+incompatible")
}

// Replaces parses m.Replace; a profile that passed validation parses.
func (m *ModuleCCM) Replaces() ([]ModuleReplace, error) {
	out := make([]ModuleReplace, 0, len(m.Replace))
	for i, s := range m.Replace {
		r, err := ParseReplace(s)
		if err != nil {
			return nil, fmt.Errorf("ccm.binary.module.replace[%d] %q: %w", i, s, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (m *ModuleCCM) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"path", m.Path}, {"version", m.Version}, {"package", m.Package}} {
		if strings.Contains(f.value, "${") {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value, "variables are not expanded here"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	ppath, vpath, pkgpath := path.Child("path"), path.Child("version"), path.Child("package")
	switch {
	case m.Path == "":
		errs = append(errs, field.Required(ppath, "the CCM's module path, e.g. k8s.io/cloud-provider-vsphere"))
	default:
		if err := module.CheckPath(m.Path); err != nil {
			errs = append(errs, field.Invalid(ppath, m.Path, "not a module path: "+err.Error()))
		}
	}
	switch {
	case m.Version == "":
		errs = append(errs, field.Required(vpath, "a release such as v1.36.0 or a pseudo-version"))
	case !isCanonicalVersion(m.Version):
		errs = append(errs, field.Invalid(vpath, m.Version, "not a semver release such as v1.36.0 or a pseudo-version; never a query such as latest or a branch, which would let the CCM under test change between runs"))
	case m.Path != "" && len(errs) == 0:
		if err := module.Check(m.Path, m.Version); err != nil {
			errs = append(errs, field.Invalid(vpath, m.Version, err.Error()))
		}
	}
	switch {
	case m.Package == "":
		errs = append(errs, field.Required(pkgpath, "the CCM's main package, e.g. k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager"))
	case m.Package != m.Path && !strings.HasPrefix(m.Package, m.Path+"/"):
		errs = append(errs, field.Invalid(pkgpath, m.Package, fmt.Sprintf("not a package of module %s", m.Path)))
	default:
		if err := module.CheckImportPath(m.Package); err != nil {
			errs = append(errs, field.Invalid(pkgpath, m.Package, "not an import path: "+err.Error()))
		}
	}
	seen := map[string]bool{}
	for i, s := range m.Replace {
		r, err := ParseReplace(s)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("replace").Index(i), s, err.Error()))
			continue
		}
		if seen[r.Old.String()] {
			errs = append(errs, field.Duplicate(path.Child("replace").Index(i), r.Old.String()))
		}
		seen[r.Old.String()] = true
	}
	return errs
}

// ImageCCM is a CCM started from a container image. On the local cluster
// the harness runs it with Docker on the host network, as it would run the
// binary (docs/images.md).
type ImageCCM struct {
	// Reference names the image as Docker does: repository[:tag] or
	// repository@sha256:digest. It must be in the local Docker engine
	// already; nothing is pulled.
	Reference string `json:"reference"`
	// Args are passed to the image's entrypoint as ccm.binary.args are to
	// the binary, with the same flags added by the harness.
	Args []string `json:"args,omitempty"`
	// Env is the container's environment (the harness's own is not passed
	// on).
	Env map[string]string `json:"env,omitempty"`
	// Files are mounted read-only into the container, each at its path:
	// a cloud configuration, credentials. In a cluster they come from a
	// ConfigMap, or a Secret for those marked secret, that the harness
	// creates and deletes with the CCM's Deployment; beside the cluster,
	// from copies in the run's directory.
	Files []ImageFile `json:"files,omitempty"`
	// Placement is where a cluster that loads images runs the CCM:
	// PlacementDeployment (the default: the standard Deployment) or
	// PlacementStaticPod (a static pod of the control-plane node's
	// kubelet, beside kube-controller-manager; kind only).
	Placement Placement `json:"placement,omitempty"`
}

// Placement is where in the cluster the harness runs a CCM image.
type Placement string

const (
	// PlacementDeployment: the standard Deployment (docs/ccm-deployment.md).
	PlacementDeployment Placement = "deployment"
	// PlacementStaticPod: a static pod on the control-plane node, with
	// kube-controller-manager's kubeconfig (docs/ccm-deployment.md).
	PlacementStaticPod Placement = "staticPod"
)

// ImageFile is a file the CCM's container sees.
type ImageFile struct {
	// Path is where the container sees it: a clean absolute path outside
	// /tmp (the container's scratch space).
	Path string `json:"path"`
	// Content is the file's content; variables are expanded, ${env:NAME}
	// included (a credential from CI, which the run directory never shows).
	Content string `json:"content"`
	// Secret keeps the content in a Secret rather than a ConfigMap.
	Secret bool `json:"secret,omitempty"`
}

// HarnessStarts reports whether the harness runs the CCM itself (from a
// binary or an image), rather than finding it deployed.
func (c *CCM) HarnessStarts() bool { return c.Binary != nil || c.Image != nil }

// Module is the module the CCM is built from (ccm.binary.module), or nil
// for a CCM that is not built by the harness.
func (c *CCM) Module() *ModuleCCM {
	if c.Binary == nil {
		return nil
	}
	return c.Binary.Module
}

// Field names the profile field that says how the CCM runs:
// "ccm.binary.path", "ccm.binary.module", "ccm.image" or "ccm.deployed";
// "no CCM" for a profile that has none.
func (c *CCM) Field() string {
	switch {
	case c.Binary != nil && c.Binary.Module != nil:
		return "ccm.binary.module"
	case c.Binary != nil:
		return "ccm.binary.path"
	case c.Image != nil:
		return "ccm.image"
	case c.Deployed != nil:
		return "ccm.deployed"
	}
	return "no CCM"
}

// Command returns the args and env of a CCM the harness starts and the
// path of the profile field they are in ("ccm.binary" or "ccm.image").
func (c *CCM) Command() (args []string, env map[string]string, field string) {
	switch {
	case c.Binary != nil:
		return c.Binary.Args, c.Binary.Env, "ccm.binary"
	case c.Image != nil:
		return c.Image.Args, c.Image.Env, "ccm.image"
	}
	return nil, nil, ""
}

// Service is a helper process the harness starts before the CCM.
type Service struct {
	// Name identifies the service in logs and errors.
	Name string `json:"name"`
	// Command is the executable and its arguments. The first element is
	// resolved against the profile directory when it contains a slash.
	Command []string `json:"command"`
	// Env is added to the harness's own environment.
	Env map[string]string `json:"env,omitempty"`
	// ReadyFile, when set, is a path the service creates once it is ready
	// (a unix socket, for example). The harness waits for it.
	ReadyFile string `json:"readyFile,omitempty"`
}

// CloudDriver is the command that speaks the cloud-driver protocol.
type CloudDriver struct {
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
}

// LeaderMigrationOptions is what a provider ships for moving the cloud controllers
// from kube-controller-manager to its CCM (docs/leader-migration.md).
type LeaderMigrationOptions struct {
	// Config is the LeaderMigrationConfiguration file the provider ships
	// with its CCM (controllermanager.config.k8s.io/v1), passed as
	// --leader-migration-config; relative to the profile's directory.
	// Without it the CCM runs with k8s.io/cloud-provider's default
	// configuration.
	Config string `json:"config"`
}

// LoadBalancerOptions say how the provider's load balancers behave where
// clouds differ and each way is correct (docs/profile.md).
type LoadBalancerOptions struct {
	// Backends says which of the nodes the service controller hands the
	// CCM (the eligible ones) a load balancer registers: BackendsAll (the
	// default) or BackendsSubset.
	Backends string `json:"backends,omitempty"`
	// IngressNameserver is the DNS server (IP:port, variables expanded)
	// that the data path's probes ask for a load balancer's ingress
	// hostname, for a cloud whose names the machine's own resolver does
	// not know (an emulator's). Default: the machine's resolver.
	IngressNameserver string `json:"ingressNameserver,omitempty"`
	// ServiceAnnotations are set on every Service of type LoadBalancer
	// the specs make, for a provider whose CCM picks a kind of load
	// balancer by annotation (AWS's Network Load Balancers:
	// service.beta.kubernetes.io/aws-load-balancer-type: nlb). Taken as
	// written: no variables.
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`
}

// The values of loadBalancer.backends.
const (
	// BackendsAll: every eligible node is a backend.
	BackendsAll = "all"
	// BackendsSubset: the cloud registers some of the eligible nodes, at
	// least one (GCE's subsetting, Azure's node pools, AWS's
	// target-node labels); which ones is its choice. Excluded nodes are
	// never backends either way.
	BackendsSubset = "subset"
)

// Cluster holds settings for clusters the harness creates itself (the
// local backend). They are ignored for an existing cluster.
type Cluster struct {
	// Nodes is the number of simulated nodes registered before the suites
	// run. Default 3.
	Nodes int `json:"nodes,omitempty"`
	// IPFamilies of the simulated nodes' instances: IPv4, IPv6 or both.
	// Default [IPv4].
	IPFamilies []string `json:"ipFamilies,omitempty"`
	// WindowsNodes is how many of those nodes (the last ones) register as
	// Windows nodes, as a kubelet on Windows Server does; the CCM must
	// initialize them like any other. Default 0.
	WindowsNodes int `json:"windowsNodes,omitempty"`
	// ClusterCIDRs are the pod networks of an existing cluster, which the
	// routes suite needs to tell the cluster's routes from others. The
	// local cluster knows its own; default none.
	ClusterCIDRs []string `json:"clusterCIDRs,omitempty"`
	// PodRoutes says what routes each node's pod network to the other
	// nodes on a cluster the harness makes of real nodes (kind):
	// PodRoutesBackend (the default) or PodRoutesCloud.
	PodRoutes string `json:"podRoutes,omitempty"`
	// KubernetesVersion is the Kubernetes release (vX.Y.Z) of the cluster
	// the harness makes: the local cluster's control plane, or the kind
	// node image's. run --kubernetes-version overrides it; default the
	// release the harness is pinned to.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// The values of cluster.podRoutes.
const (
	// PodRoutesBackend: the backend sets static routes between the nodes
	// when the cluster comes up, for a CCM that programs no routes.
	PodRoutesBackend = "backend"
	// PodRoutesCloud: nothing but the cloud routes the CCM's route
	// controller creates carries pod traffic between nodes (the reference
	// cloud programs its routes into the kind node containers), so the
	// routes suite can show that traffic crossing them.
	PodRoutesCloud = "cloud"
)

// Load reads, decodes strictly and validates the profile at path. Every
// problem is reported with the field's path, for example
// `timeouts.nodeInitialize: invalid value "3x"`.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	p, err := Parse(data, filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	p.Path = abs
	sum := sha256.Sum256(data)
	p.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return p, nil
}

// Parse decodes and validates a profile document. dir is the directory that
// relative paths in it are resolved against.
func Parse(data []byte, dir string) (*Profile, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty document")
	}
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var p Profile
	strictErrs, err := sigsjson.UnmarshalStrict(jsonData, &p)
	if err != nil {
		return nil, fmt.Errorf("cannot decode: %s", cleanDecodeError(err))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	p.Dir = dir
	p.envNames = envNamesIn(data)
	p.applyDefaults()
	if errs := p.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &p, nil
}

// cleanDecodeError turns encoding/json's messages into ones that name the
// field path the way the rest of the validation does.
func cleanDecodeError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

func (p *Profile) applyDefaults() {
	if p.Cluster.Nodes == 0 {
		p.Cluster.Nodes = 3
	}
	if p.Cluster.PodRoutes == "" {
		p.Cluster.PodRoutes = PodRoutesBackend
	}
	if p.LoadBalancer.Backends == "" {
		p.LoadBalancer.Backends = BackendsAll
	}
	if len(p.Cluster.IPFamilies) == 0 {
		p.Cluster.IPFamilies = []string{"IPv4"}
	}
}

// Validate checks the profile and returns every problem with its path.
func (p *Profile) Validate() field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{APIVersion}))
	}
	if p.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{Kind}))
	}
	if p.Name == "" {
		errs = append(errs, field.Required(field.NewPath("name"), "the provider's name, used in reports"))
	}
	errs = append(errs, p.CCM.validate(field.NewPath("ccm"))...)

	seen := map[string]bool{}
	for i, s := range p.Services {
		path := field.NewPath("services").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		} else if seen[s.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), s.Name))
		}
		seen[s.Name] = true
		if len(s.Command) == 0 || s.Command[0] == "" {
			errs = append(errs, field.Required(path.Child("command"), "the executable and its arguments"))
		}
		errs = append(errs, validateVariables(path.Child("command"), s.Command)...)
		errs = append(errs, validateEnv(path.Child("env"), s.Env)...)
		errs = append(errs, validateVariables(path.Child("readyFile"), []string{s.ReadyFile})...)
	}

	if d := p.CloudDriver; d != nil {
		path := field.NewPath("cloudDriver")
		if len(d.Command) == 0 || d.Command[0] == "" {
			errs = append(errs, field.Required(path.Child("command"), "the driver executable and its arguments"))
		}
		errs = append(errs, validateVariables(path.Child("command"), d.Command)...)
		errs = append(errs, validateEnv(path.Child("env"), d.Env)...)
	}

	capSeen := map[Capability]bool{}
	for i, c := range p.Capabilities {
		path := field.NewPath("capabilities").Index(i)
		if !c.Known() {
			errs = append(errs, field.NotSupported(path, string(c), capabilityNames()))
		} else if capSeen[c] {
			errs = append(errs, field.Duplicate(path, string(c)))
		}
		capSeen[c] = true
	}

	cpath := field.NewPath("cluster")
	if p.Cluster.Nodes < 1 || p.Cluster.Nodes > 50 {
		errs = append(errs, field.Invalid(cpath.Child("nodes"), p.Cluster.Nodes, "must be between 1 and 50"))
	}
	if p.Cluster.WindowsNodes < 0 || p.Cluster.WindowsNodes > p.Cluster.Nodes {
		errs = append(errs, field.Invalid(cpath.Child("windowsNodes"), p.Cluster.WindowsNodes, fmt.Sprintf("must be between 0 and cluster.nodes (%d)", p.Cluster.Nodes)))
	}
	famSeen := map[string]bool{}
	for i, f := range p.Cluster.IPFamilies {
		path := cpath.Child("ipFamilies").Index(i)
		if f != "IPv4" && f != "IPv6" {
			errs = append(errs, field.NotSupported(path, f, []string{"IPv4", "IPv6"}))
		} else if famSeen[f] {
			errs = append(errs, field.Duplicate(path, f))
		}
		famSeen[f] = true
	}

	if b := p.LoadBalancer.Backends; b != BackendsAll && b != BackendsSubset {
		errs = append(errs, field.NotSupported(field.NewPath("loadBalancer", "backends"), b, []string{BackendsAll, BackendsSubset}))
	}
	if ns := p.LoadBalancer.IngressNameserver; ns != "" {
		path := field.NewPath("loadBalancer", "ingressNameserver")
		if !variableRef.MatchString(ns) {
			if _, err := netip.ParseAddrPort(ns); err != nil {
				errs = append(errs, field.Invalid(path, ns, "want IP:port, such as 127.0.0.1:${FREE_PORT_DNS}"))
			}
		} else {
			errs = append(errs, validateVariables(path, []string{ns})...)
		}
	}
	if a := p.LoadBalancer.ServiceAnnotations; len(a) > 0 {
		errs = append(errs, apivalidation.ValidateAnnotations(a, field.NewPath("loadBalancer", "serviceAnnotations"))...)
	}
	if r := p.Cluster.PodRoutes; r != PodRoutesBackend && r != PodRoutesCloud {
		errs = append(errs, field.NotSupported(cpath.Child("podRoutes"), r, []string{PodRoutesBackend, PodRoutesCloud}))
	}
	if v := p.Cluster.KubernetesVersion; v != "" {
		if _, err := kubeversion.Parse(v); err != nil {
			errs = append(errs, field.Invalid(cpath.Child("kubernetesVersion"), v, "not a Kubernetes release such as v1.37.2 or v1.38.0-rc.1"))
		}
	}
	for i, c := range p.Cluster.ClusterCIDRs {
		if _, _, err := net.ParseCIDR(c); err != nil {
			errs = append(errs, field.Invalid(cpath.Child("clusterCIDRs").Index(i), c, "not a CIDR"))
		}
	}

	errs = append(errs, p.Timeouts.validate(field.NewPath("timeouts"))...)

	if lm := p.LeaderMigration; lm != nil {
		path := field.NewPath("leaderMigration", "config")
		switch {
		case lm.Config == "":
			errs = append(errs, field.Required(path, "the LeaderMigrationConfiguration file the CCM ships with; leave out leaderMigration for upstream's default"))
		case strings.Contains(lm.Config, "${"):
			errs = append(errs, field.Invalid(path, lm.Config, "a file path relative to the profile; variables are not expanded here"))
		}
	}
	return errs
}

func (c *CCM) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var set []string
	for name, isSet := range map[string]bool{"binary": c.Binary != nil, "image": c.Image != nil, "deployed": c.Deployed != nil} {
		if isSet {
			set = append(set, name)
		}
	}
	sort.Strings(set)
	if c.NodeManager != nil {
		errs = append(errs, c.NodeManager.validate(path.Child("nodeManager"), c)...)
	}
	switch {
	case len(set) == 0:
		return append(errs, field.Required(path.Child("binary"), "how to run the CCM under test (or ccm.image for a container image, ccm.deployed for one already in the cluster)"))
	case len(set) > 1:
		return append(errs, field.Forbidden(path.Child(set[1]), fmt.Sprintf("ccm.%s and ccm.%s are exclusive: set one of ccm.binary, ccm.image and ccm.deployed", set[0], set[1])))
	case c.Image != nil:
		return append(errs, c.Image.validate(path.Child("image"))...)
	case c.Deployed != nil:
		if c.Deployed.Namespace == "" {
			c.Deployed.Namespace = "kube-system"
		}
		if c.Deployed.LabelSelector == "" {
			errs = append(errs, field.Required(path.Child("deployed", "labelSelector"), "selects the CCM's pods, e.g. k8s-app=cloud-controller-manager"))
		} else if _, err := labels.Parse(c.Deployed.LabelSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("deployed", "labelSelector"), c.Deployed.LabelSelector, err.Error()))
		}
		return errs
	}
	bpath := path.Child("binary")
	switch {
	case c.Binary.Path == "" && c.Binary.Module == nil:
		errs = append(errs, field.Required(bpath.Child("path"), "the CCM executable, or ccm.binary.module to build it from its Go module"))
	case c.Binary.Path != "" && c.Binary.Module != nil:
		errs = append(errs, field.Forbidden(bpath.Child("module"), "ccm.binary.path and ccm.binary.module are exclusive: name the executable or the module to build it from"))
	case c.Binary.Module != nil:
		errs = append(errs, c.Binary.Module.validate(bpath.Child("module"))...)
	}
	errs = append(errs, validateVariables(bpath.Child("path"), []string{c.Binary.Path})...)
	errs = append(errs, validateVariables(bpath.Child("args"), c.Binary.Args)...)
	errs = append(errs, validateEnv(bpath.Child("env"), c.Binary.Env)...)
	return errs
}

func (n *NodeManager) validate(path *field.Path, c *CCM) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Binary != nil && n.Path == "":
		errs = append(errs, field.Required(path.Child("path"), "the node manager's executable, run beside each simulated node as ccm.binary is"))
	case c.Binary != nil && n.Image != "":
		errs = append(errs, field.Forbidden(path.Child("image"), "with ccm.binary the node manager is an executable (path); an image goes with ccm.image"))
	case c.Image != nil && n.Image == "":
		errs = append(errs, field.Required(path.Child("image"), "the node manager's image, run as a DaemonSet beside ccm.image"))
	case c.Image != nil && n.Path != "":
		errs = append(errs, field.Forbidden(path.Child("path"), "with ccm.image the node manager is an image, run as a DaemonSet; an executable goes with ccm.binary"))
	case c.Binary == nil && c.Image == nil:
		// Beside a deployed CCM the provider deploys its node manager too.
		errs = append(errs, field.Forbidden(path, "a node manager goes with ccm.binary (a process per simulated node) or ccm.image (a DaemonSet on kind); beside ccm.deployed, deploy it with the CCM"))
	}
	if n.Image != "" {
		if _, err := name.ParseReference(n.Image); err != nil || strings.Contains(n.Image, "${") {
			errs = append(errs, field.Invalid(path.Child("image"), n.Image, "not an image reference such as repository:tag (variables are not expanded here)"))
		}
	}
	for i, a := range n.Args {
		if a == "--node-name" || strings.HasPrefix(a, "--node-name=") {
			errs = append(errs, field.Forbidden(path.Child("args").Index(i), "the harness gives each node's manager --node-name itself; one set here would make every node's manager manage the same node"))
		}
	}
	errs = append(errs, validateVariables(path.Child("path"), []string{n.Path})...)
	errs = append(errs, validateVariables(path.Child("args"), n.Args)...)
	errs = append(errs, validateEnv(path.Child("env"), n.Env)...)
	return errs
}

func (c *ImageCCM) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	rpath := path.Child("reference")
	switch {
	case c.Reference == "":
		errs = append(errs, field.Required(rpath, "the image, e.g. registry.example/my-ccm:v1.2.3, present in the local Docker engine"))
	case strings.Contains(c.Reference, "${"):
		errs = append(errs, field.Invalid(rpath, c.Reference, "an image reference; variables are not expanded here"))
	default:
		if _, err := name.ParseReference(c.Reference); err != nil {
			errs = append(errs, field.Invalid(rpath, c.Reference, "not an image reference such as repository:tag or repository@sha256:digest"))
		}
	}
	errs = append(errs, validateVariables(path.Child("args"), c.Args)...)
	errs = append(errs, validateEnv(path.Child("env"), c.Env)...)
	seen := map[string]bool{}
	for i, f := range c.Files {
		fpath := path.Child("files").Index(i)
		switch p := f.Path; {
		case p == "":
			errs = append(errs, field.Required(fpath.Child("path"), "where the container sees the file, e.g. /etc/kubernetes/cloud.conf"))
		case !strings.HasPrefix(p, "/") || filepath.Clean(p) != p || p == "/" || p == "/tmp" || strings.HasPrefix(p, "/tmp/") || p == "/ccm-conformance" || strings.HasPrefix(p, "/ccm-conformance/"):
			errs = append(errs, field.Invalid(fpath.Child("path"), p, "a clean absolute path to a file, outside /tmp and /ccm-conformance (the container's scratch space and the harness's files)"))
		case seen[p]:
			errs = append(errs, field.Duplicate(fpath.Child("path"), p))
		}
		seen[f.Path] = true
		errs = append(errs, validateVariables(fpath.Child("content"), []string{f.Content})...)
	}
	switch c.Placement {
	case "", PlacementDeployment, PlacementStaticPod:
	default:
		errs = append(errs, field.NotSupported(path.Child("placement"), c.Placement, []Placement{PlacementDeployment, PlacementStaticPod}))
	}
	return errs
}

func validateEnv(path *field.Path, env map[string]string) field.ErrorList {
	var errs field.ErrorList
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "= \t") {
			errs = append(errs, field.Invalid(path.Key(k), k, "not a valid environment variable name"))
		}
		errs = append(errs, validateVariables(path.Key(k), []string{v})...)
	}
	return errs
}

// ResolvePath makes a profile path absolute: relative paths are taken from
// the profile's directory. A bare name without a slash is returned unchanged
// so that it can be looked up on PATH.
func (p *Profile) ResolvePath(path string) string {
	if path == "" || filepath.IsAbs(path) || !strings.Contains(path, "/") {
		return path
	}
	return filepath.Join(p.Dir, path)
}

// LeaderMigrationConfig returns the absolute path of the provider's leader
// migration configuration file, or "" when the profile names none.
func (p *Profile) LeaderMigrationConfig() string {
	if p.LeaderMigration == nil || p.LeaderMigration.Config == "" {
		return ""
	}
	if filepath.IsAbs(p.LeaderMigration.Config) {
		return p.LeaderMigration.Config
	}
	return filepath.Join(p.Dir, p.LeaderMigration.Config)
}

// Has reports whether the profile claims capability c.
func (p *Profile) Has(c Capability) bool {
	for _, have := range p.Capabilities {
		if have == c {
			return true
		}
	}
	return false
}

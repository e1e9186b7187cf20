// Package cloud is the reference provider's implementation of
// k8s.io/cloud-provider's Interface: InstancesV2, LoadBalancer, Routes and
// Zones on top of the simulated cloud API of package cloudapi.
//
// It is written to be read: a provider author can hold it next to their own
// CCM. Everything cloud-specific goes through cloudapi.Client; everything
// else is the ordinary shape of an external cloud provider.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package cloud

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// ProviderName is the name to pass to --cloud-provider.
const ProviderName = "reference"

// EndpointEnv names the environment variable that gives the cloud API
// endpoint when the cloud config file does not.
const EndpointEnv = "REFERENCE_CLOUD_ENDPOINT"

// Config is the content of the --cloud-config file, in YAML:
//
//	endpoint: unix:///run/reference-cloud/cloud.sock
type Config struct {
	// Endpoint of the cloud API: unix:///path, tcp://host:port or
	// http://host:port. When empty, $REFERENCE_CLOUD_ENDPOINT is used.
	Endpoint string `json:"endpoint,omitempty"`
}

// ParseConfig reads a cloud config file. A nil reader (no --cloud-config)
// gives the zero Config.
func ParseConfig(r io.Reader) (Config, error) {
	var cfg Config
	if r == nil {
		return cfg, nil
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return cfg, fmt.Errorf("reading the cloud config: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("parsing the cloud config: %w", err)
	}
	return cfg, nil
}

// Options are the reference provider's own flags, in the CCM's "reference"
// flag set.
type Options struct {
	// Identity is sent as X-Reference-Caller on every cloud API call, so
	// the cloud's call log can tell two CCMs apart (leader migration,
	// failover). Default: <hostname>-<pid>.
	Identity string
	// Defects are deliberate bugs to switch on; none by default.
	Defects Defects
}

// NewOptions returns the default options.
func NewOptions() *Options {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "reference-ccm"
	}
	return &Options{Identity: fmt.Sprintf("%s-%d", host, os.Getpid()), Defects: Defects{}}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Identity, "reference-identity", o.Identity,
		"Identity this CCM gives the cloud API in the "+cloudapi.CallerHeader+" header of every call.")
	fs.Var(&o.Defects, "reference-defects",
		"Comma-separated deliberate defects to switch on, for testing the conformance harness itself. Known: "+knownDefectNames()+".")
}

// Cloud implements cloudprovider.Interface.
type Cloud struct {
	client  *cloudapi.Client
	defects Defects

	instances     *instances
	loadBalancers *loadBalancers
	routes        *routes
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New returns the reference cloud provider for a cloud config (nil when
// there is no --cloud-config) and the provider's options.
func New(config io.Reader, opts Options) (*Cloud, error) {
	cfg, err := ParseConfig(config)
	if err != nil {
		return nil, err
	}
	endpoint := strings.TrimSpace(cfg.Endpoint)
	if endpoint == "" {
		endpoint = os.Getenv(EndpointEnv)
	}
	if endpoint == "" {
		return nil, fmt.Errorf("no cloud API endpoint: set endpoint in the --cloud-config file or $%s", EndpointEnv)
	}
	client, err := cloudapi.NewClient(endpoint, opts.Identity)
	if err != nil {
		return nil, fmt.Errorf("cloud API client: %w", err)
	}
	klog.InfoS("Reference cloud provider configured", "endpoint", endpoint, "identity", opts.Identity, "defects", opts.Defects.String())
	return NewWithClient(client, opts.Defects), nil
}

// NewWithClient returns the reference cloud provider for an existing
// client.
func NewWithClient(client *cloudapi.Client, defects Defects) *Cloud {
	if defects == nil {
		defects = Defects{}
	}
	c := &Cloud{client: client, defects: defects}
	c.instances = newInstances(client, defects)
	c.loadBalancers = &loadBalancers{client: client, defects: defects, processTag: randomTag()}
	c.routes = &routes{client: client, defects: defects}
	return c
}

// Initialize is called by the CCM before the controllers start. The
// reference provider needs no Kubernetes client of its own; only some
// defects take one: ignore-autoscaler-taint (to read the Nodes) and
// serve-every-class.
func (c *Cloud) Initialize(builder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	if c.defects.Has(DefectInstancesCachedAtStart) {
		c.instances.fillCache(context.Background())
	}
	if builder == nil {
		return
	}
	if c.defects.Has(DefectServeEveryClass) {
		go c.loadBalancers.serveEveryClass(builder, stop)
	}
	if c.defects.Has(DefectIgnoreAutoscalerTaint) {
		client := builder.ClientOrDie("reference-cloud-provider")
		c.loadBalancers.listNodes = func(ctx context.Context) ([]v1.Node, error) {
			list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return list.Items, nil
		}
	}
}

// LoadBalancer returns the load balancer implementation.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.loadBalancers, true }

// Instances is the legacy instances interface; InstancesV2 replaces it.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 returns the instances implementation.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Zones returns the zones implementation. The cloud node controller uses
// InstancesV2 metadata for zones; Zones is there for older callers.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return c.instances, true }

// Clusters is not supported.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes returns the routes implementation.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return c.routes, true }

// ProviderName returns "reference".
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID is true: the simulated cloud holds one cluster, so there is
// nothing to tag resources with.
func (c *Cloud) HasClusterID() bool { return true }

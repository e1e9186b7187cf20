// Package cloud runs the simulated vCenter that the vSphere CCM is tested
// against: govmomi's own simulator (package simulator, a VPX model) with its
// vAPI simulator (tagging), served over TLS, plus a control channel
// (package simctl) for what no vCenter lets a client do.
//
// The inventory is one datacenter tagged with the region, one cluster per
// zone tagged with its zone, a few hosts in each cluster, two networks (the
// nodes' internal one and an external one) and two IP pools the driver
// takes node addresses from. There are no virtual machines: the cloud
// driver makes one per node.
//
// Start writes, into Options.Dir, the CCM's cloud config (ConfigFile), the
// CA certificate it names (CAFile), the control socket (ControlSocket) and,
// last, ReadyFile.
//
// Only providers/vsphere/cmd/vsphere-cloud and tests import this package; it
// links the simulator, which the driver must not.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package cloud

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"

	// The vAPI simulator registers the tagging endpoints on the simulator
	// (simulator.RegisterEndpoint) when imported.
	_ "github.com/vmware/govmomi/vapi/simulator"
)

// Files Start writes into Options.Dir.
const (
	// ConfigFile is the CCM's INI cloud config (--cloud-config).
	ConfigFile = "vsphere.conf"
	// CAFile is the PEM certificate the simulated vCenter serves with; the
	// cloud config names it as ca-file.
	CAFile = "vsphere-ca.pem"
	// ControlSocket serves the control channel (package simctl).
	ControlSocket = "vsphere-control.sock"
	// ReadyFile is written last; it holds the SDK URL.
	ReadyFile = "vsphere-cloud.ready"
)

// Options configure the simulated vCenter. Every field has a default.
type Options struct {
	// Listen is the TCP address of the vCenter SDK (HTTPS); default
	// 127.0.0.1:0, a free port.
	Listen string
	// Dir receives ConfigFile, CAFile, ControlSocket and ReadyFile
	// (required).
	Dir string
	// Region is the tag on the datacenter; default region-1.
	Region string
	// Zones are the tags on the clusters, one cluster per zone; default
	// zone-a, zone-b, zone-c.
	Zones []string
	// HostsPerCluster is the number of hosts in each cluster; default 2.
	HostsPerCluster int
	// RegionCategory and ZoneCategory name the tag categories, which the
	// cloud config's [Labels] section gives the CCM; default k8s-region and
	// k8s-zone.
	RegionCategory, ZoneCategory string
	// User and Password are the CCM's credentials in the cloud config;
	// default ccm@vsphere.local and ccm-conformance. The simulator accepts
	// any non-empty user and password.
	User, Password string
	// IPFamily is the cloud config's ip-family: ipv4 (default), ipv6, or
	// ipv4,ipv6 (which the CCM accepts only with ENABLE_ALPHA_DUAL_STACK).
	IPFamily string
	// InternalNetwork and ExternalNetwork name the two networks every node
	// VM has a NIC on; the cloud config gives them to the CCM as
	// internal-vm-network-name and external-vm-network-name. Default
	// "VM Network" (the simulator's own) and "External Network".
	InternalNetwork, ExternalNetwork string
	// Logf receives one line per event; default none.
	Logf func(format string, args ...any)
	// LogCalls prints the SOAP calls the SDK serves through Logf, but the
	// cloud driver's own (simctl.DriverUserAgent) and the property
	// collector's reads that succeed. Every call is in the call log.
	LogCalls bool
	// Now is the clock of the call log; default time.Now.
	Now func() time.Time
}

// IP pools the driver allocates node addresses from (IpPoolManager). The
// ranges are documentation and private ranges, never loopback or
// link-local: the CCM drops those (nodemanager.go, excludeLocalhostIPs).
const (
	InternalPool = "k8s-internal"
	ExternalPool = "k8s-external"
)

func (o *Options) setDefaults() {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Region == "" {
		o.Region = "region-1"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{"zone-a", "zone-b", "zone-c"}
	}
	if o.HostsPerCluster <= 0 {
		o.HostsPerCluster = 2
	}
	if o.RegionCategory == "" {
		o.RegionCategory = "k8s-region"
	}
	if o.ZoneCategory == "" {
		o.ZoneCategory = "k8s-zone"
	}
	if o.User == "" {
		o.User = "ccm@vsphere.local"
	}
	if o.Password == "" {
		o.Password = "ccm-conformance"
	}
	if o.IPFamily == "" {
		o.IPFamily = "ipv4"
	}
	if o.InternalNetwork == "" {
		o.InternalNetwork = "VM Network"
	}
	if o.ExternalNetwork == "" {
		o.ExternalNetwork = "External Network"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

func (o *Options) validate() error {
	if o.Dir == "" {
		return errors.New("no directory for the cloud config")
	}
	for _, f := range strings.Split(o.IPFamily, ",") {
		if f != "ipv4" && f != "ipv6" {
			return fmt.Errorf("ip family %q: want ipv4, ipv6 or ipv4,ipv6 (lower case, no spaces: the CCM compares them as they are)", o.IPFamily)
		}
	}
	seen := map[string]bool{}
	for _, z := range o.Zones {
		if z == "" || seen[z] {
			return fmt.Errorf("zones %v: each must be non-empty and distinct", o.Zones)
		}
		seen[z] = true
	}
	if o.InternalNetwork == o.ExternalNetwork {
		return fmt.Errorf("the internal and external networks are both %q", o.InternalNetwork)
	}
	return nil
}

// Cloud is a running simulated vCenter.
type Cloud struct {
	opts    Options
	model   *simulator.Model
	inproc  *vim25.Client // in-process client: reads that are not logged
	inv     *inventory
	url     *url.URL
	sdk     *http.Server
	control *http.Server
	calls   *callLog
	faults  *faults
	errs    chan error
}

// Start builds the inventory, serves the SDK on opts.Listen and the control
// channel on the socket, and writes the files into opts.Dir, ReadyFile last.
// Close stops it.
func Start(ctx context.Context, opts Options) (_ *Cloud, err error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Cloud{opts: opts, errs: make(chan error, 2)}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()

	if c.model, c.inv, err = buildInventory(ctx, &c.opts); err != nil {
		return nil, err
	}
	if c.inproc, err = vim25.NewClient(ctx, c.model.Service); err != nil {
		return nil, fmt.Errorf("in-process client: %w", err)
	}
	c.faults = &faults{svc: c.model.Service, rates: map[string]float64{}}
	c.calls = newCallLog(c.inproc, opts.Now, opts.LogCalls, opts.Logf)

	cert, certPEM, err := selfSigned(time.Now())
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening for the SDK: %w", err)
	}
	addr := l.Addr().(*net.TCPAddr)
	c.url = &url.URL{Scheme: "https", Host: addr.String(), Path: "/sdk"}
	c.sdk = &http.Server{
		Handler:           c.calls.wrap(c.model.Service.ServeMux),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	go c.serve("the SDK", c.sdk, tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))

	sock := filepath.Join(opts.Dir, ControlSocket)
	_ = os.Remove(sock) // a stale socket of an earlier run
	cl, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("listening for the control channel: %w", err)
	}
	c.control = &http.Server{Handler: c.controlHandler(), ReadHeaderTimeout: 10 * time.Second}
	go c.serve("the control channel", c.control, cl)

	if err := os.WriteFile(filepath.Join(opts.Dir, CAFile), certPEM, 0o644); err != nil {
		return nil, err
	}
	conf := cloudConfig(&c.opts, addr.IP.String(), strconv.Itoa(addr.Port), filepath.Join(opts.Dir, CAFile), c.inv.datacenter)
	if err := os.WriteFile(filepath.Join(opts.Dir, ConfigFile), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, ReadyFile), []byte(c.url.String()+"\n"), 0o644); err != nil {
		return nil, err
	}
	opts.Logf("serving the vCenter SDK on %s: datacenter %s (region %s), clusters %s; control channel on %s",
		c.url, c.inv.datacenter, opts.Region, c.inv.describeClusters(), sock)
	return c, nil
}

func (c *Cloud) serve(what string, s *http.Server, l net.Listener) {
	if err := s.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		c.errs <- fmt.Errorf("serving %s: %w", what, err)
	}
}

// URL is the SDK's URL, https://127.0.0.1:PORT/sdk.
func (c *Cloud) URL() *url.URL { u := *c.url; return &u }

// Errors delivers an error when a server stops on its own.
func (c *Cloud) Errors() <-chan error { return c.errs }

// Close stops serving, removes the control socket and the ready file, and
// removes the simulator's datastore directories.
func (c *Cloud) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, s := range []*http.Server{c.sdk, c.control} {
		if s != nil {
			if err := s.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.opts.Dir != "" {
		for _, f := range []string{ReadyFile, ControlSocket} {
			if err := os.Remove(filepath.Join(c.opts.Dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if c.model != nil {
		c.model.Remove()
	}
	return errors.Join(errs...)
}

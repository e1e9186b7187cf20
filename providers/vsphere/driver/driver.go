// Package driver is the vSphere provider's side of the cloud driver
// protocol v1 (docs/cloud-driver.md): one verb per process, request JSON on
// stdin, response JSON on stdout.
//
// The verbs a real vCenter can serve (instances, create, delete, stop,
// start) use the vSphere API through govmomi, as any vSphere client would;
// the driver finds VMs with the property collector, never with the
// SearchIndex the CCM uses, so faults injected into the CCM's lookups never
// reach it. The verbs only a simulator can serve (set-addresses, faults,
// the call log) use the simulated vCenter's control channel (package
// simctl) and are listed only when $VSPHERE_CONTROL_SOCKET names it.
//
// The driver reads the CCM's own cloud config ($VSPHERE_CLOUD_CONFIG) for
// the vCenter, its CA, the datacenter, the tag categories and the address
// rules, so that it reports an instance as that CCM will see it
// (mapping.go). It never imports the harness.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package driver

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/simctl"
)

// Environment variables the driver reads.
const (
	// ConfigEnv names the CCM's INI cloud config (required for every verb
	// but info).
	ConfigEnv = "VSPHERE_CLOUD_CONFIG"
	// ControlEnv names the simulated vCenter's control socket; without it
	// the simulator-only verbs are not offered.
	ControlEnv = "VSPHERE_CONTROL_SOCKET"
	// UserEnv and PasswordEnv override the cloud config's credentials for
	// the driver's own session.
	UserEnv     = "VSPHERE_DRIVER_USER"
	PasswordEnv = "VSPHERE_DRIVER_PASSWORD"
)

// UserAgent is the User-Agent of every request the driver makes; the call
// log leaves those calls out.
const UserAgent = simctl.DriverUserAgent

// Main runs one driver call: args are the verb words, stdin holds the
// request. It returns the process exit code (driverproto.Main).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return driverproto.Main("vsphere-cloud-driver", args, stdin, stdout, stderr, func(name string) (driverproto.Verb, error) {
		v, ok := verbTable()[name]
		if !ok || !slices.Contains(offered(getenv), name) {
			return nil, fmt.Errorf("unknown verb %q (known: %s)", name, strings.Join(offered(getenv), ", "))
		}
		return func(request []byte) (any, error) { return run(ctx, name, v, request, getenv) }, nil
	})
}

type verb struct {
	fn func(d *driver, ctx context.Context, request []byte) (any, error)
	// simulator marks the verbs that need the control channel.
	simulator bool
	// vcenter marks the verbs that need a session with the vCenter.
	vcenter bool
}

// verbNames lists every verb, in the order info reports them.
func verbNames() []string {
	return []string{
		"info",
		"instances list", "instance get", "instance create", "instance delete",
		"instance stop", "instance start", "instance set-addresses",
		"fault inject", "fault clear",
		"calls list",
	}
}

func verbTable() map[string]verb {
	return map[string]verb{
		"info":                   {fn: (*driver).info},
		"instances list":         {fn: (*driver).listInstances, vcenter: true},
		"instance get":           {fn: (*driver).getInstance, vcenter: true},
		"instance create":        {fn: (*driver).createInstance, vcenter: true},
		"instance delete":        {fn: (*driver).deleteInstance, vcenter: true},
		"instance stop":          {fn: (*driver).stopInstance, vcenter: true},
		"instance start":         {fn: (*driver).startInstance, vcenter: true},
		"instance set-addresses": {fn: (*driver).setAddresses, vcenter: true, simulator: true},
		"fault inject":           {fn: (*driver).injectFault, simulator: true},
		"fault clear":            {fn: (*driver).clearFaults, simulator: true},
		"calls list":             {fn: (*driver).listCalls, simulator: true},
	}
}

// offered lists the verbs info reports: the simulator-only ones only with
// a control channel.
func offered(getenv func(string) string) []string {
	table := verbTable()
	var out []string
	for _, name := range verbNames() {
		if !table[name].simulator || getenv(ControlEnv) != "" {
			out = append(out, name)
		}
	}
	return out
}

// driver holds what one call needs.
type driver struct {
	getenv  func(string) string
	cfg     *config
	vc      *vcenter       // nil for verbs that need no vCenter
	control *simctl.Client // nil without $VSPHERE_CONTROL_SOCKET
}

func run(ctx context.Context, name string, v verb, request []byte, getenv func(string) string) (any, error) {
	var err error
	d := &driver{getenv: getenv}
	if sock := getenv(ControlEnv); sock != "" {
		d.control = simctl.NewClient(sock)
	}
	if name == "info" {
		return v.fn(d, ctx, request) // info needs no cloud
	}
	path := getenv(ConfigEnv)
	if path == "" {
		return nil, fmt.Errorf("$%s is not set: it names the CCM's cloud config", ConfigEnv)
	}
	if d.cfg, err = readConfig(path); err != nil {
		return nil, fmt.Errorf("reading the cloud config: %w", err)
	}
	if v.vcenter {
		user, password := d.cfg.user, d.cfg.password
		if u := getenv(UserEnv); u != "" {
			user, password = u, getenv(PasswordEnv)
		}
		if d.vc, err = connect(ctx, d.cfg, user, password); err != nil {
			return nil, err
		}
		defer d.vc.close()
	}
	return v.fn(d, ctx, request)
}

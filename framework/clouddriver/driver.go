// Package clouddriver is the harness side of the cloud-driver protocol: it
// runs a provider's driver executable with a verb and JSON on stdin, and
// decodes the JSON it prints. See docs/cloud-driver.md.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package clouddriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/driversdk"
)

// Bounds of one call, besides Options.CallTimeout.
const (
	// DefaultCallTimeout bounds one call when Options.CallTimeout is unset.
	DefaultCallTimeout = 30 * time.Second
	// outputWaitDelay is how long a killed driver's children may keep its
	// stdout and stderr open before the call stops reading them.
	outputWaitDelay = 2 * time.Second
)

// Driver runs one provider's cloud driver.
type Driver struct {
	command []string
	env     []string
	timeout time.Duration
	info    Info

	mu     sync.Mutex
	faults []*Error // the calls in which the driver broke the protocol
}

// Options configure a Driver.
type Options struct {
	// Command is the driver executable and its fixed arguments.
	Command []string
	// Env is the complete environment of the driver process.
	Env []string
	// CallTimeout bounds one call. Default DefaultCallTimeout.
	CallTimeout time.Duration
}

// ErrorKind says how a driver call failed.
type ErrorKind string

const (
	// KindFailed: the driver exited non-zero (other than ExitNotFound) and
	// gave its reason on stderr: the cloud or the driver failed the call.
	KindFailed ErrorKind = "failed"
	// KindNotFound: the driver exited ExitNotFound, "no such object".
	KindNotFound ErrorKind = "not found"
	// KindTimeout: the driver did not answer within the call's deadline.
	KindTimeout ErrorKind = "timeout"
	// KindProtocol: the driver broke the protocol: it could not be run, or
	// it exited 0 with an answer that is not the JSON the verb returns
	// (garbage, two values, a missing object, another protocol version).
	// That is the driver's fault, never the CCM's.
	KindProtocol ErrorKind = "protocol"
)

// Error is a failed driver call. Its message names the driver and the verb
// and quotes what the driver wrote on stderr, so a spec failure shows the
// provider's reason.
type Error struct {
	// Driver is the driver executable's base name.
	Driver   string
	Verb     Verb
	Command  string
	Kind     ErrorKind
	ExitCode int
	Stderr   string
	Reason   string
}

func (e *Error) Error() string {
	var b strings.Builder
	name := e.Driver
	if name == "" {
		name = "(unnamed)"
	}
	if e.Kind == KindProtocol {
		fmt.Fprintf(&b, "cloud driver %s broke the protocol: %q %s", name, string(e.Verb), e.Reason)
	} else {
		fmt.Fprintf(&b, "cloud driver %s %q: %s", name, string(e.Verb), e.Reason)
	}
	if e.ExitCode != 0 {
		fmt.Fprintf(&b, " (exit code %d)", e.ExitCode)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		// One line, so that the message reads the same in a one-line
		// input error, a JUnit failure and a summary.
		s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " | ")
		fmt.Fprintf(&b, "; stderr: %s", truncate(s, 2000))
	}
	return b.String()
}

// ExitNotFound is the exit code a driver uses for "no such object".
const ExitNotFound = 3

// IsNotFound reports whether err is a driver's "no such object" answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.ExitCode == ExitNotFound
}

// IsProtocolError reports whether err is a driver that broke the protocol
// (KindProtocol): the driver's fault, not the CCM's.
func IsProtocolError(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindProtocol
}

// UnsupportedError says the driver does not implement a verb.
type UnsupportedError struct{ Verb Verb }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("cloud driver does not implement %q", string(e.Verb))
}

// New runs the driver's handshake and returns a Driver ready for calls.
func New(ctx context.Context, opts Options) (*Driver, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("cloud driver: no command")
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	d := &Driver{command: opts.Command, env: opts.Env, timeout: opts.CallTimeout}
	if err := d.call(ctx, VerbInfo, driversdk.Empty{}, &d.info); err != nil {
		return nil, err
	}
	if d.info.ProtocolVersion != ProtocolVersion {
		return nil, d.violation(VerbInfo, fmt.Sprintf("answered protocol version %q, the harness speaks %q", d.info.ProtocolVersion, ProtocolVersion))
	}
	for _, v := range d.info.Verbs {
		if strings.TrimSpace(string(v)) == "" {
			return nil, d.violation(VerbInfo, fmt.Sprintf("listed an empty verb in %q", d.info.Verbs))
		}
	}
	return d, nil
}

// Info is the driver's handshake answer.
func (d *Driver) Info() Info { return d.info }

// Name is the driver executable's base name, as errors name it.
func (d *Driver) Name() string {
	if len(d.command) == 0 {
		return d.info.Provider
	}
	return filepath.Base(d.command[0])
}

// FromInfo returns a driver that knows only a handshake's answer: Info and
// Supports answer from it, and every call fails without running anything.
// `ccm-conformance list` tries the specs against one, to see which verbs
// they would miss.
func FromInfo(info Info) *Driver { return &Driver{info: info} }

// errNoCommand is what every call of a FromInfo driver returns.
var errNoCommand = errors.New("cloud driver: known only by its handshake; it cannot be called")

// Faults returns how many calls so far broke the protocol; FaultsSince
// with it returns the later ones.
func (d *Driver) Faults() int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.faults)
}

// FaultsSince returns the protocol errors after the first n (see Faults).
func (d *Driver) FaultsSince(n int) []*Error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if n >= len(d.faults) {
		return nil
	}
	return append([]*Error(nil), d.faults[max(n, 0):]...)
}

// violation records and returns a protocol error of a call of verb.
func (d *Driver) violation(verb Verb, reason string) *Error {
	e := &Error{Driver: d.Name(), Verb: verb, Command: d.commandLine(verb), Kind: KindProtocol, Reason: reason}
	d.record(e)
	return e
}

func (d *Driver) record(e *Error) {
	if e.Kind != KindProtocol {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = append(d.faults, e)
}

// Supports reports whether the driver listed verb in its handshake.
func (d *Driver) Supports(verb Verb) bool {
	if d == nil {
		return false
	}
	for _, v := range d.info.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}

func (d *Driver) commandLine(verb Verb) string {
	return strings.Join(append(append([]string{}, d.command...), strings.Fields(string(verb))...), " ")
}

// call runs one verb. resp must be a pointer to the response struct.
func (d *Driver) call(ctx context.Context, verb Verb, req, resp any) error {
	if verb != VerbInfo && !d.Supports(verb) {
		return &UnsupportedError{Verb: verb}
	}
	if len(d.command) == 0 {
		return errNoCommand
	}
	input, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("cloud driver %q: encoding request: %w", string(verb), err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()

	args := append(append([]string{}, d.command[1:]...), strings.Fields(string(verb))...)
	cmd := exec.CommandContext(ctx, d.command[0], args...)
	cmd.Env = d.env
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = outputWaitDelay

	fail := func(kind ErrorKind, reason string, exit int) error {
		e := &Error{Driver: d.Name(), Verb: verb, Command: d.commandLine(verb), Kind: kind, ExitCode: exit, Stderr: stderr.String(), Reason: reason}
		d.record(e)
		return e
	}
	runErr := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fail(KindTimeout, fmt.Sprintf("did not answer within %s", d.timeout), 0)
	}
	if runErr != nil {
		var exitErr *exec.ExitError
		if errors.As(runErr, &exitErr) {
			kind := KindFailed
			if exitErr.ExitCode() == ExitNotFound {
				kind = KindNotFound
			}
			return fail(kind, "failed", exitErr.ExitCode())
		}
		return fail(KindProtocol, fmt.Sprintf("could not be run: %v", runErr), 0)
	}
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	if err := dec.Decode(resp); err != nil {
		return fail(KindProtocol, fmt.Sprintf("answered with invalid JSON (%v): %q", err, truncate(stdout.String(), 500)), 0)
	}
	if dec.More() {
		return fail(KindProtocol, fmt.Sprintf("printed more than one JSON value: %q", truncate(stdout.String(), 500)), 0)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ListInstances returns every instance the cloud has.
func (d *Driver) ListInstances(ctx context.Context) ([]Instance, error) {
	var resp driversdk.InstancesResponse
	err := d.call(ctx, VerbInstancesList, driversdk.Empty{}, &resp)
	return resp.Instances, err
}

// GetInstance returns the named instance.
func (d *Driver) GetInstance(ctx context.Context, name string) (*Instance, error) {
	var resp struct {
		Instance *Instance `json:"instance"`
	}
	if err := d.call(ctx, VerbInstanceGet, driversdk.NameRequest{Name: name}, &resp); err != nil {
		return nil, err
	}
	if resp.Instance == nil {
		return nil, d.violation(VerbInstanceGet, `answered without an "instance"`)
	}
	return resp.Instance, nil
}

// CreateInstance makes a running instance.
func (d *Driver) CreateInstance(ctx context.Context, req CreateInstanceRequest) (*Instance, error) {
	var resp struct {
		Instance *Instance `json:"instance"`
	}
	if err := d.call(ctx, VerbInstanceCreate, req, &resp); err != nil {
		return nil, err
	}
	if resp.Instance == nil {
		return nil, d.violation(VerbInstanceCreate, `answered without an "instance"`)
	}
	return resp.Instance, nil
}

// DeleteInstance deletes the named instance.
func (d *Driver) DeleteInstance(ctx context.Context, name string) error {
	return d.call(ctx, VerbInstanceDelete, driversdk.NameRequest{Name: name}, &driversdk.Empty{})
}

// StopInstance stops the named instance; it keeps existing.
func (d *Driver) StopInstance(ctx context.Context, name string) error {
	return d.call(ctx, VerbInstanceStop, driversdk.NameRequest{Name: name}, &driversdk.Empty{})
}

// StartInstance starts the named instance again.
func (d *Driver) StartInstance(ctx context.Context, name string) error {
	return d.call(ctx, VerbInstanceStart, driversdk.NameRequest{Name: name}, &driversdk.Empty{})
}

// SetInstanceAddresses replaces the addresses of the named instance.
func (d *Driver) SetInstanceAddresses(ctx context.Context, name string, addrs []Address) (*Instance, error) {
	req := driversdk.SetAddressesRequest{Name: name, Addresses: addrs}
	var resp struct {
		Instance *Instance `json:"instance"`
	}
	if err := d.call(ctx, VerbInstanceSetAddresses, req, &resp); err != nil {
		return nil, err
	}
	if resp.Instance == nil {
		return nil, d.violation(VerbInstanceSetAddresses, `answered without an "instance"`)
	}
	return resp.Instance, nil
}

// GetLoadBalancer returns the cloud's load balancer for a Service.
func (d *Driver) GetLoadBalancer(ctx context.Context, svc ServiceRef) (*LoadBalancer, error) {
	var resp struct {
		LoadBalancer *LoadBalancer `json:"loadBalancer"`
	}
	if err := d.call(ctx, VerbLoadBalancerGet, svc, &resp); err != nil {
		return nil, err
	}
	if resp.LoadBalancer == nil {
		return nil, d.violation(VerbLoadBalancerGet, `answered without a "loadBalancer"`)
	}
	return resp.LoadBalancer, nil
}

// ListLoadBalancers returns every load balancer the cloud has for the
// cluster.
func (d *Driver) ListLoadBalancers(ctx context.Context) ([]LoadBalancer, error) {
	var resp struct {
		LoadBalancers *[]LoadBalancer `json:"loadBalancers"`
	}
	if err := d.call(ctx, VerbLoadBalancersList, driversdk.Empty{}, &resp); err != nil {
		return nil, err
	}
	if resp.LoadBalancers == nil {
		return nil, d.violation(VerbLoadBalancersList, `answered without "loadBalancers"`)
	}
	return *resp.LoadBalancers, nil
}

// ListRoutes returns every cloud route.
func (d *Driver) ListRoutes(ctx context.Context) ([]Route, error) {
	var resp driversdk.RoutesResponse
	err := d.call(ctx, VerbRoutesList, driversdk.Empty{}, &resp)
	return resp.Routes, err
}

// CreateRoute makes a route out of band, as an operator would.
func (d *Driver) CreateRoute(ctx context.Context, nodeName, cidr string) (*Route, error) {
	req := driversdk.RouteCreateRequest{NodeName: nodeName, DestinationCIDR: cidr}
	var resp struct {
		Route *Route `json:"route"`
	}
	if err := d.call(ctx, VerbRouteCreate, req, &resp); err != nil {
		return nil, err
	}
	if resp.Route == nil {
		return nil, d.violation(VerbRouteCreate, `answered without a "route"`)
	}
	return resp.Route, nil
}

// InjectFault makes the cloud answer the CCM's calls on target with errors
// at errorRate (0 to 1) until ClearFaults.
func (d *Driver) InjectFault(ctx context.Context, target string, errorRate float64) error {
	req := driversdk.FaultInjectRequest{Target: target, ErrorRate: errorRate}
	return d.call(ctx, VerbFaultInject, req, &driversdk.Empty{})
}

// ClearFaults removes every injected fault.
func (d *Driver) ClearFaults(ctx context.Context) error {
	return d.call(ctx, VerbFaultClear, driversdk.Empty{}, &driversdk.Empty{})
}

// DeleteRoute deletes a route by its cloud name.
func (d *Driver) DeleteRoute(ctx context.Context, name string) error {
	return d.call(ctx, VerbRouteDelete, driversdk.NameRequest{Name: name}, &driversdk.Empty{})
}

// ListCalls returns the calls the cloud logged after sequence number after
// (0: from the start of its log), only those of the given operations when
// any are given, and the sequence number of the newest call it has logged,
// which a later ListCalls can pass as after. Calls the driver made itself
// are left out.
func (d *Driver) ListCalls(ctx context.Context, after int64, operations ...string) ([]Call, int64, error) {
	req := driversdk.CallsListRequest{After: after, Operations: operations}
	var resp driversdk.CallsResponse
	if err := d.call(ctx, VerbCallsList, req, &resp); err != nil {
		return nil, 0, err
	}
	return resp.Calls, resp.Last, nil
}

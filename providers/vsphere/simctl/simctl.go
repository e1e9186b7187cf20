// Package simctl is the control channel of the simulated vCenter
// (providers/vsphere/cloud): its wire types and a client. It carries only
// what no vCenter lets a client do, and so what the cloud driver cannot do
// over the vSphere API:
//
//   - set a virtual machine's guest information (host name and the IP
//     addresses each NIC reports), which on a real vCenter only VMware Tools
//     inside the guest reports;
//   - make the SearchIndex lookups the CCM makes fail at a rate, without
//     touching anyone else's calls;
//   - read the log of the SOAP calls the simulator served, with who made
//     each one.
//
// The channel is HTTP with JSON bodies on a unix socket in the run's
// directory. This package imports neither govmomi nor the simulator, so the
// cloud driver stays small.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package simctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Paths of the control channel.
const (
	// PathGuest + VM name: PUT a Guest.
	PathGuest = "/v1/guest/"
	// PathFaults + target: PUT a Fault; DELETE PathFaults clears every fault.
	PathFaults = "/v1/faults/"
	// PathCalls: GET, with the query parameter after.
	PathCalls = "/v1/calls"
)

// DriverUserAgent is the User-Agent of every SOAP request the cloud driver
// makes. The simulated vCenter logs those calls but does not print them,
// and the driver leaves them out of the calls it lists.
const DriverUserAgent = "ccm-conformance-vsphere-driver"

// TargetInstances is the only fault target: the SearchIndex methods with
// which the vSphere CCM finds a node's virtual machine (FindByUuid,
// FindAllByDnsName, FindByIp and their siblings).
const TargetInstances = "instances"

// Guest is a virtual machine's guest information as VMware Tools reports
// it: guest.hostName, and guest.net[].ipAddress per NIC.
type Guest struct {
	HostName string `json:"hostName"`
	// Networks maps the name of a network to the IP addresses, in order,
	// that the VM's NIC on that network reports. NICs on networks left out
	// report none. Naming a network the VM has no NIC on is an error.
	Networks map[string][]string `json:"networks"`
}

// Fault makes the target's methods fail at ErrorRate (0 to 1) for every
// caller; 0 removes the target's fault.
type Fault struct {
	ErrorRate float64 `json:"errorRate"`
}

// Call is one SOAP request the simulator served.
type Call struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	// Method is the SOAP method, such as FindByUuid or RetrievePropertiesEx.
	Method string `json:"method"`
	// Caller tells client processes apart: the User-Agent, the user and
	// a digest of the session cookie of a logged-in session, or the
	// User-Agent and the TCP peer before a login.
	Caller string `json:"caller"`
	// UserAgent is the request's User-Agent header.
	UserAgent string `json:"userAgent"`
	// Resource names the virtual machine the call was about, where that is
	// known: the VM the managed object reference, UUID, DNS name or IP
	// address of the request belongs to. A DNS name that no VM has is given
	// as it is, since the CCM looks nodes up by their names.
	Resource string `json:"resource,omitempty"`
	// Error is the SOAP fault string; empty on success.
	Error string `json:"error,omitempty"`
}

// Calls is the answer of PathCalls.
type Calls struct {
	Calls []Call `json:"calls"`
	// Last is the sequence number of the newest call in the log, or the
	// request's after when the log has none.
	Last int64 `json:"last"`
}

// errorBody is the body of every failed request.
type errorBody struct {
	Error string `json:"error"`
}

// ErrNotFound is wrapped by errors of requests that named something the
// simulator does not have (a VM).
var ErrNotFound = errors.New("not found")

// Client talks to the control channel on a unix socket.
type Client struct {
	http *http.Client
}

// NewClient returns a client of the control socket at path.
func NewClient(path string) *Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		},
	}
	return &Client{http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
}

// SetGuest replaces the guest information of the VM named name.
func (c *Client) SetGuest(ctx context.Context, name string, g Guest) error {
	return c.do(ctx, http.MethodPut, PathGuest+url.PathEscape(name), g, nil)
}

// SetFault sets the fault of a target.
func (c *Client) SetFault(ctx context.Context, target string, f Fault) error {
	return c.do(ctx, http.MethodPut, PathFaults+url.PathEscape(target), f, nil)
}

// ClearFaults removes every fault.
func (c *Client) ClearFaults(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, PathFaults, nil, nil)
}

// Calls returns the calls logged after sequence number after.
func (c *Client) Calls(ctx context.Context, after int64) (*Calls, error) {
	var out Calls
	if err := c.do(ctx, http.MethodGet, PathCalls+"?after="+strconv.FormatInt(after, 10), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://vsphere-cloud"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("control channel %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("control channel %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		msg := string(data)
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		err := fmt.Errorf("control channel %s %s: %s: %s", method, path, resp.Status, msg)
		if resp.StatusCode == http.StatusNotFound {
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("control channel %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// WriteError answers a control request with status and a JSON error body.
func WriteError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: err.Error()})
}

// WriteJSON answers a control request with 200 and v.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

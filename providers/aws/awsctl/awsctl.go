// Package awsctl is the AWS emulator's control channel: JSON over HTTP on
// a unix socket in the run's directory, for what no AWS API offers to a
// test (an instance with the node's name as its private DNS name, an
// instance's addresses, faults in the CCM's calls, the log of its calls).
// The emulator (package cloud) serves it; the cloud driver is its client.
//
// Floor: a provider. It links nothing of this repository outside
// providers/.
package awsctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// DriverAccessKeyID is the access key ID of the cloud driver's own AWS
// calls; the call log leaves them out.
const DriverAccessKeyID = "AKIACCMCDRIVER000000"

// Paths of the control channel.
const (
	PathInstances = "/instances" // POST CreateInstance → Instance
	PathInstance  = "/instance"  // POST InstanceAction → Instance
	PathFaults    = "/faults"    // POST Fault, DELETE: clear
	PathCalls     = "/calls"     // POST CallsQuery → Calls
)

// CreateInstance asks for a running instance whose private DNS name, and
// so its node's name, is Name.
type CreateInstance struct {
	Name         string   `json:"name"`
	Zone         string   `json:"zone,omitempty"`
	InstanceType string   `json:"instanceType,omitempty"`
	IPFamilies   []string `json:"ipFamilies,omitempty"`
}

// InstanceAction acts on the instance whose private DNS name is Name:
// Action is terminate, stop, start or set-addresses (with Addresses).
type InstanceAction struct {
	Name      string    `json:"name"`
	Action    string    `json:"action"`
	Addresses []Address `json:"addresses,omitempty"`
}

// Address is a Kubernetes node address as the driver protocol has it.
type Address struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// Instance is the emulator's answer to an instance request.
type Instance struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Fault makes the emulator answer the CCM's calls on Target (instances,
// loadbalancers, routes) with errors at ErrorRate (0 to 1).
type Fault struct {
	Target    string  `json:"target"`
	ErrorRate float64 `json:"errorRate"`
}

// CallsQuery asks for the calls after sequence number After whose
// operation is one of Operations (all when empty).
type CallsQuery struct {
	After      int64    `json:"after"`
	Operations []string `json:"operations,omitempty"`
}

// Call is one logged API call, as the driver protocol's Call.
type Call struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	Operation string    `json:"operation"`
	Action    string    `json:"action"`
	Caller    string    `json:"caller"`
	Resource  string    `json:"resource,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// Calls answers a CallsQuery.
type Calls struct {
	Calls []Call `json:"calls"`
	Last  int64  `json:"last"`
}

// NotFoundStatus is the status of an answer about an instance that does
// not exist.
const NotFoundStatus = http.StatusNotFound

// Client talks to the control socket.
type Client struct {
	http *http.Client
}

// NewClient is a client of the socket at path.
func NewClient(path string) *Client {
	return &Client{http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}}
}

// StatusError is a non-2xx answer of the control channel.
type StatusError struct {
	Status  int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("emulator control: %d: %s", e.Status, e.Message)
}

// Do sends in as JSON to path with method and decodes the answer into out
// (nil: ignored).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://emulator"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("emulator control %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &StatusError{Status: resp.StatusCode, Message: string(bytes.TrimSpace(data))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("emulator control %s %s: %w: %q", method, path, err, data)
	}
	return nil
}

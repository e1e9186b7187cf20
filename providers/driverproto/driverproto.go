// Package driverproto is what the cloud drivers under providers/ share of
// the cloud driver protocol v1 (docs/cloud-driver.md): its objects, its
// exit codes, and the shape of one call (Main).
//
// The driver SDK (driversdk) holds the same for drivers in providers' own
// repositories. The drivers here link nothing of this repository outside
// providers/, as a provider's own would not, so they share this copy
// instead; validate-driver checks their answers against the SDK's schema,
// and TestObjectsNameTheSchemaFields checks these objects against it.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package driverproto

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Version is the protocol the drivers speak.
const Version = "v1"

// Exit codes of a driver process.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitNotFound = 3 // the object named in the request does not exist
)

// ErrNotFound marks the errors for which Main exits with ExitNotFound.
var ErrNotFound = errors.New("not found")

// Info is the answer to the info verb.
type Info struct {
	ProtocolVersion string   `json:"protocolVersion"`
	Provider        string   `json:"provider"`
	Verbs           []string `json:"verbs"`
}

// Address is a node address: a Kubernetes NodeAddressType and a value.
type Address struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// Instance is the protocol's Instance object.
type Instance struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	ProviderID   string    `json:"providerID"`
	Zone         string    `json:"zone"`
	Region       string    `json:"region"`
	InstanceType string    `json:"instanceType"`
	State        string    `json:"state"`
	Addresses    []Address `json:"addresses"`
}

// Ingress is one address a load balancer serves on.
type Ingress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// Port is one listener of a load balancer.
type Port struct {
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	NodePort int32  `json:"nodePort"`
}

// LoadBalancer is the protocol's LoadBalancer object.
type LoadBalancer struct {
	Exists              bool      `json:"exists"`
	Name                string    `json:"name"`
	Ingress             []Ingress `json:"ingress"`
	Ports               []Port    `json:"ports"`
	Backends            []string  `json:"backends"`
	SourceRanges        []string  `json:"sourceRanges"`
	HealthCheckNodePort int32     `json:"healthCheckNodePort"`
	// ServiceNamespace and ServiceName are set by loadbalancers list: the
	// Service the cloud recorded the load balancer for.
	ServiceNamespace string `json:"serviceNamespace,omitempty"`
	ServiceName      string `json:"serviceName,omitempty"`
}

// Route is the protocol's Route object.
type Route struct {
	Name            string `json:"name"`
	NodeName        string `json:"nodeName"`
	DestinationCIDR string `json:"destinationCIDR"`
}

// Call is the protocol's Call object.
type Call struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	Operation string    `json:"operation"`
	Caller    string    `json:"caller"`
	Resource  string    `json:"resource,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// Verb answers one request of a verb.
type Verb func(request []byte) (any, error)

// The protocol's requests that more than one driver here reads.

// NameRequest names an instance (instance get, delete, stop, start).
type NameRequest struct {
	Name string `json:"name"`
}

// CreateInstanceRequest is the request of instance create.
type CreateInstanceRequest struct {
	Name         string   `json:"name"`
	Zone         string   `json:"zone"`
	InstanceType string   `json:"instanceType"`
	IPFamilies   []string `json:"ipFamilies"`
}

// SetAddressesRequest is the request of instance set-addresses.
type SetAddressesRequest struct {
	Name      string    `json:"name"`
	Addresses []Address `json:"addresses"`
}

// FaultRequest is the request of fault inject.
type FaultRequest struct {
	Target    string  `json:"target"`
	ErrorRate float64 `json:"errorRate"`
}

// CallsRequest is the request of calls list.
type CallsRequest struct {
	After      int64    `json:"after"`
	Operations []string `json:"operations"`
}

// Main runs one driver call: args are the verb's words, lookup finds the
// verb (an unknown one is an error before stdin is read), stdin holds the
// request (empty means {}). The answer goes to stdout as one line of JSON;
// an error goes to stderr as one line prefixed with the driver's name and
// the verb. It returns the process's exit code.
func Main(name string, args []string, stdin io.Reader, stdout, stderr io.Writer, lookup func(verb string) (Verb, error)) int {
	verb := strings.Join(args, " ")
	resp, err := call(verb, stdin, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", name, verb, err)
		if errors.Is(err, ErrNotFound) {
			return ExitNotFound
		}
		return ExitFailure
	}
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		fmt.Fprintf(stderr, "%s %s: writing the response: %v\n", name, verb, err)
		return ExitFailure
	}
	return ExitOK
}

func call(verb string, stdin io.Reader, lookup func(verb string) (Verb, error)) (any, error) {
	handle, err := lookup(verb)
	if err != nil {
		return nil, err
	}
	request, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	if strings.TrimSpace(string(request)) == "" {
		request = []byte("{}")
	}
	return handle(request)
}

// Decode reads a request; unknown fields are ignored, as the protocol asks.
func Decode[T any](request []byte) (T, error) {
	var v T
	if err := json.Unmarshal(request, &v); err != nil {
		return v, fmt.Errorf("decoding the request: %w", err)
	}
	return v, nil
}

// Package driver implements the reference provider's side of the cloud
// driver protocol v1 (docs/cloud-driver.md): one verb per process, request
// JSON on stdin, response JSON on stdout, over the simulated cloud's API.
//
// It is an example for provider authors as much as a tool for the harness:
// a driver only translates between the protocol's objects and its cloud's.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included;
// testsupport/floors holds that.
package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// Environment variables the driver reads.
const (
	// EndpointEnv gives the cloud API endpoint (required), as for the CCM.
	EndpointEnv = "REFERENCE_CLOUD_ENDPOINT"
	// CallerEnv names the caller in the cloud's call log; default
	// "cloud-driver".
	CallerEnv = "REFERENCE_CLOUD_CALLER"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitNotFound = 3 // the object named in the request does not exist
)

// ProtocolVersion is the protocol this driver speaks.
const ProtocolVersion = "v1"

// errNotFound marks errors for which the driver exits with ExitNotFound.
var errNotFound = errors.New("not found")

// Main runs one driver call: args are the verb words, stdin holds the
// request. It returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	resp, err := run(ctx, args, stdin, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "reference-cloud-driver %s: %v\n", strings.Join(args, " "), err)
		if errors.Is(err, errNotFound) {
			return ExitNotFound
		}
		return ExitFailure
	}
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		fmt.Fprintf(stderr, "reference-cloud-driver %s: writing the response: %v\n", strings.Join(args, " "), err)
		return ExitFailure
	}
	return ExitOK
}

func run(ctx context.Context, args []string, stdin io.Reader, getenv func(string) string) (any, error) {
	verb := strings.Join(args, " ")
	handler, ok := verbTable()[verb]
	if !ok {
		return nil, fmt.Errorf("unknown verb %q (known: %s)", verb, strings.Join(verbNames(), ", "))
	}
	request, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	if strings.TrimSpace(string(request)) == "" {
		request = []byte("{}")
	}

	d := &driver{}
	if verb != "info" { // info needs no cloud
		endpoint := getenv(EndpointEnv)
		if endpoint == "" {
			return nil, fmt.Errorf("$%s is not set", EndpointEnv)
		}
		caller := getenv(CallerEnv)
		if caller == "" {
			caller = "cloud-driver"
		}
		client, err := cloudapi.NewClient(endpoint, caller)
		if err != nil {
			return nil, err
		}
		d.client, d.caller = client, caller
	}
	return handler(d, ctx, request)
}

// driver holds the cloud API client for one call.
type driver struct {
	client *cloudapi.Client
	caller string // our own X-Reference-Caller
}

type verbFunc func(d *driver, ctx context.Context, request []byte) (any, error)

// verbNames lists every verb, in the order info reports them.
func verbNames() []string {
	return []string{
		"info",
		"instances list", "instance get", "instance create", "instance delete",
		"instance stop", "instance start", "instance set-addresses",
		"loadbalancer get", "loadbalancers list",
		"routes list", "route create", "route delete",
		"fault inject", "fault clear",
		"calls list",
	}
}

// verbTable maps each verb to its implementation.
func verbTable() map[string]verbFunc {
	return map[string]verbFunc{
		"info":                   (*driver).info,
		"instances list":         (*driver).listInstances,
		"instance get":           (*driver).getInstance,
		"instance create":        (*driver).createInstance,
		"instance delete":        (*driver).deleteInstance,
		"instance stop":          (*driver).stopInstance,
		"instance start":         (*driver).startInstance,
		"instance set-addresses": (*driver).setAddresses,
		"loadbalancer get":       (*driver).getLoadBalancer,
		"loadbalancers list":     (*driver).listLoadBalancers,
		"routes list":            (*driver).listRoutes,
		"route create":           (*driver).createRoute,
		"route delete":           (*driver).deleteRoute,
		"fault inject":           (*driver).injectFault,
		"fault clear":            (*driver).clearFaults,
		"calls list":             (*driver).listCalls,
	}
}

// decode reads a request; unknown fields are ignored, as the protocol asks.
func decode[T any](request []byte) (T, error) {
	var v T
	if err := json.Unmarshal(request, &v); err != nil {
		return v, fmt.Errorf("decoding the request: %w", err)
	}
	return v, nil
}

// cloudErr wraps a cloud API error, marking a 404 as errNotFound.
func cloudErr(what string, err error) error {
	if cloudapi.IsNotFound(err) {
		return fmt.Errorf("%s: %w: %w", what, errNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

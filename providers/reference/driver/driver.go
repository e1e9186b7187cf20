// Package driver implements the reference provider's side of the cloud
// driver protocol v1 (docs/cloud-driver.md): one verb per process, request
// JSON on stdin, response JSON on stdout, over the simulated cloud's API.
//
// It is an example for provider authors as much as a tool for the harness:
// a driver only translates between the protocol's objects and its cloud's.
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
	"strings"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
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

// Main runs one driver call: args are the verb words, stdin holds the
// request. It returns the process exit code (driverproto.Main).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return driverproto.Main("reference-cloud-driver", args, stdin, stdout, stderr, func(verb string) (driverproto.Verb, error) {
		handler, ok := verbTable()[verb]
		if !ok {
			return nil, fmt.Errorf("unknown verb %q (known: %s)", verb, strings.Join(verbNames(), ", "))
		}
		return func(request []byte) (any, error) { return run(ctx, verb, handler, request, getenv) }, nil
	})
}

func run(ctx context.Context, verb string, handler verbFunc, request []byte, getenv func(string) string) (any, error) {
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

// cloudErr wraps a cloud API error, marking a 404 as driverproto.ErrNotFound.
func cloudErr(what string, err error) error {
	if cloudapi.IsNotFound(err) {
		return fmt.Errorf("%s: %w: %w", what, driverproto.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Package driver implements the reference provider's side of the cloud
// driver protocol v1 (docs/cloud-driver.md): one verb per process, request
// JSON on stdin, response JSON on stdout, over the simulated cloud's API.
//
// It is an example for provider authors as much as a tool for the harness:
// a driver only translates between the protocol's objects and its cloud's.
//
// Floor: a provider. It links the driver SDK and nothing else of this
// repository, as a provider's own repository would; providers/floor_test.go
// holds that.
package driver

import (
	"context"
	"fmt"
	"io"

	"github.com/ccm-conformance/ccm-conformance/driversdk"
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
// request. It returns the process exit code (driversdk.Driver.Main: 3 when
// the object named does not exist).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	d := &driver{}
	sdk := &driversdk.Driver{
		Provider: "reference",
		Handle:   map[driversdk.Verb]driversdk.HandlerFunc{},
		// Every verb but info needs the cloud.
		Setup: func(context.Context) error { return d.connect(getenv) },
	}
	for _, v := range verbTable() {
		sdk.Verbs = append(sdk.Verbs, v.verb)
		sdk.Handle[v.verb] = func(ctx context.Context, request []byte) (any, error) { return v.serve(d, ctx, request) }
	}
	return sdk.Main(ctx, args, stdin, stdout, stderr)
}

// connect makes the client of the cloud API the environment names.
func (d *driver) connect(getenv func(string) string) error {
	endpoint := getenv(EndpointEnv)
	if endpoint == "" {
		return fmt.Errorf("$%s is not set", EndpointEnv)
	}
	caller := getenv(CallerEnv)
	if caller == "" {
		caller = "cloud-driver"
	}
	client, err := cloudapi.NewClient(endpoint, caller)
	if err != nil {
		return err
	}
	d.client, d.caller = client, caller
	return nil
}

// driver holds the cloud API client for one call.
type driver struct {
	client *cloudapi.Client
	caller string // our own X-Reference-Caller
}

type verbFunc func(d *driver, ctx context.Context, request []byte) (any, error)

// verbTable lists every verb but info (which the SDK answers), in the
// order info reports them, with its implementation.
func verbTable() []struct {
	verb  driversdk.Verb
	serve verbFunc
} {
	return []struct {
		verb  driversdk.Verb
		serve verbFunc
	}{
		{driversdk.VerbInstancesList, (*driver).listInstances},
		{driversdk.VerbInstanceGet, (*driver).getInstance},
		{driversdk.VerbInstanceCreate, (*driver).createInstance},
		{driversdk.VerbInstanceDelete, (*driver).deleteInstance},
		{driversdk.VerbInstanceStop, (*driver).stopInstance},
		{driversdk.VerbInstanceStart, (*driver).startInstance},
		{driversdk.VerbInstanceSetAddresses, (*driver).setAddresses},
		{driversdk.VerbLoadBalancerGet, (*driver).getLoadBalancer},
		{driversdk.VerbLoadBalancersList, (*driver).listLoadBalancers},
		{driversdk.VerbRoutesList, (*driver).listRoutes},
		{driversdk.VerbRouteCreate, (*driver).createRoute},
		{driversdk.VerbRouteDelete, (*driver).deleteRoute},
		{driversdk.VerbFaultInject, (*driver).injectFault},
		{driversdk.VerbFaultClear, (*driver).clearFaults},
		{driversdk.VerbCallsList, (*driver).listCalls},
	}
}

// cloudErr wraps a cloud API error, marking a 404 as driversdk.ErrNotFound.
func cloudErr(what string, err error) error {
	if cloudapi.IsNotFound(err) {
		return fmt.Errorf("%s: %w: %w", what, driversdk.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

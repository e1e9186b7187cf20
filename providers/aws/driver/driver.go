// Package driver is the AWS provider's side of the cloud driver protocol
// v1 (docs/cloud-driver.md): one verb per process, request JSON on stdin,
// response JSON on stdout.
//
// It reads the cloud through the AWS APIs, with aws-sdk-go-v2, as a
// driver for real AWS would: instances by DescribeInstances, load
// balancers by DescribeLoadBalancers and their security groups' ingress
// rules (Network Load Balancers by their listeners, target groups and the
// nodes' rules for them: nlb.go), routes by DescribeRouteTables, and makes and deletes routes with
// CreateRoute and DeleteRoute. It reports each Instance field as the CCM
// derives it from the same instance (mapping.go). What the APIs cannot do
// for a test (an instance named like a node; its addresses; faults; the
// call log) goes through the emulator's control channel (package awsctl),
// offered only when $AWS_CONTROL_SOCKET names it.
//
// It reads the CCM's own cloud config ($AWS_CLOUD_CONFIG) for the region,
// the VPC, the cluster ID and the endpoints. Against the emulator it signs
// with its own access key (awsctl.DriverAccessKeyID), which the call log
// and the faults leave out; without a control socket it takes the SDK's
// default credentials. It never imports the harness.
//
// Floor: a provider. It links nothing of this repository outside
// providers/.
package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

// Environment variables the driver reads.
const (
	// ConfigEnv names the CCM's INI cloud config (required for every verb
	// but info).
	ConfigEnv = "AWS_CLOUD_CONFIG"
	// ControlEnv names the emulator's control socket; without it the
	// verbs that need it are not offered.
	ControlEnv = "AWS_CONTROL_SOCKET"
)

type verb struct {
	fn func(d *driver, ctx context.Context, request []byte) (any, error)
	// control marks the verbs that need the emulator's control channel.
	control bool
}

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

func verbTable() map[string]verb {
	return map[string]verb{
		"info":                   {fn: (*driver).info},
		"instances list":         {fn: (*driver).listInstances},
		"instance get":           {fn: (*driver).getInstance},
		"instance create":        {fn: (*driver).createInstance, control: true},
		"instance delete":        {fn: (*driver).deleteInstance, control: true},
		"instance stop":          {fn: (*driver).stopInstance, control: true},
		"instance start":         {fn: (*driver).startInstance, control: true},
		"instance set-addresses": {fn: (*driver).setAddresses, control: true},
		"loadbalancer get":       {fn: (*driver).getLoadBalancer},
		"loadbalancers list":     {fn: (*driver).listLoadBalancers},
		"routes list":            {fn: (*driver).listRoutes},
		"route create":           {fn: (*driver).createRoute},
		"route delete":           {fn: (*driver).deleteRoute},
		"fault inject":           {fn: (*driver).injectFault, control: true},
		"fault clear":            {fn: (*driver).clearFaults, control: true},
		"calls list":             {fn: (*driver).listCalls, control: true},
	}
}

func offered(getenv func(string) string) []string {
	table := verbTable()
	var out []string
	for _, name := range verbNames() {
		if !table[name].control || getenv(ControlEnv) != "" {
			out = append(out, name)
		}
	}
	return out
}

// Main runs one driver call: args are the verb words, stdin holds the
// request. It returns the process exit code (driverproto.Main).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return driverproto.Main("aws-cloud-driver", args, stdin, stdout, stderr, func(name string) (driverproto.Verb, error) {
		v, ok := verbTable()[name]
		if !ok || !slices.Contains(offered(getenv), name) {
			return nil, fmt.Errorf("unknown verb %q (known: %s)", name, strings.Join(offered(getenv), ", "))
		}
		return func(request []byte) (any, error) { return run(ctx, name, v, request, getenv) }, nil
	})
}

// driver holds what one call needs.
type driver struct {
	cfg     *config
	ec2     *ec2.Client
	elb     *elb.Client
	elbv2   *elbv2.Client
	control *awsctl.Client // nil without $AWS_CONTROL_SOCKET
}

func run(ctx context.Context, name string, v verb, request []byte, getenv func(string) string) (any, error) {
	d := &driver{}
	if sock := getenv(ControlEnv); sock != "" {
		d.control = awsctl.NewClient(sock)
	}
	if name == "info" {
		return v.fn(d, ctx, request)
	}
	path := getenv(ConfigEnv)
	if path == "" {
		return nil, fmt.Errorf("$%s is not set: it names the CCM's cloud config", ConfigEnv)
	}
	var err error
	if d.cfg, err = readConfig(path); err != nil {
		return nil, fmt.Errorf("reading the cloud config: %w", err)
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(d.cfg.region())}
	if d.control != nil {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(awsctl.DriverAccessKeyID, "ccm-conformance", "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS SDK's configuration: %w", err)
	}
	d.ec2 = ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
		if u := d.cfg.endpoints[ec2.ServiceID]; u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	})
	d.elb = elb.NewFromConfig(awsCfg, func(o *elb.Options) {
		if u := d.cfg.endpoints[elb.ServiceID]; u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	})
	d.elbv2 = elbv2.NewFromConfig(awsCfg, func(o *elbv2.Options) {
		if u := d.cfg.endpoints[elbv2.ServiceID]; u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	})
	return v.fn(d, ctx, request)
}

func (d *driver) info(context.Context, []byte) (any, error) {
	return driverproto.Info{ProtocolVersion: "v1", Provider: "aws", Verbs: offered(func(k string) string {
		if k == ControlEnv && d.control != nil {
			return "set"
		}
		return ""
	})}, nil
}

// notFound marks an error for exit code 3.
func notFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", driverproto.ErrNotFound, fmt.Sprintf(format, args...))
}

// controlErr turns the control channel's "no such instance" into exit 3.
func controlErr(err error) error {
	var se *awsctl.StatusError
	if errors.As(err, &se) && se.Status == awsctl.NotFoundStatus {
		return fmt.Errorf("%w: %s", driverproto.ErrNotFound, se.Message)
	}
	return err
}

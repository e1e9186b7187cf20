package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloudapi"
)

// TestBinary builds reference-cloud-driver and runs every verb against a
// simulated cloud on a unix socket, as the harness would.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the driver: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "reference-cloud-driver")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	endpoint := "unix://" + filepath.Join(dir, "cloud.sock")
	l, err := cloudapi.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	logTime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := &http.Server{Handler: cloudapi.NewServer(cloudapi.Options{DisableDataPath: true, Now: func() time.Time { return logTime }}).Handler()}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	admin, err := cloudapi.NewClient(endpoint, "test")
	if err != nil {
		t.Fatal(err)
	}

	const uid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	n1 := `{"id":"i-0001","name":"n1","providerID":"reference://zone-a/i-0001","zone":"zone-a","region":"region-1","instanceType":"ref.small","state":"%s","addresses":[{"type":"InternalIP","address":"127.64.0.1"},{"type":"InternalIP","address":"fd00:64::1"},{"type":"ExternalIP","address":"203.0.113.1"},{"type":"ExternalIP","address":"2001:db8::1"},{"type":"Hostname","address":"n1"}]}`
	running := strings.Replace(n1, "%s", "running", 1)
	stopped := strings.Replace(n1, "%s", "stopped", 1)
	readdressed := `{"id":"i-0001","name":"n1","providerID":"reference://zone-a/i-0001","zone":"zone-a","region":"region-1","instanceType":"ref.small","state":"running","addresses":[{"type":"ExternalIP","address":"203.0.113.9"}]}`

	steps := []struct {
		name     string
		verb     string
		request  string
		env      []string // replaces the endpoint when set
		before   func() error
		after    func() error // checks the cloud after a successful call
		wantExit int
		want     string // JSON; compared as values
		wantErr  string // in stderr
	}{
		{name: "info", verb: "info", request: `{}`,
			want: `{"protocolVersion":"v1","provider":"reference","verbs":["info","instances list","instance get","instance create","instance delete","instance stop","instance start","instance set-addresses","loadbalancer get","loadbalancers list","routes list","route create","route delete","fault inject","fault clear","calls list"]}`},
		{name: "get before create", verb: "instance get", request: `{"name":"n1"}`, wantExit: 3, wantErr: "not found"},
		{name: "create", verb: "instance create", request: `{"name":"n1","zone":"","instanceType":"","ipFamilies":["IPv4","IPv6"],"futureField":1}`,
			want: `{"instance":` + running + `}`},
		{name: "create again", verb: "instance create", request: `{"name":"n1"}`, wantExit: 1, wantErr: "already exists"},
		{name: "get", verb: "instance get", request: `{"name":"n1"}`, want: `{"instance":` + running + `}`},
		{name: "list", verb: "instances list", request: ``, want: `{"instances":[` + running + `]}`},
		{name: "stop", verb: "instance stop", request: `{"name":"n1"}`, want: `{}`},
		{name: "get stopped", verb: "instance get", request: `{"name":"n1"}`, want: `{"instance":` + stopped + `}`},
		{name: "start", verb: "instance start", request: `{"name":"n1"}`, want: `{}`},
		{name: "set addresses", verb: "instance set-addresses", request: `{"name":"n1","addresses":[{"type":"ExternalIP","address":"203.0.113.9"}]}`,
			want: `{"instance":` + readdressed + `}`},
		{name: "no load balancer", verb: "loadbalancer get", request: `{"namespace":"ns","name":"web","uid":"` + uid + `"}`,
			want: `{"loadBalancer":{"exists":false,"name":"","ingress":[],"ports":[],"backends":[],"sourceRanges":[],"healthCheckNodePort":0}}`},
		{name: "load balancer", verb: "loadbalancer get", request: `{"namespace":"ns","name":"web","uid":"` + uid + `"}`,
			before: func() error {
				_, err := admin.EnsureLoadBalancer(t.Context(), "a1b4e28ba2fa111d2883f0016d3cca42", cloudapi.LoadBalancerSpec{
					ServiceNamespace: "ns", ServiceName: "web",
					Ports: []cloudapi.Port{{Protocol: "TCP", Port: 80, NodePort: 30080}}, Backends: []string{"n1"},
					SourceRanges: []string{"10.0.0.0/8"}, HealthCheckNodePort: 32000,
				})
				return err
			},
			want: `{"loadBalancer":{"exists":true,"name":"a1b4e28ba2fa111d2883f0016d3cca42","ingress":[{"ip":"127.65.0.1"}],"ports":[{"protocol":"TCP","port":80,"nodePort":30080}],"backends":["n1"],"sourceRanges":["10.0.0.0/8"],"healthCheckNodePort":32000}}`},
		// The admin client calls as "test", the driver as "cloud-driver":
		// only the first shows in the call log the driver prints.
		{name: "calls of one operation", verb: "calls list", request: `{"operations":["EnsureLoadBalancer"]}`,
			want: `{"calls":[{"seq":15,"time":"2026-01-02T03:04:05Z","operation":"EnsureLoadBalancer","caller":"test","resource":"a1b4e28ba2fa111d2883f0016d3cca42"}],"last":16}`},
		{name: "no calls after the last", verb: "calls list", request: `{"after":16}`, want: `{"calls":[],"last":16}`},
		{name: "negative after", verb: "calls list", request: `{"after":-1}`, wantExit: 1, wantErr: "after -1"},
		{name: "every load balancer, with its Service", verb: "loadbalancers list", request: `{}`,
			want: `{"loadBalancers":[{"exists":true,"name":"a1b4e28ba2fa111d2883f0016d3cca42","ingress":[{"ip":"127.65.0.1"}],"ports":[{"protocol":"TCP","port":80,"nodePort":30080}],"backends":["n1"],"sourceRanges":["10.0.0.0/8"],"healthCheckNodePort":32000,"serviceNamespace":"ns","serviceName":"web"}]}`},
		{name: "load balancer without uid", verb: "loadbalancer get", request: `{"namespace":"ns","name":"web"}`, wantExit: 1, wantErr: "uid"},
		// A load balancer named otherwise is found by the Service its
		// record names, as a real cloud's tags find one.
		{name: "load balancer named otherwise", verb: "loadbalancer get", request: `{"namespace":"ns2","name":"api","uid":"` + strings.Replace(uid, "1b4e", "2c5f", 1) + `"}`,
			before: func() error {
				_, err := admin.EnsureLoadBalancer(t.Context(), "api", cloudapi.LoadBalancerSpec{ServiceNamespace: "ns2", ServiceName: "api"})
				return err
			},
			want: `{"loadBalancer":{"exists":true,"name":"api","ingress":[{"ip":"127.65.0.2"}],"ports":[],"backends":[],"sourceRanges":[],"healthCheckNodePort":0}}`},
		{name: "no load balancer made for the Service", verb: "loadbalancer get", request: `{"namespace":"ns3","name":"api","uid":"` + strings.Replace(uid, "1b4e", "3d6a", 1) + `"}`,
			want: `{"loadBalancer":{"exists":false,"name":"","ingress":[],"ports":[],"backends":[],"sourceRanges":[],"healthCheckNodePort":0}}`},
		{name: "no routes", verb: "routes list", request: `{}`, want: `{"routes":[]}`},
		{name: "create route", verb: "route create", request: `{"nodeName":"n1","destinationCIDR":"10.244.9.0/24"}`,
			want: `{"route":{"name":"r-0001","nodeName":"n1","destinationCIDR":"10.244.9.0/24"}}`},
		{name: "routes", verb: "routes list", request: `{}`, want: `{"routes":[{"name":"r-0001","nodeName":"n1","destinationCIDR":"10.244.9.0/24"}]}`},
		{name: "bad route", verb: "route create", request: `{"nodeName":"n1","destinationCIDR":"x"}`, wantExit: 1, wantErr: "destinationCIDR"},
		{name: "delete route", verb: "route delete", request: `{"name":"r-0001"}`, want: `{}`},
		{name: "delete route again", verb: "route delete", request: `{"name":"r-0001"}`, wantExit: 3, wantErr: "not found"},
		{name: "inject a fault", verb: "fault inject", request: `{"target":"instances","errorRate":1.0}`, want: `{}`,
			after: func() error {
				if _, err := admin.InstanceByName(t.Context(), "n1"); err == nil || !strings.Contains(err.Error(), "injected fault") {
					return fmt.Errorf("a CCM lookup during the fault: got %v, want an injected fault", err)
				}
				return nil
			}},
		{name: "the driver is exempt from its faults", verb: "instance get", request: `{"name":"n1"}`, want: `{"instance":` + readdressed + `}`},
		{name: "unknown fault target", verb: "fault inject", request: `{"target":"disks","errorRate":1}`, wantExit: 1, wantErr: "unknown fault target"},
		{name: "clear faults", verb: "fault clear", request: `{}`, want: `{}`,
			after: func() error {
				_, err := admin.InstanceByName(t.Context(), "n1")
				return err
			}},
		{name: "delete", verb: "instance delete", request: `{"name":"n1"}`, want: `{}`},
		{name: "delete again", verb: "instance delete", request: `{"name":"n1"}`, wantExit: 3, wantErr: "not found"},
		{name: "stop missing", verb: "instance stop", request: `{"name":"n1"}`, wantExit: 3, wantErr: "not found"},
		{name: "unknown verb", verb: "instance reboot", request: `{}`, wantExit: 1, wantErr: "unknown verb"},
		{name: "bad request", verb: "instance get", request: `{"name":`, wantExit: 1, wantErr: "decoding the request"},
		{name: "no endpoint", verb: "instances list", request: `{}`, env: []string{"REFERENCE_CLOUD_ENDPOINT="}, wantExit: 1, wantErr: "REFERENCE_CLOUD_ENDPOINT"},
		{name: "cloud down", verb: "instances list", request: `{}`, env: []string{"REFERENCE_CLOUD_ENDPOINT=unix://" + filepath.Join(dir, "none.sock")}, wantExit: 1, wantErr: "none.sock"},
	}
	for _, step := range steps {
		if step.before != nil {
			if err := step.before(); err != nil {
				t.Fatalf("%s: setting up: %v", step.name, err)
			}
		}
		cmd := exec.Command(bin, strings.Fields(step.verb)...)
		cmd.Env = []string{"REFERENCE_CLOUD_ENDPOINT=" + endpoint}
		if step.env != nil {
			cmd.Env = step.env
		}
		cmd.Stdin = strings.NewReader(step.request)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		exit := 0
		if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
			exit = exitErr.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: running the driver: %v", step.name, err)
		}

		if exit != step.wantExit {
			t.Errorf("%s: %s exited %d, want %d; stderr: %s", step.name, step.verb, exit, step.wantExit, stderr.String())
			continue
		}
		if step.wantExit != 0 {
			if !strings.Contains(stderr.String(), step.wantErr) {
				t.Errorf("%s: stderr %q does not mention %q", step.name, stderr.String(), step.wantErr)
			}
			continue
		}
		if lines := strings.Count(stdout.String(), "\n"); lines != 1 {
			t.Errorf("%s: stdout has %d lines, want one JSON object: %s", step.name, lines, stdout.String())
		}
		var got, want any
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Errorf("%s: stdout is not JSON: %v: %s", step.name, err, stdout.String())
			continue
		}
		if err := json.Unmarshal([]byte(step.want), &want); err != nil {
			t.Fatalf("%s: bad expectation: %v", step.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s printed\n %s\nwant\n %s", step.name, step.verb, strings.TrimSpace(stdout.String()), step.want)
		}
		if step.after != nil {
			if err := step.after(); err != nil {
				t.Errorf("%s: %v", step.name, err)
			}
		}
	}
}

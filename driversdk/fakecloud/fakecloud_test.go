package fakecloud

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/driversdk"
)

// call runs one verb through the driver's Main, as the harness would.
func call(t *testing.T, d *driversdk.Driver, verb driversdk.Verb, request string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = d.Main(context.Background(), strings.Fields(string(verb)), strings.NewReader(request), &out, &errb)
	return code, out.String(), errb.String()
}

// TestEveryGoldenRequest sends each verb's golden request to a fake cloud
// seeded so that it names existing objects, and decodes the answer into
// the verb's response type.
func TestEveryGoldenRequest(t *testing.T) {
	c := New("reference")
	for _, n := range []string{"ccm-node-1", "ccm-node-2"} {
		c.AddInstance(driversdk.Instance{ID: "i-" + n, Name: n, ProviderID: "reference://a/" + n, State: driversdk.StateRunning, Addresses: []driversdk.Address{}})
	}
	c.SetLoadBalancer(driversdk.ServiceRef{Namespace: "default", Name: "web"}, driversdk.LoadBalancer{Name: "lb-default-web"})
	c.AddRoute(driversdk.Route{Name: "r-0009", NodeName: "ccm-node-1", DestinationCIDR: "10.244.9.0/24"})
	c.LogCall(driversdk.OpEnsureLoadBalancer, "ccm-1", "lb-default-web")
	d := c.Driver()
	for _, m := range driversdk.Messages {
		req, err := os.ReadFile(filepath.Join("..", "testdata", "golden", driversdk.GoldenFile("request", m.Verb)))
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := call(t, d, m.Verb, string(req))
		if code != driversdk.ExitOK {
			t.Errorf("%s: exit %d: %s", m.Verb, code, stderr)
			continue
		}
		v := reflect.New(reflect.TypeOf(m.Response)).Interface()
		dec := json.NewDecoder(strings.NewReader(stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Errorf("%s: answer %q: %v", m.Verb, stdout, err)
		}
	}
}

func TestMainExitCodes(t *testing.T) {
	c := New("fake")
	d := c.Driver()
	tests := []struct {
		verb       driversdk.Verb
		request    string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{driversdk.VerbInfo, "", driversdk.ExitOK, `"protocolVersion":"v1","provider":"fake"`, ""},
		{driversdk.VerbInstanceGet, `{"name":"nope"}`, driversdk.ExitNotFound, "", `fake-cloud-driver instance get: instance "nope": not found`},
		{driversdk.VerbRouteDelete, `{"name":"r-9"}`, driversdk.ExitNotFound, "", "not found"},
		{driversdk.VerbInstanceGet, `{"name":`, driversdk.ExitFailure, "", "decoding the request"},
		{"instance reboot", `{}`, driversdk.ExitFailure, "", `unknown verb "instance reboot"`},
		{driversdk.VerbInstanceCreate, `{"name":"n1","unknownField":true}`, driversdk.ExitOK, `"name":"n1"`, ""},
		{driversdk.VerbFaultInject, `{"target":"routes","errorRate":2}`, driversdk.ExitFailure, "", "not between 0 and 1"},
	}
	for _, tt := range tests {
		code, stdout, stderr := call(t, d, tt.verb, tt.request)
		if code != tt.wantCode || !strings.Contains(stdout, tt.wantStdout) || (tt.wantStderr == "") != (stderr == "") || !strings.Contains(stderr, tt.wantStderr) {
			t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.verb, tt.request, code, stdout, stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
		}
	}
}

func TestAVerbLeftOutIsNotOffered(t *testing.T) {
	d := New("real").Driver()
	d.Verbs = []driversdk.Verb{driversdk.VerbInstancesList}
	if got := d.Info().Verbs; !reflect.DeepEqual(got, []driversdk.Verb{driversdk.VerbInfo, driversdk.VerbInstancesList}) {
		t.Errorf("info verbs %v", got)
	}
	if code, _, stderr := call(t, d, driversdk.VerbFaultClear, "{}"); code != driversdk.ExitFailure || !strings.Contains(stderr, "offers: info, instances list") {
		t.Errorf("a verb not offered: exit %d, %q", code, stderr)
	}
}

package drivercheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/testsupport/testbin"
)

// binDir holds the reference cloud and its driver, built once.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, &binDir, "./providers/reference/cmd/reference-cloud", "./providers/reference/cmd/reference-cloud-driver"))
}

// referenceCloud starts the reference cloud simulator the way a run does,
// from a copy of the reference profile, and returns the check's input for
// the driver command (nil: the reference driver).
func referenceCloud(t *testing.T, command []string) Input {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := testbin.ReferenceProfile(t, testbin.ShortTempDir(t), binDir, nil, nil)
	env, err := FromProfile(ctx, path)
	if err != nil {
		t.Fatalf("FromProfile(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(context.Background()); err != nil {
			t.Errorf("stopping the reference cloud: %v", err)
		}
	})
	in := env.Input
	if want := []string{filepath.Join(binDir, "reference-cloud-driver")}; len(in.Command) != 1 || in.Command[0] != want[0] {
		t.Fatalf("the profile's driver command is %q, want %q", in.Command, want)
	}
	if command != nil {
		in.Command = command
	}
	return in
}

// wrapDriver writes a driver script that answers some verbs itself (arms
// of a shell case on "$*") and passes the others to the reference driver.
func wrapDriver(t *testing.T, arms string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wrapped-driver")
	script := "#!/bin/sh\ncase \"$*\" in\n" + arms + "\nesac\nexec " + filepath.Join(binDir, "reference-cloud-driver") + " \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{path}
}

func results(rep *Report) map[clouddriver.Verb]Result {
	out := map[clouddriver.Verb]Result{}
	for _, r := range rep.Results {
		out[r.Verb] = r
	}
	return out
}

func TestReferenceDriverConforms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the reference cloud")
	}
	rep, err := Check(t.Context(), referenceCloud(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Outcome != Pass {
			t.Errorf("%s", r)
		}
	}
	if len(rep.Results) != len(Verbs) || rep.Failed() {
		t.Errorf("report of %d verbs, failed %v, want %d verbs, none failed: %s", len(rep.Results), rep.Failed(), len(Verbs), rep.Summary())
	}
	if want := "cloud driver reference-cloud-driver conforms to protocol v1: 16 passed, 0 failed, 0 skipped"; rep.Summary() != want {
		t.Errorf("summary %q, want %q", rep.Summary(), want)
	}
}

// A driver that breaks the protocol in one verb fails that verb, named,
// and only that verb.
func TestBrokenDriverFailsTheVerb(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the reference cloud")
	}
	tests := []struct {
		name string
		arms string
		verb clouddriver.Verb
		want []string
		// also fail because they rely on the broken verb.
		also []clouddriver.Verb
	}{
		{name: "malformed JSON", arms: `  "loadbalancer get") echo '{"loadBalancer": {"exists": fal'; exit 0 ;;`,
			verb: clouddriver.VerbLoadBalancerGet, want: []string{"invalid JSON", `{\"exists\": fal`}},
		{name: "two JSON values", arms: `  "routes list") echo '{"routes": []}{"routes": []}'; exit 0 ;;`,
			verb: clouddriver.VerbRoutesList, want: []string{"more than one JSON value"}},
		{name: "a field of the wrong type", arms: `  "instances list") echo '{"instances": {}}'; exit 0 ;;`,
			verb: clouddriver.VerbInstancesList, want: []string{"schema", `at '/instances': got object, want array`}},
		{name: "an instance without providerID", arms: `  "instance create") cat >/dev/null; echo '{"instance": {"id": "i-1", "name": "x", "state": "running", "addresses": []}}'; exit 0 ;;`,
			verb: clouddriver.VerbInstanceCreate, want: []string{"$defs/response.instance-create", `at '/instance': missing property 'providerID'`}},
		{name: "not found is not exit 3", arms: `  "route delete") echo "no route" >&2; exit 1 ;;`,
			verb: clouddriver.VerbRouteDelete, want: []string{"exited 1, want 0", "no route"}},
		{name: "a call log out of order", arms: `  "calls list") cat >/dev/null; echo '{"calls": [{"seq": 5, "time": "2026-01-02T03:04:05Z", "operation": "x", "caller": "c"}, {"seq": 4, "time": "2026-01-02T03:04:05Z", "operation": "x", "caller": "c"}], "last": 5}'; exit 0 ;;`,
			verb: clouddriver.VerbCallsList, want: []string{"seq 4 after seq 5"}},
		{name: "an unknown protocol version", arms: `  "info") echo '{"protocolVersion": "v2", "verbs": ["instances list"]}'; exit 0 ;;`,
			verb: clouddriver.VerbInfo, want: []string{`"v2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(t.Context(), referenceCloud(t, wrapDriver(t, tt.arms)))
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Failed() {
				t.Fatalf("the report does not fail: %s", rep.Summary())
			}
			got := results(rep)
			line := got[tt.verb].String()
			if got[tt.verb].Outcome != Fail || !strings.HasPrefix(line, "FAIL "+string(tt.verb)+": ") {
				t.Errorf("%s: want a FAIL line naming the verb", line)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("%s: want it to say %q", line, w)
				}
			}
			for _, r := range rep.Results {
				if r.Verb != tt.verb && r.Outcome == Fail {
					t.Errorf("%s: want only %q to fail", r, tt.verb)
				}
			}
		})
	}
}

// A driver that lists fewer verbs is checked on those; the mutating verbs
// whose objects it could not remove are not called.
func TestDriverWithFewVerbs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the reference cloud")
	}
	// A real cloud's driver: no instance create, no simulator verbs.
	arms := `  "info") echo '{"protocolVersion": "v1", "provider": "real", "verbs": ["info", "instances list", "instance get", "instance delete", "instance stop", "instance start", "route create", "routes list", "loadbalancer get"]}'; exit 0 ;;`
	rep, err := Check(t.Context(), referenceCloud(t, wrapDriver(t, arms)))
	if err != nil {
		t.Fatal(err)
	}
	got := results(rep)
	want := map[clouddriver.Verb]struct {
		outcome Outcome
		has     string
	}{
		clouddriver.VerbInstanceDelete:       {Pass, "exit 3 for a name no instance has"},
		clouddriver.VerbInstanceStop:         {Skip, `does not list "instance create"`},
		clouddriver.VerbInstanceStart:        {Skip, `does not list "instance create"`},
		clouddriver.VerbInstanceSetAddresses: {Skip, "not listed by info"},
		clouddriver.VerbRouteCreate:          {Skip, `does not list "route delete"`},
		clouddriver.VerbFaultInject:          {Skip, "not listed by info"},
		clouddriver.VerbLoadBalancerGet:      {Pass, "exists: false"},
	}
	for verb, w := range want {
		if r := got[verb]; r.Outcome != w.outcome || !strings.Contains(r.Detail, w.has) {
			t.Errorf("%s: want %s saying %q", r, w.outcome, w.has)
		}
	}
	if rep.Failed() {
		t.Errorf("report fails: %s", rep.Summary())
	}
}

func TestMissingDriverIsBadInput(t *testing.T) {
	_, err := Check(t.Context(), Input{Command: []string{"/nonexistent/my-driver"}})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "/nonexistent/my-driver") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Check of a missing driver: %v, want a one-line *InputError naming it", err)
	}
	_, err = FromProfile(t.Context(), "/nonexistent/profile.yaml")
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "/nonexistent/profile.yaml") {
		t.Errorf("FromProfile of a missing profile: %v, want an *InputError naming it", err)
	}
}

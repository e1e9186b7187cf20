package cloudside

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

func testProfile(t *testing.T, services, driver string) (*profile.Profile, *profile.Expander, string) {
	t.Helper()
	dir := t.TempDir()
	yaml := `apiVersion: ccm-conformance.dev/v1alpha1
kind: Profile
name: test
ccm:
  binary:
    path: /bin/true
timeouts:
  serviceReady: 2s
  cloudDriverCall: 7s
` + services + driver
	p, err := profile.Parse([]byte(yaml), dir)
	if err != nil {
		t.Fatalf("profile: %v\n%s", err, yaml)
	}
	runDir := t.TempDir()
	return p, p.NewExpander(profile.ExpanderInput{RunDir: runDir, Kubeconfig: filepath.Join(runDir, "kubeconfig")}), runDir
}

func TestStartService(t *testing.T) {
	for _, tt := range []struct {
		name    string
		service string
		wantErr string
	}{
		{"ready file appears", `[/bin/sh, -c, "sleep 0.2; touch ${RUN_DIR}/ready; exec sleep 60"]` + "\n    readyFile: ${RUN_DIR}/ready", ""},
		{"no ready file to wait for", `[/bin/sh, -c, "exec sleep 60"]`, ""},
		{"exits before it is ready", `[/bin/sh, -c, "echo no cloud today >&2; exit 3"]` + "\n    readyFile: ${RUN_DIR}/ready", "exit status 3"},
		{"never ready", `[/bin/sh, -c, "echo still starting; exec sleep 60"]` + "\n    readyFile: ${RUN_DIR}/ready", "did not appear within 2s (timeouts.serviceReady); last log lines:\nstill starting"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, e, runDir := testProfile(t, "services:\n  - name: cloud\n    command: "+tt.service+"\n", "")
			svc, err := StartService(context.Background(), p, e, p.Services[0], runDir)
			if svc == nil {
				t.Fatalf("no service returned (error %v): the caller could not stop it", err)
			}
			defer svc.Stop(context.Background())
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if _, err := os.Stat(filepath.Join(runDir, "service-cloud.log")); err != nil {
				t.Errorf("no service log: %v", err)
			}
		})
	}
}

func TestDriverInput(t *testing.T) {
	p, e, runDir := testProfile(t, "", `cloudDriver:
  command: [./driver, --socket, "${RUN_DIR}/cloud.sock"]
  env:
    CLOUD: "${RUN_DIR}/cloud.sock"
`)
	in, err := DriverInput(p, e)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(p.Dir, "driver"), "--socket", runDir + "/cloud.sock"}; strings.Join(in.Command, " ") != strings.Join(want, " ") {
		t.Errorf("command %q, want %q", in.Command, want)
	}
	found := false
	for _, kv := range in.Env {
		found = found || kv == "CLOUD="+runDir+"/cloud.sock"
	}
	if !found {
		t.Errorf("env lacks CLOUD: %v", in.Env)
	}
	if in.CallTimeout.String() != "7s" {
		t.Errorf("call timeout %s, want 7s", in.CallTimeout)
	}
	p, e, _ = testProfile(t, "", "")
	if _, err := DriverInput(p, e); err == nil {
		t.Error("a profile without a cloud driver: no error")
	}
}

func TestScratchBase(t *testing.T) {
	short := t.TempDir()
	t.Setenv("TMPDIR", short)
	if len(short) <= maxScratchBase && ScratchBase() != short {
		t.Errorf("TMPDIR %s: base %s", short, ScratchBase())
	}
	long := filepath.Join(short, strings.Repeat("x", 60))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	if got := ScratchBase(); got != "/tmp" {
		t.Errorf("TMPDIR of %d bytes: base %s, want /tmp", len(long), got)
	}
	dir, err := ScratchDir("ccmc-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if !strings.HasPrefix(dir, "/tmp/ccmc-test-") {
		t.Errorf("scratch dir %s", dir)
	}
}

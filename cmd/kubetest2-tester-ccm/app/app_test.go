package app

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
)

func TestWantsHelp(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--help"}, true},
		{[]string{"--help", "--provider", "p.yaml"}, true},
		{[]string{"--provider", "p.yaml", "-h"}, true},
		{[]string{"--provider", "p.yaml"}, false},
		{[]string{"--", "--help"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := wantsHelp(tt.args); got != tt.want {
			t.Errorf("wantsHelp(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// The arguments and the protocol's environment say where a run goes: its
// results into $ARTIFACTS (else --artifacts, else _artifacts), its run
// directory kept in --run-dir or $KUBETEST2_RUN_DIR/ccm-conformance, else
// a temporary one.
func TestParse(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantExport string
		wantDir    string
		wantErr    string
	}{
		{name: "the protocol's environment", args: []string{"--provider", "p.yaml"},
			env:        map[string]string{EnvArtifacts: "/a", EnvKubeconfig: "/k", EnvRunDir: "/r"},
			wantExport: "/a", wantDir: "/r/ccm-conformance"},
		{name: "flags over the environment", args: []string{"--provider", "p.yaml", "--artifacts", "/b", "--run-dir", "/d"},
			env:        map[string]string{EnvArtifacts: "/a", EnvKubeconfig: "/k", EnvRunDir: "/r"},
			wantExport: "/b", wantDir: "/d"},
		{name: "no ARTIFACTS, no run directory", args: []string{"--provider", "p.yaml"},
			env:        map[string]string{EnvKubeconfig: "/k"},
			wantExport: filepath.Join(cwd, runner.DefaultArtifactsDir)},
		{name: "no provider", args: nil, env: map[string]string{EnvKubeconfig: "/k"}, wantErr: "--provider"},
		{name: "stray arguments", args: []string{"--provider", "p.yaml", "extra"}, env: map[string]string{EnvKubeconfig: "/k"}, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"--provider", "p.yaml", "--nope"}, env: map[string]string{EnvKubeconfig: "/k"}, wantErr: "see --help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			var o options
			fs := newFlags(&o, getenv)
			fs.SetOutput(io.Discard)
			ro, err := o.parse(fs, tt.args, getenv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ro.ExportTo != tt.wantExport || ro.Dir != tt.wantDir || ro.Name != Name {
				t.Errorf("export to %q, run directory %q, name %q; want %q, %q, %q", ro.ExportTo, ro.Dir, ro.Name, tt.wantExport, tt.wantDir, Name)
			}
			if ro.Runner.ProfilePath != "p.yaml" || ro.Runner.Backend == nil || len(ro.Runner.Suites) == 0 {
				t.Errorf("runner options %+v", ro.Runner)
			}
		})
	}
}

func TestCheckE2ETestInput(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(profile, []byte("name: p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := func() *E2ETestFlags {
		return &E2ETestFlags{Kubeconfig: "/k", ReportDir: "_artifacts", Profile: profile}
	}
	tests := []struct {
		name    string
		flags   func(*E2ETestFlags)
		cfg     types.SuiteConfig
		wantErr string
	}{
		{name: "what the stock tester passes, and a profile", flags: func(*E2ETestFlags) {}},
		{name: "a label filter", flags: func(*E2ETestFlags) {}, cfg: types.SuiteConfig{LabelFilter: "LoadBalancer"}},
		{name: "the empty focus and skip the stock tester always passes", flags: func(*E2ETestFlags) {}, cfg: types.SuiteConfig{FocusStrings: []string{""}, SkipStrings: []string{""}}},
		{name: "no profile", flags: func(f *E2ETestFlags) { f.Profile = "" }, wantErr: "--test-args=--ccm-profile=PATH"},
		{name: "a missing profile", flags: func(f *E2ETestFlags) { f.Profile = "/nope.yaml" }, wantErr: "--ccm-profile /nope.yaml"},
		{name: "no kubeconfig", flags: func(f *E2ETestFlags) { f.Kubeconfig = "" }, wantErr: "--kubeconfig"},
		{name: "no report dir", flags: func(f *E2ETestFlags) { f.ReportDir = "" }, wantErr: "--report-dir"},
		{name: "a focus", flags: func(*E2ETestFlags) {}, cfg: types.SuiteConfig{FocusStrings: []string{"finalizer"}}, wantErr: "select specs with --label-filter"},
		{name: "a skip", flags: func(*E2ETestFlags) {}, cfg: types.SuiteConfig{SkipStrings: []string{"Serial"}}, wantErr: "--ginkgo.skip"},
		{name: "ginkgo nodes", flags: func(*E2ETestFlags) {}, cfg: types.SuiteConfig{ParallelTotal: 4}, wantErr: "--parallel=1"},
	}
	for _, tt := range tests {
		f := ok()
		tt.flags(f)
		err := checkE2ETestInput(f, tt.cfg)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			} else if !filepath.IsAbs(f.ReportDir) {
				t.Errorf("%s: --report-dir %q not made absolute", tt.name, f.ReportDir)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
}

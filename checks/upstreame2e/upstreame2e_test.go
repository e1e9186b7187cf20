package upstreame2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/labels"
)

// The focus selects exactly the specs marked to run, in the full text
// upstream's framework gives them (tags after the Describe and the It).
func TestFocusSelectsTheSpecsThatRun(t *testing.T) {
	re, err := regexp.Compile(Focus(Specs))
	if err != nil {
		t.Fatalf("Focus does not compile: %v", err)
	}
	runs := 0
	for _, s := range Specs {
		full := Describe + " [Feature:LoadBalancer] " + s.Name + " [Slow] [LinuxOnly]"
		if got := re.MatchString(full); got != s.Run {
			t.Errorf("focus matches %q = %v, want %v", full, got, s.Run)
		}
		if s.Run {
			runs++
		} else if s.Reason == "" {
			t.Errorf("spec %q is not run and says no reason", s.Name)
		}
	}
	// Issue 31: every upstream spec a real cloud would pass runs on kind,
	// but for the two documented ones.
	if runs < 15 {
		t.Errorf("%d of upstream's %d specs run, want at least 15", runs, len(Specs))
	}
	if re.MatchString("[sig-network] Services should be able to change the type and ports of a TCP service") {
		t.Error("the focus matches a spec outside " + Describe)
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string
		not  []string
	}{
		{
			name: "defaults",
			o:    Options{Binary: "e2e", Kubectl: "/k/kubectl", Kubeconfig: "/c/kubeconfig", ReportDir: "/r"},
			want: []string{"--kubeconfig=/c/kubeconfig", "--provider=local", "--kubectl-path=/k/kubectl", "--report-dir=/r", "--ginkgo.focus=" + Focus(Specs), "--ginkgo.timeout=45m0s"},
			not:  []string{"--num-nodes"},
		},
		{
			name: "focus, nodes and timeout given",
			o:    Options{Binary: "e2e", Kubectl: "k", Kubeconfig: "c", ReportDir: "r", Focus: "finalizer", Nodes: 2, Timeout: 10 * time.Minute},
			want: []string{"--ginkgo.focus=finalizer", "--num-nodes=2", "--ginkgo.timeout=10m0s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := Args(tt.o)
			for _, w := range tt.want {
				if !slices.Contains(args, w) {
					t.Errorf("Args lacks %q: %q", w, args)
				}
			}
			for _, n := range tt.not {
				for _, a := range args {
					if strings.HasPrefix(a, n) {
						t.Errorf("Args has %q: %q", a, args)
					}
				}
			}
		})
	}
}

// A JUnit file as upstream's e2e binary writes it: every spec of the
// binary, those the focus left out as "skipped" without a reason.
const junit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" disabled="3" errors="0" failures="1" time="61.5">
  <testsuite name="upstream" package="/e2e" tests="5" disabled="0" skipped="3" errors="0" failures="1" time="61.5">
    <testcase name="[SynchronizedBeforeSuite]" classname="upstream" status="passed" time="0.1"></testcase>
    <testcase name="[It] [sig-network] LoadBalancers [Feature:LoadBalancer] should handle load balancer cleanup finalizer for service [Slow]" classname="upstream" status="passed" time="12.25"></testcase>
    <testcase name="[sig-network] LoadBalancers [Feature:LoadBalancer] should be able to change the type and ports of a UDP service [Slow]" classname="upstream" status="failed" time="40">
      <failure message="timed out waiting for the condition&#xA;more" type="failed">details</failure>
    </testcase>
    <testcase name="[sig-network] LoadBalancers [Feature:LoadBalancer] should work from pods" classname="upstream" status="skipped" time="0">
      <skipped message="skipped - Only supported for providers [gce]"></skipped>
    </testcase>
    <testcase name="[sig-network] Services should serve a basic endpoint from pods" classname="upstream" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[sig-network] Services pending one" classname="upstream" status="pending" time="0">
      <skipped message="pending"></skipped>
    </testcase>
  </testsuite>
</testsuites>`

func TestReadJUnit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "junit_01.xml"), []byte(junit), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJUnit(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []SpecResult{
		{Name: "[sig-network] LoadBalancers [Feature:LoadBalancer] should be able to change the type and ports of a UDP service [Slow]", State: "failed", Time: 40 * time.Second, Message: "timed out waiting for the condition"},
		{Name: "[sig-network] LoadBalancers [Feature:LoadBalancer] should handle load balancer cleanup finalizer for service [Slow]", State: "passed", Time: 12250 * time.Millisecond},
		{Name: "[sig-network] LoadBalancers [Feature:LoadBalancer] should work from pods", State: "skipped", Message: "Only supported for providers [gce]"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadJUnit =\n%+v\nwant\n%+v", got, want)
	}
}

func TestReadJUnitBadInput(t *testing.T) {
	empty := t.TempDir()
	if _, err := ReadJUnit(empty); err == nil || !strings.Contains(err.Error(), "no junit*.xml in "+empty) {
		t.Errorf("ReadJUnit of an empty directory: %v, want it to say there is no JUnit file", err)
	}
	corrupt := t.TempDir()
	path := filepath.Join(corrupt, "junit_01.xml")
	if err := os.WriteFile(path, []byte("<testsuites><testsuite"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJUnit(corrupt); err == nil || !strings.Contains(err.Error(), path+": not a JUnit file") {
		t.Errorf("ReadJUnit of a corrupt file: %v, want it to name the file", err)
	}
}

// Run passes the arguments, keeps the output in e2e.log and counts the
// specs of the JUnit file; a failed spec is a result, not an error.
func TestRunWithAFakeBinary(t *testing.T) {
	dir := t.TempDir()
	junitPath := filepath.Join(dir, "junit.src")
	if err := os.WriteFile(junitPath, []byte(junit), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "e2e.test")
	script := `#!/bin/sh
for a in "$@"; do case "$a" in --report-dir=*) rd=${a#--report-dir=} ;; esac; done
echo "args: $*"
cp ` + junitPath + ` "$rd/junit_01.xml"
exit 1
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(dir, "reports")
	var progress strings.Builder
	res, err := Run(t.Context(), Options{Binary: bin, Kubectl: "kubectl", Kubeconfig: "kc", ReportDir: reports, Nodes: 2, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Passed != 1 || res.Failed != 1 || res.Skipped != 1 || res.ExitCode != 1 || res.Wall <= 0 {
		t.Errorf("Run = %+v, want 1 passed, 1 failed, 1 skipped, exit code 1, a wall time", res)
	}
	log, err := os.ReadFile(filepath.Join(reports, "e2e.log"))
	if err != nil || !strings.Contains(string(log), "args: --kubeconfig=kc --provider=local") || !strings.Contains(progress.String(), "--num-nodes=2") {
		t.Errorf("e2e.log = %q, %v; progress %q: want the binary's output in both", log, err, progress.String())
	}

	// A binary that writes no report is an error that names the log.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho boom\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), Options{Binary: bin, Kubectl: "kubectl", Kubeconfig: "kc", ReportDir: filepath.Join(dir, "r2")})
	if err == nil || !strings.Contains(err.Error(), "exited with code 3") || !strings.Contains(err.Error(), "e2e.log") {
		t.Errorf("Run of a binary without a report: %v, want an error with its exit code and log", err)
	}
}

func TestNewestAgnhost(t *testing.T) {
	list := "registry.k8s.io/e2e-test-images/agnhost:2.55\ngcr.io/k8s-authenticated-test/agnhost:2.6\nregistry.k8s.io/e2e-test-images/busybox:1.37.0-1\nregistry.k8s.io/e2e-test-images/agnhost:2.66.1\nregistry.k8s.io/e2e-test-images/agnhost:2.9\n"
	if got, err := newestAgnhost(list, "e2e.test"); err != nil || got != "registry.k8s.io/e2e-test-images/agnhost:2.66.1" {
		t.Errorf("newestAgnhost = %q, %v; want agnhost:2.66.1", got, err)
	}
	if _, err := newestAgnhost("registry.k8s.io/pause:3.10\n", "e2e.test"); err == nil || !strings.Contains(err.Error(), "e2e.test --list-images names no") {
		t.Errorf("newestAgnhost of a list without agnhost: %v", err)
	}
}

// A spec runs only where the profile claims what it needs; one left out
// names what is missing, and a spec that never runs keeps its reason.
func TestForProfile(t *testing.T) {
	claims := func(cs ...labels.Capability) func(labels.Capability) bool {
		return func(c labels.Capability) bool { return slices.Contains(cs, c) }
	}
	all := ForProfile(Specs, func(labels.Capability) bool { return true })
	for i, s := range all {
		if s.Run != Specs[i].Run || s.Reason != Specs[i].Reason {
			t.Errorf("with every capability claimed, %q = run %v %q, want run %v %q", s.Name, s.Run, s.Reason, Specs[i].Run, Specs[i].Reason)
		}
		if len(s.Needs) == 0 || !slices.Contains(s.Needs, labels.LoadBalancer) {
			t.Errorf("%q needs %v: every upstream spec needs LoadBalancer", s.Name, s.Needs)
		}
	}

	cases := []struct {
		name    string
		has     func(labels.Capability) bool
		runs    []string
		missing map[string]string // spec -> a capability its reason names
	}{
		{
			name:    "load balancers without a data path",
			has:     claims(labels.LoadBalancer, labels.LoadBalancerUDP, labels.LoadBalancerSessionAffinity),
			runs:    []string{"should handle load balancer cleanup finalizer for service"},
			missing: map[string]string{"should work from pods": "DataPath", "should be able to change the type and ports of a TCP service": "DataPath"},
		},
		{
			name: "a data path without UDP or affinity",
			has:  claims(labels.LoadBalancer, labels.DataPath, labels.LoadBalancerSourceRanges, labels.LoadBalancerHealthCheckNodePort),
			missing: map[string]string{
				"should be able to change the type and ports of a UDP service":                                               "LoadBalancerUDP",
				"should have session affinity work for LoadBalancer service with Local traffic policy":                       "LoadBalancerSessionAffinity",
				"should be able to preserve UDP traffic when server pod cycles for a LoadBalancer service on the same nodes": "LoadBalancerUDP",
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]Spec{}
			for _, s := range ForProfile(Specs, c.has) {
				got[s.Name] = s
			}
			if c.runs != nil {
				var runs []string
				for _, s := range Specs {
					if got[s.Name].Run {
						runs = append(runs, s.Name)
					}
				}
				if !slices.Equal(runs, c.runs) {
					t.Errorf("runs %q, want %q", runs, c.runs)
				}
			}
			for name, capability := range c.missing {
				s, ok := got[name]
				if !ok || s.Run || !strings.Contains(s.Reason, "the profile does not claim") || !strings.Contains(s.Reason, capability) {
					t.Errorf("%q = run %v, reason %q: want left out for want of %s", name, s.Run, s.Reason, capability)
				}
			}
			if s := got["should be able to create LoadBalancer Service without NodePort and change it"]; s.Run || strings.Contains(s.Reason, "the profile does not claim") {
				t.Errorf("the spec that never runs now says %q", s.Reason)
			}
		})
	}
}

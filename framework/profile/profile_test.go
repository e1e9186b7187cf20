package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
)

func TestLoadValid(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, p *Profile)
	}{
		{"valid-minimal.yaml", func(t *testing.T, p *Profile) {
			if p.Cluster.Nodes != 3 || len(p.Cluster.IPFamilies) != 1 || p.Cluster.IPFamilies[0] != "IPv4" || p.Cluster.PodRoutes != PodRoutesBackend {
				t.Errorf("cluster defaults not applied: %+v", p.Cluster)
			}
			if got := p.Timeout(NodeInitialize); got != 5*time.Minute {
				t.Errorf("default nodeInitialize = %s, want 5m", got)
			}
			if p.CloudDriver != nil {
				t.Errorf("cloudDriver = %+v, want nil", p.CloudDriver)
			}
			if got := p.LeaderMigrationConfig(); got != "" {
				t.Errorf("LeaderMigrationConfig = %q, want none", got)
			}
		}},
		{"valid-deployed.yaml", func(t *testing.T, p *Profile) {
			if p.CCM.Deployed == nil || p.CCM.Deployed.Namespace != "kube-system" {
				t.Errorf("deployed CCM = %+v, want namespace defaulted to kube-system", p.CCM.Deployed)
			}
			if p.CCM.HarnessStarts() {
				t.Error("HarnessStarts = true for a deployed CCM, want false")
			}
		}},
		{"valid-node-manager-image.yaml", func(t *testing.T, p *Profile) {
			if nm := p.CCM.NodeManager; nm == nil || nm.Image != "registry.example/node-manager:v1" || nm.Path != "" || nm.Env["ENDPOINT"] == "" {
				t.Errorf("node manager = %+v, want the image with its env", nm)
			}
		}},
		{"valid-image.yaml", func(t *testing.T, p *Profile) {
			if p.CCM.Image == nil || p.CCM.Image.Reference != "registry.example/my-ccm:v1.2.3" {
				t.Fatalf("image CCM = %+v", p.CCM.Image)
			}
			if !p.CCM.HarnessStarts() {
				t.Error("HarnessStarts = false for an image, want true")
			}
			args, env, field := p.CCM.Command()
			if field != "ccm.image" || len(args) != 3 || env["MY_CLOUD_ENDPOINT"] == "" {
				t.Errorf("Command = %v, %v, %q", args, env, field)
			}
		}},
		{"valid-image-digest.yaml", func(t *testing.T, p *Profile) {
			if p.CCM.Image == nil || !strings.Contains(p.CCM.Image.Reference, "@sha256:") {
				t.Errorf("image CCM = %+v", p.CCM.Image)
			}
		}},
		{"valid-module.yaml", func(t *testing.T, p *Profile) {
			m := p.CCM.Binary.Module
			if m == nil || p.CCM.Binary.Path != "" {
				t.Fatalf("binary CCM = %+v, want a module and no path", p.CCM.Binary)
			}
			if m.Path != "k8s.io/cloud-provider-vsphere" || m.Version != "v1.36.0" || m.Package != "k8s.io/cloud-provider-vsphere/cmd/vsphere-cloud-controller-manager" {
				t.Errorf("module = %+v", m)
			}
			rs, err := m.Replaces()
			const testlabels = "github.com/vmware-tanzu/vm-operator/pkg/constants/testlabels"
			want := ModuleReplace{Old: module.Version{Path: testlabels}, New: module.Version{Path: testlabels, Version: "v1.9.1-0.20251029150609-93918c59a719"}}
			if err != nil || len(rs) != 1 || rs[0] != want {
				t.Errorf("Replaces = %v, %v; want [%v]", rs, err, want)
			}
			if rs[0].String() != m.Replace[0] {
				t.Errorf("String = %q, want the profile's %q", rs[0].String(), m.Replace[0])
			}
			if args, _, field := p.CCM.Command(); field != "ccm.binary" || len(args) != 2 {
				t.Errorf("Command = %v, %q", args, field)
			}
		}},
		{"valid-module-pseudo-version.yaml", func(t *testing.T, p *Profile) {
			if m := p.CCM.Binary.Module; m == nil || m.Version != "v2.0.1-0.20251029150609-93918c59a719" || len(m.Replace) != 0 {
				t.Errorf("module = %+v", m)
			}
		}},
		{"valid-full.yaml", func(t *testing.T, p *Profile) {
			if got := p.Timeout(NodeInitialize); got != 30*time.Second {
				t.Errorf("nodeInitialize = %s, want 30s", got)
			}
			if got := p.Timeout(PollInterval); got != 250*time.Millisecond {
				t.Errorf("pollInterval = %s, want 250ms", got)
			}
			if !p.Has(DualStack) || p.Has(LoadBalancer) {
				t.Errorf("capabilities = %v", p.Capabilities)
			}
			if want := filepath.Join(p.Dir, "../bin/ccm"); p.ResolvePath(p.CCM.Binary.Path) != filepath.Clean(want) {
				t.Errorf("ResolvePath = %s, want %s", p.ResolvePath(p.CCM.Binary.Path), want)
			}
			if want := filepath.Join(p.Dir, "migration/leader-migration.yaml"); p.LeaderMigrationConfig() != want {
				t.Errorf("LeaderMigrationConfig = %s, want %s", p.LeaderMigrationConfig(), want)
			}
			e := p.NewExpander(ExpanderInput{RunDir: "/run/x", Kubeconfig: "/run/x/kubeconfig"})
			if got, err := e.Expand(p.CCM.Binary.Args[1]); err != nil || got != "--cloud-config=/run/x/cloud.conf" {
				t.Errorf("Expand = %q, %v", got, err)
			}
			if nm := p.CCM.NodeManager; nm == nil || p.ResolvePath(nm.Path) != filepath.Join(p.Dir, "../bin/node-manager") || len(nm.Args) != 1 || nm.Env["FULL_ENDPOINT"] == "" {
				t.Errorf("NodeManager = %+v", nm)
			}
			if a := p.LoadBalancer.ServiceAnnotations; len(a) != 1 || a["service.beta.kubernetes.io/full-load-balancer-type"] != "network" {
				t.Errorf("loadBalancer.serviceAnnotations = %v", a)
			}
			if !strings.HasPrefix(p.Digest, "sha256:") || len(p.Digest) != len("sha256:")+64 {
				t.Errorf("Digest = %q, want sha256:<64 hex digits>", p.Digest)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := Load(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.check(t, p)
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		file string
		want []string // substrings of the error
	}{
		{"invalid-unknown-field.yaml", []string{`unknown field "ccm.binary.argz"`}},
		{"invalid-bad-timeout.yaml", []string{"timeouts.nodeInitialize", `"3x"`}},
		{"invalid-timeout-without-unit.yaml", []string{"timeouts.nodeInitialize", `"30"`, "without a unit", "30s"}},
		{"invalid-timeout-not-scalar.yaml", []string{"timeouts.nodeDeletion", "not a duration"}},
		{"invalid-timeout-below-floor.yaml", []string{"timeouts.nodeKeep", `"2s"`, "below its floor of 10s"}},
		{"invalid-bad-port-variable.yaml", []string{"ccm.binary.args", "${FREE_PORT_metrics}", "${FREE_PORT_<NAME>}"}},
		{"invalid-unknown-timeout.yaml", []string{"timeouts", `"nodeInitialise"`, "nodeInitialize"}},
		{"invalid-unknown-capability.yaml", []string{"capabilities[1]", `"load-balancer"`, "LoadBalancer"}},
		{"invalid-no-ccm.yaml", []string{"ccm.binary: Required value"}},
		{"invalid-wrong-type.yaml", []string{"cluster.nodes", "string"}},
		{"invalid-pod-routes.yaml", []string{"cluster.podRoutes", `"kindnet"`, `"backend", "cloud"`}},
		{"invalid-windows-nodes.yaml", []string{"cluster.windowsNodes", "3", "between 0 and cluster.nodes (2)"}},
		{"invalid-lb-backends.yaml", []string{"loadBalancer.backends", `"some"`, `"all", "subset"`}},
		{"invalid-lb-ingress-nameserver.yaml", []string{"loadBalancer.ingressNameserver", `"dns.example:53"`, "want IP:port"}},
		{"invalid-lb-ingress-nameserver-variable.yaml", []string{"loadBalancer.ingressNameserver", "${FREE_PORT_dns}", "unknown variable"}},
		{"invalid-lb-service-annotations.yaml", []string{"loadBalancer.serviceAnnotations", `"aws load balancer type"`, "name part must consist of"}},
		{"invalid-kubernetes-version.yaml", []string{"cluster.kubernetesVersion", `"1.36"`, "such as v1.37.2"}},
		{"invalid-unknown-variable.yaml", []string{"ccm.binary.args", "${RUNDIR}"}},
		{"invalid-both-ccms.yaml", []string{"ccm.deployed", "exclusive"}},
		{"invalid-image-and-binary.yaml", []string{"ccm.image: Forbidden", "ccm.binary and ccm.image are exclusive"}},
		{"invalid-image-no-reference.yaml", []string{"ccm.image.reference: Required value"}},
		{"invalid-image-bad-reference.yaml", []string{"ccm.image.reference", `"My CCM:latest"`, "not an image reference"}},
		{"invalid-image-variable.yaml", []string{"ccm.image.reference", "variables are not expanded"}},
		{"invalid-image-unknown-variable.yaml", []string{"ccm.image.env[ENDPOINT]", "${PORT}"}},
		{"invalid-image-files.yaml", []string{"ccm.image.files[0].content", "${ENDPOINT}", "ccm.image.files[1].path", "outside /tmp", "ccm.image.files[2].path: Duplicate", "ccm.image.files[3].path: Required value"}},
		{"invalid-image-unknown-field.yaml", []string{`unknown field "ccm.image.ref"`}},
		{"invalid-image-placement.yaml", []string{"ccm.image.placement: Unsupported value", `"daemonSet"`, `"staticPod"`}},
		{"invalid-leader-migration-no-config.yaml", []string{"leaderMigration.config: Required value"}},
		{"invalid-node-manager-image.yaml", []string{"ccm.nodeManager.image: Required value", "run as a DaemonSet beside ccm.image"}},
		{"invalid-node-manager-deployed.yaml", []string{"ccm.nodeManager: Forbidden", "beside ccm.deployed, deploy it with the CCM"}},
		{"invalid-node-manager-node-name.yaml", []string{"ccm.nodeManager.args[1]: Forbidden", "--node-name itself"}},
		{"invalid-node-manager-no-path.yaml", []string{"ccm.nodeManager.path: Required value", "ccm.nodeManager.args", "${RUNDIR}"}},
		{"invalid-binary-empty.yaml", []string{"ccm.binary.path: Required value", "ccm.binary.module"}},
		{"invalid-module-and-path.yaml", []string{"ccm.binary.module: Forbidden", "ccm.binary.path and ccm.binary.module are exclusive"}},
		{"invalid-module-latest.yaml", []string{"ccm.binary.module.version", `"latest"`, "never", "v1.36.0"}},
		{"invalid-module-short-version.yaml", []string{"ccm.binary.module.version", `"v1.36"`}},
		{"invalid-module-wrong-major.yaml", []string{"ccm.binary.module.version", `"v2.1.0"`, "should be v0 or v1"}},
		{"invalid-module-package-outside.yaml", []string{"ccm.binary.module.package", "not a package of module k8s.io/cloud-provider-vsphere"}},
		{"invalid-module-no-package.yaml", []string{"ccm.binary.module.package: Required value"}},
		{"invalid-module-replace-directory.yaml", []string{"ccm.binary.module.replace[0]", "a directory cannot be copied from upstream"}},
		{"invalid-module-replace-syntax.yaml", []string{"ccm.binary.module.replace[0]", `"old => new version"`}},
		{"invalid-module-variable.yaml", []string{"ccm.binary.module.version", "variables are not expanded here"}},
		{"invalid-not-yaml.yaml", []string{"not valid YAML"}},
		{"invalid-wrong-apiversion.yaml", []string{"apiVersion", "ccm-conformance.dev/v1alpha1"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the file %s", msg, path)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("err = %v, want one naming nope.yaml", err)
	}
}

func TestEmptyProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "empty document") {
		t.Fatalf("err = %v, want empty document", err)
	}
}

func TestEveryTimeoutHasADefault(t *testing.T) {
	for _, n := range TimeoutNames() {
		if DefaultTimeout(n) <= 0 {
			t.Errorf("timeout %s has no positive default", n)
		}
	}
}

func TestParseReplace(t *testing.T) {
	tests := []struct {
		in      string
		want    string // String() of the result; "" when an error is expected
		wantErr string
	}{
		{in: "a.example/x => a.example/x v1.2.3", want: "a.example/x => a.example/x v1.2.3"},
		{in: "  a.example/x v1.0.0   =>  b.example/y v0.0.0-20251029150609-93918c59a719 ", want: "a.example/x v1.0.0 => b.example/y v0.0.0-20251029150609-93918c59a719"},
		{in: "a.example/x => ./x", wantErr: "a directory cannot be copied"},
		{in: "a.example/x a.example/x v1.2.3", wantErr: `"old => new version"`},
		{in: "a.example/x => b.example/y v1 => c", wantErr: `"old => new version"`},
		{in: "a.example/x => b.example/y latest", wantErr: "b.example/y"},
		{in: "a.example/x v1 => b.example/y v1.0.0", wantErr: "a.example/x"},
	}
	for _, tt := range tests {
		r, err := ParseReplace(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseReplace(%q) = %v, %v; want an error containing %q", tt.in, r, err, tt.wantErr)
			}
			continue
		}
		if err != nil || r.String() != tt.want {
			t.Errorf("ParseReplace(%q) = %q, %v; want %q", tt.in, r.String(), err, tt.want)
		}
	}
}

func TestCCMField(t *testing.T) {
	for _, tt := range []struct {
		ccm  CCM
		want string
	}{
		{CCM{Binary: &BinaryCCM{Path: "ccm"}}, "ccm.binary.path"},
		{CCM{Binary: &BinaryCCM{Module: &ModuleCCM{Path: "k8s.io/cloud-provider-vsphere", Version: "v1.36.0"}}}, "ccm.binary.module"},
		{CCM{Image: &ImageCCM{Reference: "ccm:v1"}}, "ccm.image"},
		{CCM{Deployed: &DeployedCCM{LabelSelector: "app=ccm"}}, "ccm.deployed"},
		{CCM{}, "no CCM"},
	} {
		if got := tt.ccm.Field(); got != tt.want {
			t.Errorf("%+v: Field() = %q, want %q", tt.ccm, got, tt.want)
		}
	}
}

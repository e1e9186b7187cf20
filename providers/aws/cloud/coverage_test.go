package cloud

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// profilePath is the AWS profile: its ccm.binary.module names the CCM
// whose calls the emulator must serve.
const profilePath = "../../profiles/aws.yaml"

// notEmulated are the CCM's interface methods the emulator leaves out, on
// purpose, each with the reason. A method the CCM's interfaces gain that
// is neither served nor listed here fails the test.
var notEmulated = map[string]string{
	// KMS: the CCM calls it only to check a key named in a Service's
	// annotation for encrypted volumes' load balancers; no spec names one.
	"KMS.DescribeKey": "kms",
}

// TestIntegrationOperationsCoverTheCCM reads the CCM's AWS interfaces from
// its module's source, at the version the profile names (go mod download
// fetches it into the module cache, where the CCM's build put it), and
// checks that the emulator serves every method of iface.EC2 and of the
// ELB and ELBV2 interfaces, and knows every other one.
func TestIntegrationOperationsCoverTheCCM(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the CCM's module through the go command")
	}
	data, err := os.ReadFile(profilePath)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		CCM struct {
			Binary struct {
				Module struct{ Path, Version string } `json:"module"`
			} `json:"binary"`
		} `json:"ccm"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	mod := p.CCM.Binary.Module
	if mod.Path != "k8s.io/cloud-provider-aws" || mod.Version == "" {
		t.Fatalf("%s names module %q@%q, want k8s.io/cloud-provider-aws at a version", profilePath, mod.Path, mod.Version)
	}
	cmd := exec.Command("go", "mod", "download", "-json", mod.Path+"@"+mod.Version)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v: %s", mod.Path, mod.Version, err, out)
	}
	var dl struct{ Dir string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.Dir == "" {
		t.Fatalf("go mod download answered %q: %v", out, err)
	}

	methods := map[string][]string{}
	for _, src := range []struct{ file, iface string }{
		{"pkg/providers/v1/iface/types.go", "EC2"},
		{"pkg/providers/v1/aws.go", "ELB"},
		{"pkg/providers/v1/aws.go", "ELBV2"},
		{"pkg/providers/v1/aws.go", "KMS"},
	} {
		m := interfaceMethods(t, filepath.Join(dl.Dir, src.file), src.iface)
		if len(m) == 0 {
			t.Fatalf("%s@%s %s declares no interface %s: the CCM's source moved, read it again", mod.Path, mod.Version, src.file, src.iface)
		}
		methods[src.iface] = m
	}
	served := map[string]map[string]func(*state, *params) (any, *apiError){"EC2": ec2Ops(), "ELB": elbOps(), "ELBV2": elbv2Ops()}
	total := 0
	for iface, ms := range methods {
		for _, m := range ms {
			total++
			_, ok := served[iface][m]
			_, left := notEmulated[iface+"."+m]
			switch {
			case ok && left:
				t.Errorf("%s.%s is served and listed as not emulated", iface, m)
			case !ok && !left:
				t.Errorf("%s@%s calls %s.%s, which the emulator does not serve", mod.Path, mod.Version, iface, m)
			}
		}
	}
	for name := range notEmulated {
		iface, m, _ := cut(name)
		if !slices.Contains(methods[iface], m) {
			t.Errorf("notEmulated lists %s, which %s@%s no longer has", name, mod.Path, mod.Version)
		}
	}
	t.Logf("%s@%s: %d methods in EC2, ELB, ELBV2 and KMS; %d served, %d not emulated", mod.Path, mod.Version, total, len(ec2Ops())+len(elbOps())+len(elbv2Ops()), len(notEmulated))
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// interfaceMethods parses file and lists the methods of the interface
// type named name.
func interfaceMethods(t *testing.T, file, name string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != name {
			return true
		}
		if it, ok := ts.Type.(*ast.InterfaceType); ok {
			for _, m := range it.Methods.List {
				for _, id := range m.Names {
					out = append(out, id.Name)
				}
			}
		}
		return false
	})
	return out
}

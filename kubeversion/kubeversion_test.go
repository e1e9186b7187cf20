package kubeversion

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// Cases is the table the callers' tests share (cmd/ccm-conformance/app's
// TestVersionsAcceptedAlike runs the same strings through matrix, the
// profile, run and lkg): a string and whether it is a Kubernetes version.
func TestParse(t *testing.T) {
	for _, c := range Cases {
		v, err := Parse(c.In)
		if (err == nil) != c.OK {
			t.Errorf("Parse(%q) error = %v, want ok=%v", c.In, err, c.OK)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), c.In) {
				t.Errorf("Parse(%q) error %q does not name the input", c.In, err)
			}
			continue
		}
		if v.String() != c.In {
			t.Errorf("Parse(%q).String() = %q", c.In, v.String())
		}
	}
}

func TestStagingAndMinor(t *testing.T) {
	for in, want := range map[string][2]string{
		"v1.37.2":         {"v0.37.2", "v1.37"},
		"v1.38.0-rc.1":    {"v0.38.0-rc.1", "v1.38"},
		"v1.40.0-alpha.0": {"v0.40.0-alpha.0", "v1.40"},
	} {
		v := MustParse(in)
		if v.Staging() != want[0] || v.MinorRelease() != want[1] {
			t.Errorf("%s: Staging %s MinorRelease %s, want %v", in, v.Staging(), v.MinorRelease(), want)
		}
	}
}

func TestCompare(t *testing.T) {
	ordered := []string{"v1.35.4", "v1.37.2", "v1.38.0-alpha.1", "v1.38.0-alpha.2", "v1.38.0-beta.0", "v1.38.0-rc.0", "v1.38.0-rc.1", "v1.38.0", "v1.38.1", "v1.100.0"}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(MustParse(a), MustParse(b)); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestPinnedMatchesGoMod: go.mod requires every staging module it uses at
// the staging version of Pinned (scripts/update-k8s-deps.sh keeps them
// together); a module linking client-go v0.37.2 must not call itself
// pinned to anything else.
func TestPinnedMatchesGoMod(t *testing.T) {
	// The harness's module and the providers' module (the reference and
	// vSphere emulators, which link k8s.io/cloud-provider) move together.
	for _, file := range []string{"../go.mod", "../providers/go.mod"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := modfile.ParseLax(file, data, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := MustParse(Pinned).Staging()
			staging := 0
			for _, r := range f.Require {
				p := r.Mod.Path
				if !strings.HasPrefix(p, "k8s.io/") || !IsStagingModule(p) {
					continue
				}
				staging++
				if r.Mod.Version != want {
					t.Errorf("%s requires %s %s; Pinned %s wants %s (scripts/update-k8s-deps.sh %s)", file, p, r.Mod.Version, Pinned, want, Pinned)
				}
			}
			if staging < 5 {
				t.Errorf("%s requires %d staging modules; expected client-go and the rest", file, staging)
			}
			if len(f.Replace) != 0 {
				t.Errorf("%s has %d replace directives; `go install ...@version` refuses a module with any, and a provider's own module builds without (docs/releasing.md)", file, len(f.Replace))
			}
		})
	}
}

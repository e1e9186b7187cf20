package checkout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	tmp := t.TempDir()
	write := func(rel, text string) string {
		p := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(p)
	}
	repo := write("repo/go.mod", "// a comment\nmodule "+ModulePath+"\n\ngo 1.26.0\n")
	write("repo/sub/pkg/x.go", "package pkg\n")
	// A module nested in the checkout (a build module, a test fixture) is
	// not the checkout.
	write("repo/sub/go.mod", "module example.com/other\n")
	quoted := write("quoted/go.mod", "module \""+ModulePath+"\"\n")
	lookalike := write("lookalike/go.mod", "module "+ModulePath+"/v2\n")
	write("lookalike/a/b.txt", "")

	tests := []struct {
		name, from, want, wantErr string
	}{
		{"the checkout's own directory", repo, repo, ""},
		{"a package two levels down, past another module", filepath.Join(repo, "sub", "pkg"), repo, ""},
		{"a quoted module path", quoted, quoted, ""},
		{"another module with a longer path", filepath.Join(lookalike, "a"), "", "no checkout of " + ModulePath + " at or above " + filepath.Join(lookalike, "a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Root(tt.from)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Root(%s) = %q, %v; want an error containing %q", tt.from, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Root(%s) = %q, %v; want %q", tt.from, got, err, tt.want)
			}
		})
	}
}

// The tests of this package run in its directory, two levels below the
// checkout's root.
func TestMustRoot(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := MustRoot(), filepath.Dir(filepath.Dir(wd)); got != want {
		t.Errorf("MustRoot() = %q, want %q", got, want)
	}
}

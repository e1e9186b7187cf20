package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// scriptDriver starts a cloud driver whose `instance get` runs body (the
// request, {"name": ...}, on stdin).
func scriptDriver(t *testing.T, body string) *clouddriver.Driver {
	t.Helper()
	script := `#!/bin/sh
if [ "$1" = info ]; then
  echo '{"protocolVersion":"v1","provider":"fake","verbs":["instance get"]}'
  exit 0
fi
` + body
	path := filepath.Join(t.TempDir(), "driver")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := clouddriver.New(context.Background(), clouddriver.Options{Command: []string{path}, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNameWithoutInstance(t *testing.T) {
	// The instance answer for whatever name was asked for.
	const exists = `name=$(sed 's/.*"name":"\([^"]*\)".*/\1/'); echo "{\"instance\":{\"id\":\"i-9\",\"name\":\"$name\",\"providerID\":\"cloud://i-9\"}}"`
	tests := []struct {
		name    string
		body    string
		want    string   // the name chosen
		wantErr []string // substrings of the error
		taken   bool     // the error is an *InstanceNamesTakenError
	}{
		{name: "the cloud knows no such instance", body: `cat >/dev/null; echo "no instance" >&2; exit 3`, want: "phantom-1"},
		{
			// A cloud that resolves the first name: a random pick would
			// have made a correct CCM fail.
			name: "the first name is taken",
			body: `if grep -q phantom-1; then ` + exists + `; else echo "no instance" >&2; exit 3; fi`,
			want: "phantom-2",
		},
		{
			name:    "every name is taken",
			body:    exists,
			wantErr: []string{"node names phantom-1, phantom-2, phantom-3: expected the cloud to have no instance of that name", "saw instances phantom-1 (id i-9, providerID \"cloud://i-9\")"},
			taken:   true,
		},
		{
			name:    "the driver fails",
			body:    `cat >/dev/null; echo "cloud unreachable" >&2; exit 1`,
			wantErr: []string{"asking the cloud driver whether an instance is named phantom-1", "cloud unreachable"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			got, err := NameWithoutInstance(context.Background(), NameWithoutInstanceInput{
				Driver: scriptDriver(t, tt.body), Prefix: "phantom",
				NewName: func(prefix string) string { n++; return fmt.Sprintf("%s-%d", prefix, n) },
			})
			if got != tt.want {
				t.Errorf("name %q, want %q (err %v)", got, tt.want, err)
			}
			if (err != nil) != (len(tt.wantErr) > 0) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var taken *InstanceNamesTakenError
			if errors.As(err, &taken) != tt.taken {
				t.Errorf("error %T, taken %v", err, tt.taken)
			}
		})
	}
}

func TestIsUniqueName(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{UniqueName("ccm-join"), true},
		{UniqueName("ccm-node"), true},
		{UniqueName("ccmc-check"), true},
		{"ccm-node-1", false},
		{"ccm-node-12345", false},
		{"ccm-join-abcde", false},
		{UniqueName("ccm-join") + "x", false},
		{UniqueName("worker"), false},
		{"ccm-join", false},
	} {
		if got := IsUniqueName(tt.name, MachinePrefixes...); got != tt.want {
			t.Errorf("IsUniqueName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

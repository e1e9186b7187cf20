package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate-driver passes the reference driver (its cloud started from the
// reference profile) and fails, naming the verb, a driver that answers one
// verb with malformed JSON.
func TestValidateDriver(t *testing.T) {
	good := referenceProfile(t, shortTempDir(t), nil, nil)
	res := runHarness(t, nil, "validate-driver", "--driver", filepath.Join(binDir, "reference-cloud-driver"), "--profile", good)
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0; stdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if n := len(linesWith(res.stdout, "PASS ")); n != 16 {
		t.Errorf("%d PASS lines, want 16:\n%s", n, res.stdout)
	}
	if !strings.Contains(res.stdout, "conforms to protocol v1: 16 passed, 0 failed, 0 skipped") {
		t.Errorf("no summary saying the driver conforms:\n%s", res.stdout)
	}

	broken := filepath.Join(t.TempDir(), "broken-driver")
	script := "#!/bin/sh\ncase \"$*\" in\n  \"loadbalancer get\") echo '{\"loadBalancer\": {\"exists\": fal'; exit 0 ;;\nesac\nexec " +
		filepath.Join(binDir, "reference-cloud-driver") + " \"$@\"\n"
	if err := os.WriteFile(broken, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res = runHarness(t, nil, "validate-driver", "--driver", broken, "--profile", good)
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1; stdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	fails := linesWith(res.stdout, "FAIL ")
	if len(fails) != 1 || !strings.HasPrefix(fails[0], "FAIL loadbalancer get: ") || !strings.Contains(fails[0], "invalid JSON") {
		t.Errorf("FAIL lines %q, want one, for loadbalancer get, saying invalid JSON", fails)
	}
}

// linesWith returns the lines of s that start with prefix.
func linesWith(s, prefix string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

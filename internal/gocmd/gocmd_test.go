package gocmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIsPackageLine(t *testing.T) {
	for line, want := range map[string]bool{
		"k8s.io/api/core/v1":                 true,
		"go: downloading k8s.io/api v0.37.2": false,
		"# k8s.io/example/pkg6":              false,
		"pkg6/broken.go:3:2: undefined: foo": false,
		"":                                   false,
	} {
		if got := isPackageLine(line); got != want {
			t.Errorf("isPackageLine(%q) = %v, want %v", line, got, want)
		}
	}
}

// Run counts the package lines of a go command's output and, when it
// fails, returns an *Error with the command line and the output's tail.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "go")
	script := "#!/bin/sh\necho 'go: downloading example.com/m v1.0.0'\nfor p in a b c; do echo example.com/m/$p; sleep 0.03; done\n[ \"$1\" = fail ] && { echo 'a/a.go:1:1: broken'; exit 1; }\nexit 0\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var calls int
	n, err := Run(context.Background(), Command{Go: fake, Dir: dir, Args: []string{"build"}, ProgressInterval: 10 * time.Millisecond, Progress: func(int) { calls++ }})
	if err != nil || n != 3 {
		t.Errorf("Run = %d, %v; want 3 packages", n, err)
	}
	if calls == 0 {
		t.Error("progress was never called")
	}
	_, err = Run(context.Background(), Command{Go: fake, Dir: dir, Env: []string{"CGO_ENABLED=0"}, Args: []string{"fail"}})
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("Run = %v, want an *Error", err)
	}
	for _, want := range []string{"CGO_ENABLED=0 " + fake + " fail (in " + dir + "): exit status 1", "last lines of output:", "a/a.go:1:1: broken"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

package redact

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	r, err := New(map[string]string{"TOKEN": "s3cr3t-value", "QUOTED": `pa"ss\word`, "PREFIX": "s3cr3t"})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"token=s3cr3t-value end":            "token=[redacted TOKEN] end",
		"just s3cr3t here":                  "just [redacted PREFIX] here",
		`{"arg":"--password=pa\"ss\\word"}`: `{"arg":"--password=[redacted QUOTED]"}`,
		"--password=pa\"ss\\word":           "--password=[redacted QUOTED]",
		"nothing secret":                    "nothing secret",
		"s3cr3t-value s3cr3t-value":         "[redacted TOKEN] [redacted TOKEN]",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewRefusesShortSecrets(t *testing.T) {
	if _, err := New(map[string]string{"PIN": "123"}); err == nil || !strings.Contains(err.Error(), "secret PIN is shorter than 4") {
		t.Errorf("error %v", err)
	}
	r, err := New(nil)
	if err != nil || r.Active() || r.String("x") != "x" {
		t.Errorf("no secrets: %v %v", r, err)
	}
}

// A secret split between two writes is still redacted; what is held back
// comes out on Close.
func TestWriter(t *testing.T) {
	r, _ := New(map[string]string{"TOKEN": "s3cr3t-value"})
	var b strings.Builder
	w := r.Writer(&b)
	for _, part := range []string{"line one s3cr", "3t-value\nline two ", "s3cr3t-val", "ue tail"} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(b.String(), "line two") {
		t.Errorf("an unfinished line was written before Close: %q", b.String())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "line one [redacted TOKEN]\nline two [redacted TOKEN] tail"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

func TestDirAndError(t *testing.T) {
	r, _ := New(map[string]string{"TOKEN": "s3cr3t-value"})
	dir := t.TempDir()
	files := map[string]string{"a/log.txt": "token s3cr3t-value\n", "b.json": `{"x":"s3cr3t-value"}`, "clean.txt": "nothing"}
	for name, content := range files {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	changed, err := r.Dir(dir)
	if err != nil || len(changed) != 2 {
		t.Fatalf("Dir: changed %v, %v", changed, err)
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, _ error) error {
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			if strings.Contains(string(data), "s3cr3t") {
				t.Errorf("%s still holds the secret: %q", p, data)
			}
		}
		return nil
	})
	if info, _ := os.Stat(filepath.Join(dir, "a/log.txt")); info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v not kept", info.Mode())
	}

	base := errors.New("login with s3cr3t-value failed")
	red := r.Error(base)
	if red.Error() != "login with [redacted TOKEN] failed" || !errors.Is(red, base) {
		t.Errorf("Error: %q, Is %v", red, errors.Is(red, base))
	}
}

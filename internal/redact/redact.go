// Package redact keeps secrets out of what a run writes: the profile's
// ${env:NAME} values (a cloud's credentials, from CI) are replaced by
// "[redacted NAME]" in the run's output, its build log and every file of
// its run directory (docs/profile.md, "Secrets from the environment").
//
// Floor: a leaf; the standard library only.
package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// MinLength is the shortest secret that can be kept out of the results: a
// shorter one cannot be told from other text, and replacing it everywhere
// would mangle the files.
const MinLength = 4

// Redactor replaces secret values. The zero value and nil redact nothing.
type Redactor struct {
	// pairs are old, new, ... for strings.NewReplacer, longest first.
	pairs    []string
	replacer *strings.Replacer
	longest  int
}

// New returns a Redactor of the named values. A value shorter than
// MinLength is an error naming it.
func New(secrets map[string]string) (*Redactor, error) {
	r := &Redactor{}
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	type pair struct{ old, new string }
	var pairs []pair
	for _, n := range names {
		v := secrets[n]
		if len(v) < MinLength {
			return nil, fmt.Errorf("secret %s is shorter than %d characters: it cannot be kept out of the results; use a longer one", n, MinLength)
		}
		mark := "[redacted " + n + "]"
		pairs = append(pairs, pair{v, mark})
		// In a JSON document a secret with quotes, backslashes or control
		// characters appears escaped.
		if quoted, err := json.Marshal(v); err == nil {
			if esc := string(quoted[1 : len(quoted)-1]); esc != v {
				pairs = append(pairs, pair{esc, mark})
			}
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].old) > len(pairs[j].old) })
	for _, p := range pairs {
		r.pairs = append(r.pairs, p.old, p.new)
		r.longest = max(r.longest, len(p.old))
	}
	if len(r.pairs) > 0 {
		r.replacer = strings.NewReplacer(r.pairs...)
	}
	return r, nil
}

// Active reports whether there is anything to redact.
func (r *Redactor) Active() bool { return r != nil && r.replacer != nil }

// String redacts s.
func (r *Redactor) String(s string) string {
	if !r.Active() {
		return s
	}
	return r.replacer.Replace(s)
}

// Error redacts an error's message, keeping it for errors.Is and As.
func (r *Redactor) Error(err error) error {
	if err == nil || !r.Active() {
		return err
	}
	msg := r.String(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns a writer that redacts what it passes to w. It holds back
// the end of an unfinished line (a secret may be split between writes)
// until a newline or Close. Without secrets it is w itself, with a Close
// that does nothing.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	if !r.Active() {
		return nopCloser{w}
	}
	return &writer{r: r, w: w}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type writer struct {
	mu  sync.Mutex
	r   *Redactor
	w   io.Writer
	buf []byte
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	cut := bytes.LastIndexByte(w.buf, '\n') + 1
	// A long unfinished line goes out but for its last bytes, which may
	// start a secret.
	if cut == 0 && len(w.buf) > 64<<10 {
		cut = len(w.buf) - w.r.longest
	}
	if cut > 0 {
		if _, err := io.WriteString(w.w, w.r.String(string(w.buf[:cut]))); err != nil {
			return 0, err
		}
		w.buf = append(w.buf[:0], w.buf[cut:]...)
	}
	return len(p), nil
}

// Close writes what is held back.
func (w *writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(w.w, w.r.String(string(w.buf)))
	w.buf = w.buf[:0]
	return err
}

// Dir redacts every regular file under root in place, and returns the
// paths it changed. A file that holds no secret is not touched.
func (r *Redactor) Dir(root string) ([]string, error) {
	if !r.Active() {
		return nil, nil
	}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing was written
	}
	var changed []string
	var errs []error
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		out := r.String(string(data))
		if out == string(data) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if err := os.WriteFile(path, []byte(out), info.Mode().Perm()); err != nil {
			errs = append(errs, err)
			return nil
		}
		changed = append(changed, path)
		return nil
	})
	return changed, errors.Join(append(errs, err)...)
}

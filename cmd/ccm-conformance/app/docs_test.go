package app

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestDocsCommandsParse reads every command line the README and docs/ show
// (in code blocks, and in inline code that starts with the program's
// name) and checks it against the CLI: the sub-command exists, and every
// flag it names is one that sub-command takes. `make X` lines name a
// Makefile target. Docs that drift from the code fail here, not in a
// user's shell.
func TestDocsCommandsParse(t *testing.T) {
	root := newRootCommand(io.Discard, io.Discard)
	files, err := filepath.Glob("../../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../../README.md")
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(string(data)) {
			where := filepath.Base(f) + ":" + c.line
			switch c.words[0] {
			case "make":
				if len(c.words) > 1 && !strings.Contains(c.words[1], "=") && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(c.words[1])+`:`).Match(makefile) {
					t.Errorf("%s: `make %s`: no such Makefile target", where, c.words[1])
				}
				checked++
			default:
				if err := checkCommand(root, c.words[1:]); err != nil {
					t.Errorf("%s: `%s`: %v", where, strings.Join(c.words, " "), err)
				}
				checked++
			}
		}
	}
	if checked < 40 {
		t.Errorf("found only %d commands in the docs; is the parser still finding them?", checked)
	}
	t.Logf("%d commands checked", checked)
}

// docCommand is one command line of a doc: its words, and where it is.
type docCommand struct {
	words []string
	line  string
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	// separators end one command on a shell line.
	separators = map[string]bool{"|": true, "||": true, "&&": true, ";": true, ">": true, "2>&1": true, ">/dev/null": true, "2>/dev/null": true}
)

// docCommands finds the ccm-conformance and make command lines of a
// Markdown document: lines of fenced code blocks (a leading "$ " prompt
// dropped, "\" continuations joined) and inline code spans.
func docCommands(doc string) []docCommand {
	var out []docCommand
	inBlock := false
	var pending string
	lines := strings.Split(doc, "\n")
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			pending = ""
			continue
		}
		var candidates []string
		if inBlock {
			line = strings.TrimPrefix(line, "$ ")
			if pending != "" {
				line = pending + " " + line
				pending = ""
			}
			if strings.HasSuffix(line, "\\") {
				pending = strings.TrimSuffix(line, "\\")
				continue
			}
			candidates = []string{line}
		} else {
			for _, m := range inlineCode.FindAllStringSubmatch(raw, -1) {
				candidates = append(candidates, m[1])
			}
		}
		for _, c := range candidates {
			if words := commandWords(c); words != nil {
				out = append(out, docCommand{words: words, line: strconv.Itoa(i + 1)})
			}
		}
	}
	return out
}

// commandWords returns the words of the first ccm-conformance or make
// command in s, up to a shell separator; nil when s has none. Quotes are
// dropped, so a quoted argument becomes several words, which only matters
// for arguments, never for flags.
func commandWords(s string) []string {
	fields := strings.Fields(s)
	for i, f := range fields {
		base := filepath.Base(strings.Trim(f, `"'$(`))
		if (base == "ccm-conformance" && (i == 0 || !strings.HasPrefix(fields[i-1], "github.com"))) || (f == "make" && i == 0) {
			if strings.Contains(f, "/cmd/") || strings.HasSuffix(f, ".md") {
				return nil
			}
			words := []string{base}
			for _, w := range fields[i+1:] {
				if separators[w] || strings.HasPrefix(w, ">") || w == "#" {
					break
				}
				words = append(words, strings.Trim(w, `"'`))
			}
			if base == "ccm-conformance" && len(words) == 1 {
				return nil // the program's name in prose, not a command
			}
			return words
		}
	}
	return nil
}

// checkCommand finds the sub-command args name and checks the flags they
// give.
func checkCommand(root *cobra.Command, args []string) error {
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd.HasSubCommands() && !cmd.Runnable() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		return &docError{"`" + cmd.CommandPath() + "` has no sub-command " + rest[0]}
	}
	for _, w := range rest {
		if !strings.HasPrefix(w, "--") || w == "--" || strings.HasPrefix(w, "--...") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		name = strings.TrimRight(name, ".,;:)")
		if name == "help" || name == "" || strings.ContainsAny(name, "[<") {
			continue
		}
		if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
			return &docError{"`" + cmd.CommandPath() + "` has no flag --" + name}
		}
	}
	return nil
}

type docError struct{ msg string }

func (e *docError) Error() string { return e.msg }

// TestCheckCommand: the checker itself finds a wrong sub-command or flag.
func TestCheckCommand(t *testing.T) {
	root := newRootCommand(io.Discard, io.Discard)
	tests := []struct {
		line    string
		wantErr string
	}{
		{"$ ccm-conformance run --provider p.yaml --label-filter 'A && B'", ""},
		{"ccm-conformance lkg check --kubernetes v1.37.2 --store a --store b", ""},
		{"./bin/ccm-conformance list --provider p.yaml --backend kind | tail -1", ""},
		{"ccm-conformance run --provider p.yaml --no-such-flag", "has no flag --no-such-flag"},
		{"ccm-conformance lkg chek --kubernetes v1.37.2", "`ccm-conformance lkg` has no sub-command chek"},
		{"ccm-conformance frobnicate", "frobnicate"},
		{`ccm-conformance publish --store=gs://b _artifacts`, ""},
		{`ccm-conformance publish --stor=gs://b _artifacts`, "has no flag --stor"},
	}
	for _, tt := range tests {
		words := commandWords(strings.TrimPrefix(tt.line, "$ "))
		if words == nil {
			t.Fatalf("%q: no command found", tt.line)
		}
		err := checkCommand(root, words[1:])
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%q: error %v, want %q", tt.line, err, tt.wantErr)
		}
	}
}

// The README's layout table names folders that exist, and every folder at
// the top of the repository (and each package of framework/) is in it, so
// that a newcomer's map matches the tree.
func TestReadmeLayoutMatchesFolders(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_./-]+)/?` \\|")
	listed := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		path := strings.TrimSuffix(m[1], "/")
		listed[path] = true
		if info, err := os.Stat(filepath.Join("../../..", path)); err != nil || !info.IsDir() {
			t.Errorf("README's layout table names %s, which is not a folder", path)
		}
	}
	if len(listed) == 0 {
		t.Fatal("README has no layout table")
	}
	// A folder is covered by its own row, a row of a folder above it, or,
	// for a folder that only groups others (cmd/, providers/), rows of
	// folders below it.
	covered := func(path string) bool {
		for p := path; p != "."; p = filepath.Dir(p) {
			if listed[p] {
				return true
			}
		}
		for l := range listed {
			if strings.HasPrefix(l, path+"/") {
				return true
			}
		}
		return false
	}
	var folders []string
	for _, pattern := range []string{"../../../*", "../../../framework/*", "../../../cmd/*", "../../../providers/*"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if info, err := os.Stat(m); err == nil && info.IsDir() {
				folders = append(folders, strings.TrimPrefix(m, "../../../"))
			}
		}
	}
	for _, f := range folders {
		switch {
		case strings.HasPrefix(filepath.Base(f), ".") || strings.HasPrefix(filepath.Base(f), "_"):
		case f == "bin" || f == "framework/internal":
			// Build output, and the framework's own helpers.
		case strings.HasPrefix(f, "framework/") && !listed[f]:
			t.Errorf("framework package %s is not in the README's layout table", f)
		case !covered(f):
			t.Errorf("folder %s is not in the README's layout table", f)
		}
	}
}

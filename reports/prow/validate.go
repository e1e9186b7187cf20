package prow

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
)

// Problem is one reason TestGrid or Spyglass would show a run directory as
// an error rather than as a result.
type Problem struct {
	// File is the file at fault, relative to the run directory.
	File string `json:"file"`
	// Message says what is wrong with it.
	Message string `json:"message"`
}

func (p Problem) String() string { return p.File + ": " + p.Message }

// Validation is what Validate found in a run directory.
type Validation struct {
	Problems []Problem `json:"problems"`
	// JUnitFiles are the junit files found, relative to the run directory.
	JUnitFiles []string `json:"junitFiles"`
	// Result is finished.json's result, when it could be read.
	Result string `json:"result,omitempty"`
	// Cases and FailedCases count the junit test cases.
	Cases, FailedCases int
	// Started and Finished are the parsed records, nil when unreadable.
	Started  *Started  `json:"-"`
	Finished *Finished `json:"-"`
}

// Valid reports whether no problem was found.
func (v *Validation) Valid() bool { return len(v.Problems) == 0 }

func (v *Validation) add(file, format string, args ...any) {
	v.Problems = append(v.Problems, Problem{File: file, Message: fmt.Sprintf(format, args...)})
}

// junitName is the file names TestGrid reads as junit results, wherever
// they are in the run directory: junit.xml, junit_<context>_<thread>.xml
// and the like.
var junitName = regexp.MustCompile(`^junit.*\.xml$`)

// Validate checks the run directory dir for what makes TestGrid show an
// error instead of results: a missing or unparsable started.json or
// finished.json, a zero timestamp, no "passed" in finished.json, a result
// that contradicts "passed", no junit file or one that does not parse, and a
// failed run with no failing test case. The error is non-nil only when dir
// itself cannot be read.
func Validate(dir string) (*Validation, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	if _, err := os.ReadDir(dir); err != nil {
		return nil, err
	}
	return ValidateFS(os.DirFS(dir))
}

// ValidateFS is Validate on a file system rooted at the run directory.
func ValidateFS(fsys fs.FS) (*Validation, error) {
	v := &Validation{}
	v.checkStarted(fsys)
	v.checkFinished(fsys)
	if err := v.checkJUnit(fsys); err != nil {
		return nil, err
	}
	if f := v.Finished; f != nil && f.Passed != nil && len(v.JUnitFiles) > 0 {
		switch {
		case !*f.Passed && f.Result != ResultAborted && v.FailedCases == 0:
			v.add(FinishedFile, "the run failed (passed: false) but no junit test case failed; TestGrid cannot show why")
		case *f.Passed && v.FailedCases > 0:
			v.add(FinishedFile, "passed: true, but %d junit test case(s) failed", v.FailedCases)
		}
	}
	if s, f := v.Started, v.Finished; s != nil && f != nil && s.Timestamp > 0 && f.Timestamp != nil && *f.Timestamp > 0 && *f.Timestamp < s.Timestamp {
		v.add(FinishedFile, "timestamp %d is before started.json's %d", *f.Timestamp, s.Timestamp)
	}
	return v, nil
}

func readAll(fsys fs.FS, name string) ([]byte, error) {
	data, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return data, err
}

func (v *Validation) checkStarted(fsys fs.FS) {
	data, err := readAll(fsys, StartedFile)
	if errors.Is(err, fs.ErrNotExist) {
		v.add(StartedFile, "missing")
		return
	}
	if err != nil {
		v.add(StartedFile, "unreadable: %v", err)
		return
	}
	s, err := DecodeStarted(bytes.NewReader(data))
	if err != nil {
		v.add(StartedFile, "not valid JSON: %v", err)
		return
	}
	v.Started = s
	if s.Timestamp <= 0 {
		v.add(StartedFile, "timestamp is zero or missing")
	}
}

func (v *Validation) checkFinished(fsys fs.FS) {
	data, err := readAll(fsys, FinishedFile)
	if errors.Is(err, fs.ErrNotExist) {
		v.add(FinishedFile, "missing (TestGrid shows the run as still running)")
		return
	}
	if err != nil {
		v.add(FinishedFile, "unreadable: %v", err)
		return
	}
	f, err := DecodeFinished(bytes.NewReader(data))
	if err != nil {
		v.add(FinishedFile, "not valid JSON: %v", err)
		return
	}
	v.Finished = f
	v.Result = f.Result
	if f.Timestamp == nil || *f.Timestamp <= 0 {
		v.add(FinishedFile, "timestamp is zero or missing")
	}
	if f.Passed == nil {
		v.add(FinishedFile, `no "passed" field`)
		return
	}
	switch f.Result {
	case "":
	case ResultSuccess:
		if !*f.Passed {
			v.add(FinishedFile, "result SUCCESS contradicts passed: false")
		}
	case ResultFailure, ResultAborted:
		if *f.Passed {
			v.add(FinishedFile, "result %s contradicts passed: true", f.Result)
		}
	default:
		v.add(FinishedFile, "result %q is none of SUCCESS, FAILURE, ABORTED", f.Result)
	}
}

func (v *Validation) checkJUnit(fsys fs.FS) error {
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			v.add(p, "unreadable: %v", err)
			return nil
		}
		if d.IsDir() || !junitName.MatchString(path.Base(p)) {
			return nil
		}
		v.JUnitFiles = append(v.JUnitFiles, p)
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			v.add(p, "unreadable: %v", err)
			return nil
		}
		cases, failed, err := countCases(bytes.NewReader(data))
		if err != nil {
			v.add(p, "not valid JUnit XML: %v", err)
			return nil
		}
		v.Cases += cases
		v.FailedCases += failed
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(v.JUnitFiles)
	if len(v.JUnitFiles) == 0 {
		v.add(ArtifactsDir+"/junit_*.xml", "no junit file")
	}
	return nil
}

// countCases streams a junit file and counts its test cases and those with
// a <failure> or <error>.
func countCases(r io.Reader) (cases, failed int, err error) {
	dec := xml.NewDecoder(r)
	depth := 0
	inCase, caseFailed := false, false
	sawRoot := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if t.Name.Local != "testsuites" && t.Name.Local != "testsuite" {
					return 0, 0, fmt.Errorf("root element is <%s>, not <testsuites> or <testsuite>", t.Name.Local)
				}
				sawRoot = true
			}
			depth++
			switch {
			case t.Name.Local == "testcase":
				inCase, caseFailed = true, false
				cases++
			case inCase && (t.Name.Local == "failure" || t.Name.Local == "error"):
				caseFailed = true
			}
		case xml.EndElement:
			depth--
			if t.Name.Local == "testcase" {
				if caseFailed {
					failed++
				}
				inCase = false
			}
		}
	}
	if !sawRoot {
		return 0, 0, errors.New("no <testsuites> or <testsuite> element")
	}
	return cases, failed, nil
}

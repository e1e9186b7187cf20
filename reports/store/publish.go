package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
)

// InvalidRunError is a run directory that Publish refused because
// prow.Validate found problems in it.
type InvalidRunError struct {
	Dir      string
	Problems []prow.Problem
}

func (e *InvalidRunError) Error() string {
	msg := fmt.Sprintf("%s: not a valid run directory: %s", e.Dir, e.Problems[0])
	if n := len(e.Problems) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more; see validate-artifacts)", n)
	}
	return msg
}

// errBuildTaken is a build id another publisher claimed first.
var errBuildTaken = errors.New("build id taken")

// maxClaims bounds the build ids Publish tries.
const maxClaims = 20

// uploadConcurrency is how many files Publish uploads at once.
const uploadConcurrency = 4

// Publish uploads the run directory dir as a new build of its provider's
// job and returns the build. The directory must pass prow.Validate (else
// an *InvalidRunError) and name its provider in finished.json's metadata.
//
// Concurrent publishers lose nothing: each claims a fresh build id
// atomically (a directory created with mkdir in a file store; started.json
// written with an if-not-exists precondition elsewhere) and writes only
// under it; finished.json is written last, so a reader that finds it finds
// the whole run; latest-build.txt is then moved forward to the newest
// finished build (see updateLatest).
func (s *Store) Publish(ctx context.Context, dir string) (Build, error) {
	v, err := prow.Validate(dir)
	if err != nil {
		return Build{}, fmt.Errorf("run directory %s: %w", dir, err)
	}
	if !v.Valid() {
		return Build{}, &InvalidRunError{Dir: dir, Problems: v.Problems}
	}
	provider := v.Finished.MetaString(prow.MetaProvider)
	if provider == "" {
		return Build{}, &InvalidRunError{Dir: dir, Problems: []prow.Problem{{File: prow.FinishedFile, Message: `metadata has no "provider"`}}}
	}
	files, err := runFiles(dir)
	if err != nil {
		return Build{}, fmt.Errorf("run directory %s: %w", dir, err)
	}
	started, err := os.ReadFile(filepath.Join(dir, prow.StartedFile))
	if err != nil {
		return Build{}, fmt.Errorf("run directory %s: %w", dir, err)
	}

	job := JobName(provider)
	var b Build
	for i := 0; ; i++ {
		if i == maxClaims {
			return Build{}, fmt.Errorf("publishing %s to %s: no free build id after %d tries", dir, s, maxClaims)
		}
		id, err := s.newBuildID(time.Unix(v.Started.Timestamp, 0))
		if err != nil {
			return Build{}, err
		}
		b = Build{Job: job, ID: id}
		err = s.claim(ctx, b, started)
		if errors.Is(err, errBuildTaken) {
			continue
		}
		if err != nil {
			return Build{}, fmt.Errorf("publishing %s to %s: %w", dir, s, err)
		}
		break
	}

	if err := s.upload(ctx, dir, b, files); err != nil {
		return b, fmt.Errorf("publishing %s to %s: %w", dir, s.Location(b.Prefix()), err)
	}
	if err := s.uploadFile(ctx, dir, b, prow.FinishedFile); err != nil {
		return b, fmt.Errorf("publishing %s to %s: %w", dir, s.Location(b.Prefix()), err)
	}
	if err := s.updateLatest(ctx, job); err != nil {
		return b, fmt.Errorf("published %s to %s, but %w", dir, s.Location(b.Prefix()), err)
	}
	return b, nil
}

// runFiles lists the regular files of a run directory, slash-separated,
// except started.json and finished.json (written first and last) and
// temporary files of writes that never finished.
func runFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == prow.StartedFile || rel == prow.FinishedFile || isTempName(rel) {
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}

// newBuildID is the run's start in UTC as yyyymmddhhmmss and five random
// digits: 19 digits, which sort by time as text and fit an int64 as Prow's
// numeric build ids do.
func (s *Store) newBuildID(started time.Time) (string, error) {
	s.randMu.Lock()
	defer s.randMu.Unlock()
	r := s.rand
	if r == nil {
		r = rand.Reader
	}
	n, err := rand.Int(r, big.NewInt(100000))
	if err != nil {
		return "", fmt.Errorf("build id: %w", err)
	}
	return fmt.Sprintf("%s%05d", started.UTC().Format("20060102150405"), n.Int64()), nil
}

// claim makes the build id b ours and writes its started.json, or returns
// errBuildTaken.
func (s *Store) claim(ctx context.Context, b Build, started []byte) error {
	if s.local != "" {
		jobDir := filepath.Join(s.local, filepath.FromSlash(LogsPrefix+b.Job))
		if err := os.MkdirAll(jobDir, 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(filepath.Join(jobDir, b.ID), 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return errBuildTaken
			}
			return err
		}
		return s.bucket.WriteAll(ctx, b.Key(prow.StartedFile), started, &blob.WriterOptions{ContentType: contentType(prow.StartedFile)})
	}
	err := s.bucket.WriteAll(ctx, b.Key(prow.StartedFile), started, &blob.WriterOptions{ContentType: contentType(prow.StartedFile), IfNotExist: true})
	switch gcerrors.Code(err) {
	case gcerrors.OK:
		return nil
	case gcerrors.FailedPrecondition:
		return errBuildTaken
	case gcerrors.Unimplemented:
		// A driver without conditional writes: check, then write. Two
		// publishers could still race here, one in 10^5 per second.
		exists, xerr := s.bucket.Exists(ctx, b.Key(prow.StartedFile))
		if xerr != nil {
			return xerr
		}
		if exists {
			return errBuildTaken
		}
		return s.bucket.WriteAll(ctx, b.Key(prow.StartedFile), started, &blob.WriterOptions{ContentType: contentType(prow.StartedFile)})
	}
	return err
}

func (s *Store) upload(ctx context.Context, dir string, b Build, files []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for i := 0; i < uploadConcurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				if err := s.uploadFile(ctx, dir, b, name); err != nil {
					errs <- err
					cancel()
				}
			}
		}()
	}
	for _, f := range files {
		select {
		case work <- f:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func (s *Store) uploadFile(ctx context.Context, dir string, b Build, name string) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := s.bucket.Upload(ctx, b.Key(name), f, &blob.WriterOptions{ContentType: contentType(name)}); err != nil {
		return fmt.Errorf("uploading %s: %w", name, err)
	}
	return nil
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".json":
		return "application/json"
	case ".xml":
		return "application/xml"
	case ".txt", ".log":
		return "text/plain; charset=utf-8"
	}
	return "" // detected from the content
}

// updateLatest moves the job's latest-build.txt forward to its newest
// finished build. Without a compare-and-swap, a publisher that read the
// listing earlier could overwrite a newer id with an older one; so each
// publisher, after writing, lists and reads again until latest-build.txt
// names the newest finished build it can see. The last writer's own check
// sees every build that finished before it, so the file converges on the
// newest. Readers of this package list builds and never rely on the file;
// it is there for Prow's tools.
func (s *Store) updateLatest(ctx context.Context, job string) error {
	key := LogsPrefix + job + "/" + LatestBuildFile
	for i := 0; i < 10; i++ {
		newest, err := s.newestFinished(ctx, job)
		if err != nil {
			return err
		}
		cur, err := s.LatestBuild(ctx, job)
		if err != nil {
			return err
		}
		if newest == "" || (cur != "" && !lessID(cur, newest)) {
			return nil
		}
		if err := s.bucket.WriteAll(ctx, key, []byte(newest), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
			return fmt.Errorf("writing %s: %w", s.Location(key), err)
		}
	}
	return fmt.Errorf("%s kept changing", s.Location(key))
}

// newestFinished is the job's newest build that has a finished.json.
func (s *Store) newestFinished(ctx context.Context, job string) (string, error) {
	ids, err := s.Builds(ctx, job)
	if err != nil {
		return "", err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		ok, err := s.bucket.Exists(ctx, Build{Job: job, ID: ids[i]}.Key(prow.FinishedFile))
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", s.Location(Build{Job: job, ID: ids[i]}.Key(prow.FinishedFile)), err)
		}
		if ok {
			return ids[i], nil
		}
	}
	return "", nil
}

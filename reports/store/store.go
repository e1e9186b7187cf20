// Package store is the results store: published run directories laid out
// like a Prow bucket, so that TestGrid, Spyglass and this harness's LKG
// rules and dashboard can all read them.
//
//	logs/<job>/<build-id>/started.json
//	logs/<job>/<build-id>/finished.json
//	logs/<job>/<build-id>/build-log.txt
//	logs/<job>/<build-id>/artifacts/...
//	logs/<job>/latest-build.txt
//
// A job is one provider's results (JobName); a build id is a 19-digit
// number, the run's start in UTC (yyyymmddhhmmss) and five random digits,
// so ids sort by time, as text and as numbers. A store is addressed by URL
// through gocloud.dev/blob: a plain path or file:///dir (the default kind),
// gs://bucket[/prefix], s3://bucket[/prefix]?region=..., mem:// (tests).
// See docs/results-store.md.
//
// Floor: the reports. They stand on the leaves and each other, not on the
// framework, so that reading and judging results builds no harness;
// testsupport/floors holds that.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob" // gs:// URLs
	_ "gocloud.dev/blob/memblob" // mem:// URLs
	_ "gocloud.dev/blob/s3blob"  // s3:// URLs
	"gocloud.dev/gcerrors"
)

// Layout of a store.
const (
	// LogsPrefix holds the jobs, as in a Prow bucket.
	LogsPrefix = "logs/"
	// LatestBuildFile, under a job, names the newest finished build.
	LatestBuildFile = "latest-build.txt"
	// JobPrefix starts the name of every job this harness publishes.
	JobPrefix = "ccm-conformance-"
)

// Store is an open results store. Its methods are safe for concurrent use.
type Store struct {
	bucket  *blob.Bucket
	display string // the store's URL as shown in messages, without a query
	local   string // the root directory of a file store, else ""
	randMu  sync.Mutex
	rand    io.Reader
	create  bool
}

// Option configures Open.
type Option func(*Store)

// WithRandom sets where build ids take their random digits from. Default
// crypto/rand.
func WithRandom(r io.Reader) Option { return func(s *Store) { s.rand = r } }

// WithCreate creates a file store's directory if it does not exist
// (publishing does; reading does not).
func WithCreate() Option { return func(s *Store) { s.create = true } }

// Open opens the store at rawURL: a plain path, file:///dir, file://./dir,
// gs://bucket[/prefix], s3://bucket[/prefix][?region=...] or mem://. gs://
// honours STORAGE_EMULATOR_HOST. A file store that does not exist is an
// error unless WithCreate is given.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	s := &Store{}
	for _, o := range opts {
		o(s)
	}
	if rawURL == "" {
		return nil, errors.New("empty store URL")
	}
	if !strings.Contains(rawURL, "://") {
		return s, s.openLocal(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %w", rawURL, err)
	}
	if u.Scheme == "file" {
		dir := u.Path
		switch u.Host {
		case "", "localhost":
		case ".":
			dir = "." + dir
		default:
			return nil, fmt.Errorf("store URL %q: a file URL names no host (file:///dir or file://./dir)", rawURL)
		}
		if dir == "" {
			return nil, fmt.Errorf("store URL %q: no directory", rawURL)
		}
		return s, s.openLocal(dir)
	}
	prefix := strings.Trim(u.Path, "/")
	u.Path = ""
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", rawURL, err)
	}
	display := u.Scheme + "://" + u.Host
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
		display += "/" + prefix
	}
	s.bucket, s.display = b, display
	return s, nil
}

func (s *Store) openLocal(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("store %s: %w", dir, err)
	}
	if !s.create {
		info, err := os.Stat(abs)
		if err != nil {
			return fmt.Errorf("store %s: %w", dir, err)
		}
		if !info.IsDir() {
			return fmt.Errorf("store %s: not a directory", dir)
		}
	}
	b, err := fileblob.OpenBucket(abs, &fileblob.Options{
		CreateDir: s.create,
		// Temporary files beside their object, so that the rename that
		// publishes an object never crosses file systems.
		NoTempDir: true,
		// The store holds the run directory's files and nothing else.
		Metadata: fileblob.MetadataDontWrite,
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", dir, err)
	}
	s.bucket, s.local, s.display = b, abs, abs
	return nil
}

// Close releases the store.
func (s *Store) Close() error { return s.bucket.Close() }

// String is the store's URL (a directory for a file store).
func (s *Store) String() string { return s.display }

// Location is where a key of the store is, for messages: a file path for a
// file store, a URL otherwise.
func (s *Store) Location(key string) string {
	if s.local != "" {
		return filepath.Join(s.local, filepath.FromSlash(key))
	}
	return s.display + "/" + key
}

var unsafeJobChars = regexp.MustCompile(`[^a-z0-9-]+`)

// JobName is the job a provider's runs are published under:
// "ccm-conformance-<provider>", lower case, with anything but letters,
// digits and "-" replaced by "-".
func JobName(provider string) string {
	p := strings.Trim(unsafeJobChars.ReplaceAllString(strings.ToLower(provider), "-"), "-")
	return JobPrefix + p
}

// ProviderOf is the provider part of a job name, and whether the job is
// one of this harness's.
func ProviderOf(job string) (string, bool) {
	p, ok := strings.CutPrefix(job, JobPrefix)
	return p, ok && p != ""
}

// Build names one published run.
type Build struct {
	Job string `json:"job"`
	ID  string `json:"buildID"`
}

// Prefix is the key prefix of the build's files.
func (b Build) Prefix() string { return LogsPrefix + b.Job + "/" + b.ID + "/" }

// Key is the key of one of the build's files, by its path in the run
// directory (for example "artifacts/specs.json").
func (b Build) Key(name string) string { return b.Prefix() + name }

// Jobs lists the jobs in the store that this harness published
// (JobPrefix), sorted.
func (s *Store) Jobs(ctx context.Context) ([]string, error) {
	dirs, err := s.listDirs(ctx, LogsPrefix)
	if err != nil {
		return nil, err
	}
	var jobs []string
	for _, d := range dirs {
		if _, ok := ProviderOf(d); ok {
			jobs = append(jobs, d)
		}
	}
	return jobs, nil
}

// Builds lists a job's build ids, oldest first.
func (s *Store) Builds(ctx context.Context, job string) ([]string, error) {
	ids, err := s.listDirs(ctx, LogsPrefix+job+"/")
	if err != nil {
		return nil, err
	}
	sort.Slice(ids, func(i, j int) bool { return lessID(ids[i], ids[j]) })
	return ids, nil
}

// LatestBuild reads a job's latest-build.txt; "" if there is none.
func (s *Store) LatestBuild(ctx context.Context, job string) (string, error) {
	data, err := s.bucket.ReadAll(ctx, LogsPrefix+job+"/"+LatestBuildFile)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", s.Location(LogsPrefix+job+"/"+LatestBuildFile), err)
	}
	return strings.TrimSpace(string(data)), nil
}

// ReadFile reads one file of a build, by its path in the run directory.
// A missing file is an error for which errors.Is(err, os.ErrNotExist).
func (s *Store) ReadFile(ctx context.Context, b Build, name string) ([]byte, error) {
	key := b.Key(name)
	data, err := s.bucket.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%s: %w", s.Location(key), os.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Location(key), err)
	}
	return data, nil
}

// ListFiles lists a build's files, by their paths in the run directory.
func (s *Store) ListFiles(ctx context.Context, b Build) ([]string, error) {
	var names []string
	it := s.bucket.List(&blob.ListOptions{Prefix: b.Prefix()})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", s.Location(b.Prefix()), err)
		}
		if !obj.IsDir && !isTempName(obj.Key) {
			names = append(names, strings.TrimPrefix(obj.Key, b.Prefix()))
		}
	}
	sort.Strings(names)
	return names, nil
}

// listDirs lists the "directories" right under prefix, without it and
// without the trailing "/".
func (s *Store) listDirs(ctx context.Context, prefix string) ([]string, error) {
	if s.local != "" {
		// fileblob lists by walking the whole tree below prefix, and fails
		// on the temporary file of a write that finishes meanwhile; reading
		// one directory is all that is needed here.
		return s.listLocalDirs(prefix)
	}
	var out []string
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", s.Location(prefix), err)
		}
		if obj.IsDir {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/"))
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *Store) listLocalDirs(prefix string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.local, filepath.FromSlash(prefix)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.Location(prefix), err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// isTempName tells the temporary files of writes in progress (a file
// store's, and the prow package's) from objects.
func isTempName(key string) bool {
	base := key[strings.LastIndex(key, "/")+1:]
	return strings.HasSuffix(base, ".tmp")
}

// lessID orders build ids: numerically when both are numbers (Prow's ids
// and ours), as text otherwise.
func lessID(a, b string) bool {
	an, bn := isDigits(a), isDigits(b)
	if an && bn {
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(a) != len(b) {
			return len(a) < len(b)
		}
	}
	return a < b
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir/rundirtest"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
	"github.com/ccm-conformance/ccm-conformance/reports/store/storetest"
)

var t0 = time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)

func run(provider string, started time.Time, states ...types.SpecState) rundirtest.Run {
	r := rundirtest.Run{Provider: provider, KubernetesVersion: "v1.37.2", KubernetesCommit: "abc", CCMDigest: "sha256:01", CCMModule: "k8s.io/cloud-provider-vsphere@v1.36.0", CCMCloudProvider: "v0.36.0", Started: started}
	for i, s := range states {
		r.Specs = append(r.Specs, rundirtest.Spec{Suite: "nodeaddress", Text: fmt.Sprintf("spec %d", i), Labels: []string{"ReleaseBlocking"}, State: s})
	}
	return r
}

// stores returns the kinds of store every behaviour is checked on: a
// directory by plain path, a file:// URL, a gs:// bucket in a GCS emulator
// and an s3:// bucket in an S3 emulator (both with a prefix), and memory.
func stores(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"path":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "results") },
		"file":   func(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "results") },
		"gs":     func(t *testing.T) string { return storetest.FakeGCS(t, "results") + "/ci" },
		"s3":     func(t *testing.T) string { return storetest.FakeS3(t, "results", "ci") },
		"memory": func(t *testing.T) string { return "mem://" },
	}
}

func open(t *testing.T, url string, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, append(opts, store.WithCreate())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestPublishAndRead(t *testing.T) {
	for kind, newURL := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t, newURL(t))
			var builds []store.Build
			for i, r := range []rundirtest.Run{
				run("reference", t0, types.SpecStatePassed),
				run("reference", t0.Add(time.Hour), types.SpecStatePassed, types.SpecStateFailed),
				run("Other Cloud", t0.Add(2*time.Hour), types.SpecStatePassed),
			} {
				b := rundirtest.Publish(t, st, r)
				if len(b.ID) != 19 || !strings.HasPrefix(b.ID, r.Started.Format("20060102150405")) {
					t.Errorf("run %d: build id %q does not start with the run's start time", i, b.ID)
				}
				builds = append(builds, b)
			}
			jobs, err := st.Jobs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(jobs, ",") != "ccm-conformance-other-cloud,ccm-conformance-reference" {
				t.Errorf("jobs %v", jobs)
			}
			if latest, err := st.LatestBuild(ctx, "ccm-conformance-reference"); err != nil || latest != builds[1].ID {
				t.Errorf("latest-build.txt %q (%v), want %s", latest, err, builds[1].ID)
			}
			snap, err := st.ReadAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Problems) != 0 || len(snap.Runs) != 3 {
				t.Fatalf("%d runs, problems %v", len(snap.Runs), snap.Problems)
			}
			r := snap.Runs[2]
			if r.Build != builds[1] || r.Provider != "reference" || r.Passed || r.Result != prow.ResultFailure ||
				r.KubernetesVersion != "v1.37.2" || r.CCMDigest != "sha256:01" || !r.Started.Equal(t0.Add(time.Hour)) ||
				r.CCMModule != "k8s.io/cloud-provider-vsphere@v1.36.0" || r.CCMCloudProvider != "v0.36.0" ||
				r.Specs == nil || len(r.Specs.Specs) != 2 {
				t.Errorf("run read back wrong: %+v", r)
			}
			files, err := st.ListFiles(ctx, builds[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"started.json", "finished.json", "artifacts/junit_nodeaddress_01.xml", "artifacts/specs.json", "artifacts/timings.json", "artifacts/metadata.json"} {
				if !contains(files, want) {
					t.Errorf("published files %v lack %s", files, want)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Publishers writing at once, with build ids made to collide (the same
// start second and only 64 random values), lose no run.
func TestConcurrentPublishers(t *testing.T) {
	for kind, newURL := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			url := newURL(t)
			const publishers, each = 6, 4
			dirs := make([]string, publishers*each)
			for i := range dirs {
				dirs[i] = t.TempDir()
				rundirtest.WriteRunDir(t, dirs[i], run("reference", t0, types.SpecStatePassed))
			}
			var wg sync.WaitGroup
			errs := make(chan error, len(dirs))
			ids := make(chan string, len(dirs))
			var first *store.Store
			for p := 0; p < publishers; p++ {
				// Each publisher opens its own store, as separate
				// processes would (the memory store is one per process,
				// so there they share it).
				st := open(t, url, store.WithRandom(&collidingRandom{rand.New(rand.NewSource(int64(p)))}))
				if kind == "memory" {
					if first == nil {
						first = st
					}
					st = first
				}
				wg.Add(1)
				go func(p int, st *store.Store) {
					defer wg.Done()
					for i := 0; i < each; i++ {
						b, err := st.Publish(ctx, dirs[p*each+i])
						if err != nil {
							errs <- err
							continue
						}
						ids <- b.ID
					}
				}(p, st)
			}
			wg.Wait()
			close(errs)
			close(ids)
			for err := range errs {
				t.Error(err)
			}
			seen := map[string]bool{}
			for id := range ids {
				if seen[id] {
					t.Errorf("build id %s given out twice", id)
				}
				seen[id] = true
			}
			reader := open(t, url)
			if kind == "memory" {
				reader = first
			}
			snap, err := reader.ReadAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Runs) != len(dirs) || len(snap.Problems) != 0 {
				t.Errorf("%d runs in the store, want %d; problems %v", len(snap.Runs), len(dirs), snap.Problems)
			}
			all := make([]string, 0, len(seen))
			for id := range seen {
				all = append(all, id)
			}
			sort.Strings(all)
			if latest, _ := reader.LatestBuild(ctx, "ccm-conformance-reference"); len(all) > 0 && latest != all[len(all)-1] {
				t.Errorf("latest-build.txt %s, want the newest build %s", latest, all[len(all)-1])
			}
		})
	}
}

// collidingRandom makes crypto/rand.Int(r, 100000) return one of 64 values.
type collidingRandom struct{ r *rand.Rand }

func (c *collidingRandom) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	if len(p) > 0 {
		p[len(p)-1] = byte(c.r.Intn(64))
	}
	return len(p), nil
}

// A corrupt, truncated or half-published record is reported with its path
// and skipped; the other runs are read.
func TestReadAllSkipsBrokenRecords(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "results")
	st := open(t, root)
	good := rundirtest.Publish(t, st, run("reference", t0, types.SpecStatePassed))
	broken := map[string]struct {
		file, content string
		want          string
	}{
		"truncated finished":    {"finished.json", `{"timestamp": 17959`, "finished.json"},
		"no finished":           {"finished.json", "", "still being published"},
		"corrupt specs":         {"artifacts/specs.json", `{"version": 1, "specs": [`, "specs.json"},
		"specs from the future": {"artifacts/specs.json", `{"version": 99, "specs": []}`, "unsupported specs.json version"},
		"empty started":         {"started.json", ``, "started.json"},
	}
	for name, b := range broken {
		build := rundirtest.Publish(t, st, run("reference", t0.Add(time.Hour), types.SpecStatePassed))
		p := filepath.Join(root, "logs", build.Job, build.ID, filepath.FromSlash(b.file))
		var err error
		if b.content == "" && b.file == "finished.json" {
			err = os.Remove(p)
		} else {
			err = os.WriteFile(p, []byte(b.content), 0o644)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// A job that is not this harness's is ignored.
	if err := os.MkdirAll(filepath.Join(root, "logs", "some-other-job", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	snap, err := st.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Runs) != 1 || snap.Runs[0].Build != good {
		t.Errorf("runs %v, want only %v", snap.Runs, good)
	}
	if len(snap.Problems) != len(broken) {
		t.Errorf("%d problems, want %d: %v", len(snap.Problems), len(broken), snap.Problems)
	}
	for name, b := range broken {
		found := false
		for _, p := range snap.Problems {
			if strings.HasPrefix(p.Path, root) && strings.HasSuffix(p.Path, b.file) && strings.Contains(p.String(), b.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no problem naming %s and %q in %v", name, b.file, b.want, snap.Problems)
		}
	}
}

func TestPublishRejectsInvalidRunDirectory(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "results"))
	_, err := st.Publish(context.Background(), filepath.Join("..", "prow", "testdata", "invalid-no-finished"))
	var ie *store.InvalidRunError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "finished.json: missing") {
		t.Errorf("error %v, want an InvalidRunError naming finished.json", err)
	}
	// A valid directory whose metadata names no provider.
	_, err = st.Publish(context.Background(), filepath.Join("..", "prow", "testdata", "valid-no-result-field"))
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "provider") {
		t.Errorf("error %v, want an InvalidRunError about the provider", err)
	}
	if _, err := st.Publish(context.Background(), filepath.Join(t.TempDir(), "missing")); err == nil || errors.As(err, &ie) {
		t.Errorf("error %v for a missing directory", err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url     string
		opts    []store.Option
		wantErr string
		want    string
	}{
		{url: dir, want: dir},
		{url: "file://" + dir, want: dir},
		{url: "file://localhost" + dir, want: dir},
		{url: filepath.Join(dir, "new"), opts: []store.Option{store.WithCreate()}, want: filepath.Join(dir, "new")},
		{url: filepath.Join(dir, "missing"), wantErr: "no such file"},
		{url: file, wantErr: "not a directory"},
		{url: "file://host/x", wantErr: "names no host"},
		{url: "", wantErr: "empty store URL"},
		{url: "ftp://bucket", wantErr: "ftp"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			st, err := store.Open(context.Background(), tt.url, tt.opts...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.String() != tt.want {
				t.Errorf("store %s, want %s", st, tt.want)
			}
		})
	}
}

func TestJobName(t *testing.T) {
	for provider, want := range map[string]string{
		"reference":   "ccm-conformance-reference",
		"Other Cloud": "ccm-conformance-other-cloud",
		"a_b/c":       "ccm-conformance-a-b-c",
	} {
		if got := store.JobName(provider); got != want {
			t.Errorf("JobName(%q) = %q, want %q", provider, got, want)
		}
		if p, ok := store.ProviderOf(want); !ok || store.JobName(p) != want {
			t.Errorf("ProviderOf(%q) = %q, %v", want, p, ok)
		}
	}
	if _, ok := store.ProviderOf("periodic-kind"); ok {
		t.Error("a job of another harness is taken for one of ours")
	}
}

// Claiming a build id in a bucket relies on if-not-exists writes, not on
// the check-then-write fallback: both emulators must refuse a second
// create of one key, as GCS and S3 do.
func TestBucketsRefuseASecondCreate(t *testing.T) {
	for kind, newURL := range map[string]func(t *testing.T) string{
		"gs": func(t *testing.T) string { return storetest.FakeGCS(t, "results") },
		"s3": func(t *testing.T) string { return storetest.FakeS3(t, "results", "") },
	} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			b, err := blob.OpenBucket(ctx, newURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			opts := &blob.WriterOptions{IfNotExist: true}
			if err := b.WriteAll(ctx, "logs/job/1/started.json", []byte("first"), opts); err != nil {
				t.Fatalf("first create: %v", err)
			}
			err = b.WriteAll(ctx, "logs/job/1/started.json", []byte("second"), opts)
			if code := gcerrors.Code(err); code != gcerrors.FailedPrecondition {
				t.Fatalf("second create: error %v (code %v), want FailedPrecondition", err, code)
			}
			if got, err := b.ReadAll(ctx, "logs/job/1/started.json"); err != nil || string(got) != "first" {
				t.Errorf("object = %q, %v; want the first write kept", got, err)
			}
		})
	}
}

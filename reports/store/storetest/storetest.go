// Package storetest starts the emulators of results stores' buckets for
// tests, on loopback and in process: fake-gcs-server for gs:// stores and
// gofakes3 for s3:// stores. Seeding a store with runs is
// reports/rundir/rundirtest's; this package stands on nothing of the
// harness.
//
// Floor: the reports. They stand on the leaves and each other, not on the
// framework, so that reading and judging results builds no harness;
// testsupport/floors holds that.
package storetest

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// FakeGCS starts a GCS emulator on loopback with the bucket, points the Go
// storage client at it (STORAGE_EMULATOR_HOST, so the test must not be
// parallel), and returns the bucket's gs:// URL. The emulator stops when
// the test ends.
func FakeGCS(t testing.TB, bucket string) string {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http",
		Host:   "127.0.0.1",
		// The Go client reads objects through the XML API at
		// STORAGE_EMULATOR_HOST; the emulator serves that API on its
		// public host only.
		PublicHost: "127.0.0.1",
		Writer:     discard{},
	})
	if err != nil {
		t.Fatalf("starting fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	return "gs://" + bucket
}

// FakeS3 starts an S3 emulator on loopback with the bucket, gives the AWS
// SDK static credentials and no shared config (environment variables, so
// the test must not be parallel), and returns the s3:// URL of prefix in
// the bucket (no prefix when it is empty), with the query that points
// gocloud's s3blob at the emulator. The emulator stops when the test ends.
func FakeS3(t testing.TB, bucket, prefix string) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatalf("creating bucket %s in the S3 emulator: %v", bucket, err)
	}
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "ccm-conformance-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ccm-conformance-test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	q := url.Values{}
	q.Set("endpoint", srv.URL)
	q.Set("region", "us-east-1")
	q.Set("use_path_style", "true")
	u := url.URL{Scheme: "s3", Host: bucket, RawQuery: q.Encode()}
	if prefix != "" {
		u.Path = "/" + prefix
	}
	return u.String()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

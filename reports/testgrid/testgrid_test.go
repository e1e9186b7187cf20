package testgrid

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir/rundirtest"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// parsed is the part of TestGrid's configuration the snippet sets, with
// TestGrid's field names (config.proto).
type parsed struct {
	TestGroups []struct {
		Name                   string `json:"name"`
		GCSPrefix              string `json:"gcs_prefix"`
		DisableProwjobAnalysis bool   `json:"disable_prowjob_analysis"`
		ColumnHeader           []struct {
			ConfigurationValue string `json:"configuration_value"`
		} `json:"column_header"`
	} `json:"test_groups"`
	Dashboards []struct {
		Name         string `json:"name"`
		DashboardTab []struct {
			Name          string `json:"name"`
			TestGroupName string `json:"test_group_name"`
			Description   string `json:"description"`
			AlertOptions  struct {
				AlertStaleResultsHours int `json:"alert_stale_results_hours"`
				NumFailuresToAlert     int `json:"num_failures_to_alert"`
			} `json:"alert_options"`
		} `json:"dashboard_tab"`
	} `json:"dashboards"`
}

func TestConfigValid(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		wantPrefix string
		wantGroup  string
		// wantNoProwjob: disable_prowjob_analysis is set, for a store that
		// publish writes (no Prow, no prowjob.json); a Prow job's bucket
		// has Prow's files and leaves it unset.
		wantNoProwjob bool
	}{
		{"valid-bucket", Options{Provider: "aws", Bucket: "gs://ccm-results"}, "ccm-results/logs/ccm-conformance-aws", "ccm-conformance-aws", true},
		{"valid-prefix", Options{Provider: "reference", Bucket: "gs://sig-cloud-provider/ccm/results/", Dashboard: "provider-reference"}, "sig-cloud-provider/ccm/results/logs/ccm-conformance-reference", "ccm-conformance-reference", true},
		{"valid-prow-job", Options{Provider: "My Cloud", Bucket: "gs://kubernetes-jenkins", Job: "ci-my-cloud-ccm-conformance", StaleAfter: 24 * time.Hour, FailuresToAlert: 2}, "kubernetes-jenkins/logs/ci-my-cloud-ccm-conformance", "ci-my-cloud-ccm-conformance", false},
		{"valid-job-as-published", Options{Provider: "aws", Bucket: "gs://ccm-results", Job: "ccm-conformance-aws"}, "ccm-results/logs/ccm-conformance-aws", "ccm-conformance-aws", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Config(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			goldenName := tt.name
			if goldenName == "valid-job-as-published" {
				goldenName = "valid-bucket" // --job naming publish's job changes nothing
			}
			golden(t, filepath.Join("testdata", goldenName+".yaml"), string(out))

			var p parsed
			if err := yaml.UnmarshalStrict(out, &p); err != nil {
				t.Fatalf("the snippet is not the YAML TestGrid reads: %v\n%s", err, out)
			}
			if len(p.TestGroups) != 1 || len(p.Dashboards) != 1 || len(p.Dashboards[0].DashboardTab) != 1 {
				t.Fatalf("want one test group and one tab:\n%s", out)
			}
			g, tab := p.TestGroups[0], p.Dashboards[0].DashboardTab[0]
			if g.Name != tt.wantGroup || tab.TestGroupName != g.Name {
				t.Errorf("test group %q, tab's test_group_name %q, want %q", g.Name, tab.TestGroupName, tt.wantGroup)
			}
			if g.GCSPrefix != tt.wantPrefix {
				t.Errorf("gcs_prefix %q, want %q", g.GCSPrefix, tt.wantPrefix)
			}
			if g.DisableProwjobAnalysis != tt.wantNoProwjob {
				t.Errorf("disable_prowjob_analysis %v, want %v", g.DisableProwjobAnalysis, tt.wantNoProwjob)
			}
			if set := strings.Contains(string(out), "disable_prowjob_analysis:"); set != tt.wantNoProwjob {
				t.Errorf("disable_prowjob_analysis written: %v, want %v:\n%s", set, tt.wantNoProwjob, out)
			}
			var headers []string
			for _, h := range g.ColumnHeader {
				headers = append(headers, h.ConfigurationValue)
			}
			if got := strings.Join(headers, ","); got != "kubernetes-version,ccm-digest,ccm-image" {
				t.Errorf("column headers %s", got)
			}
		})
	}
}

func TestConfigInvalid(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no provider", Options{Bucket: "gs://b-1"}, "no provider"},
		{"provider of symbols", Options{Provider: "!!!", Bucket: "gs://b-1"}, "no letter or digit"},
		{"not gs", Options{Provider: "p", Bucket: "s3://bucket"}, "gs://"},
		{"bad bucket", Options{Provider: "p", Bucket: "gs://Bad_Bucket"}, "not a GCS bucket name"},
		{"bad prefix", Options{Provider: "p", Bucket: "gs://bucket/a b"}, "prefix"},
		{"bad job", Options{Provider: "p", Bucket: "gs://bucket", Job: "a: b"}, "job"},
		{"bad dashboard", Options{Provider: "p", Bucket: "gs://bucket", Dashboard: "#x"}, "dashboard"},
		{"stale under an hour", Options{Provider: "p", Bucket: "gs://bucket", StaleAfter: time.Minute}, "hours"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Config(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test -update rewrites it):\n%s", path, got)
	}
}

// Every key the configuration heads columns with is in the metadata of
// every published finished.json, empty where the run does not know it:
// TestGrid shows "missing" for an absent key of a finished run, and an
// empty header cell for an empty one.
func TestPublishedRunsCarryTheColumnHeaders(t *testing.T) {
	out, err := Config(Options{Provider: "aws", Bucket: "gs://ccm-results"})
	if err != nil {
		t.Fatal(err)
	}
	var p parsed
	if err := yaml.UnmarshalStrict(out, &p); err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, h := range p.TestGroups[0].ColumnHeader {
		headers = append(headers, h.ConfigurationValue)
	}

	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Open(context.Background(), dir, store.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	started := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		run  rundirtest.Run
		// want are the header values the published finished.json has.
		want map[string]string
	}{
		{"a binary CCM", rundirtest.Run{Provider: "aws", KubernetesVersion: "v1.37.2", CCMDigest: "sha256:c1",
			Specs: []rundirtest.Spec{{Suite: "nodeaddress", Text: "initializes nodes"}}},
			map[string]string{prow.MetaKubernetesVersion: "v1.37.2", prow.MetaCCMDigest: "sha256:c1", prow.MetaCCMImage: ""}},
		{"a deployed CCM", rundirtest.Run{Provider: "aws", KubernetesVersion: "v1.37.2", CCMDigest: "sha256:c2",
			Metadata: map[string]string{prow.MetaCCMImage: "registry.example/ccm:v2"},
			Specs:    []rundirtest.Spec{{Suite: "nodeaddress", Text: "initializes nodes"}}},
			map[string]string{prow.MetaKubernetesVersion: "v1.37.2", prow.MetaCCMDigest: "sha256:c2", prow.MetaCCMImage: "registry.example/ccm:v2"}},
		{"the cluster never came up", rundirtest.Run{Provider: "aws", Err: &runner.SetupError{Step: "local cluster", Err: errors.New("etcd did not start")}},
			map[string]string{prow.MetaKubernetesVersion: "", prow.MetaCCMDigest: "", prow.MetaCCMImage: ""}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run.Started = started.Add(time.Duration(i) * time.Hour)
			b := rundirtest.Publish(t, st, tt.run)
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(b.Key(prow.FinishedFile))))
			if err != nil {
				t.Fatal(err)
			}
			f, err := prow.DecodeFinished(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range headers {
				v, ok := f.Metadata[h].(string)
				if !ok {
					t.Errorf("published finished.json has no string %q, TestGrid would show \"missing\": %v", h, f.Metadata)
					continue
				}
				if want, known := tt.want[h]; !known || v != want {
					t.Errorf("published %s = %q, want %q", h, v, want)
				}
			}
		})
	}
}

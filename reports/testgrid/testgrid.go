// Package testgrid writes the TestGrid configuration that shows a
// provider's results from a results store (or a Prow job's bucket): a test
// group reading the job's runs and a dashboard tab showing it. Field names
// are TestGrid's (its config.proto: TestGroup, DashboardTab).
//
// Floor: the reports. They stand on the leaves and each other, not on the
// framework, so that reading and judging results builds no harness;
// testsupport/floors holds that.
package testgrid

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// DefaultDashboard is the dashboard the tab goes on unless Options names
// another.
const DefaultDashboard = "sig-cloud-provider-ccm-conformance"

// Options say what to configure.
type Options struct {
	// Provider is the profile's name. Required.
	Provider string
	// Bucket is where the runs are: gs://bucket[/prefix], the store URL
	// that `ccm-conformance publish --store` was given. Required.
	Bucket string
	// Job is the job under the bucket's logs/. Default
	// store.JobName(Provider), what publish uses; a Prow job's name when
	// Prow uploads the results.
	Job string
	// Dashboard is the dashboard the tab goes on. Default DefaultDashboard.
	Dashboard string
	// StaleAfter raises TestGrid's stale-results alert. Default
	// lkg.DefaultStaleAfter, the LKG rules' limit.
	StaleAfter time.Duration
	// FailuresToAlert is how many consecutive failures raise an alert.
	// Default lkg.DefaultStreak.
	FailuresToAlert int
}

var (
	// GCS bucket names: lower case letters, digits, -, _ and ., 3 to 222
	// characters.
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)
	// Object prefixes and names that need no quoting in YAML.
	plainPath = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)
	plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// config is what the template gets.
type config struct {
	Options
	GCSPrefix    string
	TabName      string
	StaleHours   int
	Headers      []string
	PublishStore string
	// Published is true when the job is the one publish writes, false for
	// a Prow job, whose runs Prow uploads.
	Published bool
}

var snippet = template.Must(template.New("testgrid").Parse(`# TestGrid configuration for the CCM conformance results of provider {{.Provider}},
# written by ccm-conformance testgrid-config. It reads the runs under
# gs://{{.GCSPrefix}}/,
{{- if .Published}} where
#   ccm-conformance publish --store {{.PublishStore}} DIR
# puts them.
{{- else}}
# where Prow uploads the runs of job {{.Job}}.
{{- end}}
# Add the test group and the tab to a TestGrid configuration, such as
# kubernetes/test-infra's config/testgrids/.
test_groups:
- name: {{.Job}}
  gcs_prefix: {{.GCSPrefix}}
{{- if .Published}}
  # Runs that publish uploads have no prowjob.json or podinfo.json, which
  # Prow writes; without this setting TestGrid adds a "Pod" row whose
  # cells show "!", as still running for an hour after each run finished
  # and as passed with skips after that.
  disable_prowjob_analysis: true
{{- else}}
  # Prow uploads each run with its prowjob.json and podinfo.json, so
  # disable_prowjob_analysis is left unset: TestGrid's "Pod" row shows how
  # each run's pod went.
{{- end}}
  # Each column is headed by what the run tested, from finished.json's
  # metadata: the Kubernetes version, the CCM's digest, and its image when
  # the CCM was deployed in the cluster. Every run carries the three keys,
  # empty when it does not know one, so a header cell is empty, never
  # "missing".
  column_header:
{{- range .Headers}}
  - configuration_value: {{.}}
{{- end}}
dashboards:
- name: {{.Dashboard}}
  dashboard_tab:
  - name: {{.TabName}}
    test_group_name: {{.Job}}
    description: CCM conformance of the {{.Provider}} cloud-controller-manager (ccm-conformance)
    alert_options:
      alert_stale_results_hours: {{.StaleHours}}
      num_failures_to_alert: {{.FailuresToAlert}}
`))

// Config writes the YAML snippet: a test group reading the job's runs from
// the bucket and a dashboard tab showing it.
func Config(o Options) ([]byte, error) {
	if o.Provider == "" {
		return nil, fmt.Errorf("no provider")
	}
	job := store.JobName(o.Provider)
	provider, ok := store.ProviderOf(job)
	if !ok {
		return nil, fmt.Errorf("provider %q: no letter or digit to name its job by", o.Provider)
	}
	// The provider as its job names it: safe in YAML and in a tab name.
	o.Provider = provider
	if o.Job == "" {
		o.Job = job
	}
	published := o.Job == job
	if o.Dashboard == "" {
		o.Dashboard = DefaultDashboard
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = lkg.DefaultStaleAfter
	}
	if o.FailuresToAlert == 0 {
		o.FailuresToAlert = lkg.DefaultStreak
	}
	switch {
	case !plainName.MatchString(o.Job):
		return nil, fmt.Errorf("job %q: want letters, digits, '.', '_' and '-'", o.Job)
	case !plainName.MatchString(o.Dashboard):
		return nil, fmt.Errorf("dashboard %q: want letters, digits, '.', '_' and '-'", o.Dashboard)
	case o.StaleAfter < time.Hour:
		return nil, fmt.Errorf("stale-after %s: TestGrid counts in hours; want at least 1h", o.StaleAfter)
	case o.FailuresToAlert < 0:
		return nil, fmt.Errorf("failures to alert %d: want a positive number", o.FailuresToAlert)
	}
	bucket, prefix, err := parseBucket(o.Bucket)
	if err != nil {
		return nil, err
	}
	c := config{
		Options:      o,
		TabName:      provider,
		StaleHours:   int(o.StaleAfter.Round(time.Hour) / time.Hour),
		Headers:      prow.ColumnHeaderKeys(),
		Published:    published,
		PublishStore: "gs://" + strings.TrimSuffix(bucket+"/"+prefix, "/"),
	}
	c.GCSPrefix = strings.TrimPrefix(c.PublishStore, "gs://") + "/" + store.LogsPrefix + o.Job
	var buf bytes.Buffer
	if err := snippet.Execute(&buf, c); err != nil {
		return nil, fmt.Errorf("testgrid config: %w", err)
	}
	return buf.Bytes(), nil
}

// parseBucket splits gs://bucket[/prefix]. TestGrid reads GCS only.
func parseBucket(url string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(url, "gs://")
	if !ok {
		return "", "", fmt.Errorf("bucket %q: want gs://bucket[/prefix] (TestGrid reads results from GCS)", url)
	}
	bucket, prefix, _ = strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if !bucketName.MatchString(bucket) {
		return "", "", fmt.Errorf("bucket %q: %q is not a GCS bucket name", url, bucket)
	}
	if prefix != "" && !plainPath.MatchString(prefix) {
		return "", "", fmt.Errorf("bucket %q: prefix %q: want letters, digits, '.', '_', '-' and '/'", url, prefix)
	}
	return bucket, prefix, nil
}

package app

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/testgrid"
)

func newTestGridConfigCommand(stdout io.Writer) *cobra.Command {
	var opts testgrid.Options
	cmd := &cobra.Command{
		Use:   "testgrid-config --provider P --bucket gs://BUCKET[/PREFIX]",
		Short: "Print the TestGrid test group and dashboard tab for a provider's results bucket",
		Long: `testgrid-config prints a YAML snippet for a TestGrid configuration: a test
group that reads a provider's runs from the bucket they are published to
(gcs_prefix BUCKET/PREFIX/logs/<job>), with columns headed by the Kubernetes
version, the CCM digest and the CCM image from each run's finished.json;
for a store that publish writes, disable_prowjob_analysis is set, since
those runs have no prowjob.json or podinfo.json (TestGrid would otherwise
add a "Pod" row of "!" cells, running and then passed with skips), while
for a Prow job (--job) it is left unset; and a dashboard tab showing the
group, alerting when results are older than --stale-after or fail
--failures-to-alert times in a row.

--provider is the profile's name; the job is ccm-conformance-<provider>, as
'publish' writes it, unless --job names a Prow job whose runs Prow uploads. Exit codes: 0 printed,
2 bad flags.`,
		Example: `  ccm-conformance testgrid-config --provider aws --bucket gs://ccm-results
  ccm-conformance testgrid-config --provider aws --bucket gs://kubernetes-jenkins --job ci-aws-ccm-conformance --dashboard provider-aws`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := testgrid.Config(opts)
			if err != nil {
				return badInput(fmt.Errorf("testgrid-config: %w", err))
			}
			_, err = stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "the provider's name (its profile's name)")
	cmd.Flags().StringVar(&opts.Bucket, "bucket", "", "where its runs are published: gs://bucket[/prefix], the --store given to publish")
	cmd.Flags().StringVar(&opts.Job, "job", "", "the job under the bucket's logs/ (default ccm-conformance-<provider>, what publish writes)")
	cmd.Flags().StringVar(&opts.Dashboard, "dashboard", testgrid.DefaultDashboard, "the TestGrid dashboard the tab goes on")
	cmd.Flags().DurationVar(&opts.StaleAfter, "stale-after", lkg.DefaultStaleAfter, "alert when the newest result is older (whole hours)")
	cmd.Flags().IntVar(&opts.FailuresToAlert, "failures-to-alert", lkg.DefaultStreak, "alert after this many consecutive failures")
	_ = cmd.MarkFlagRequired("provider")
	_ = cmd.MarkFlagRequired("bucket")
	return cmd
}

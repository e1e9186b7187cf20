package app

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/reports/dashboard"
	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

func newReportCommand(stdout, stderr io.Writer) *cobra.Command {
	var url, out, title string
	var staleAfter time.Duration
	cmd := &cobra.Command{
		Use:   "report --store URL --out DIR",
		Short: "Write a static HTML dashboard of a results store",
		Long: `report reads every run of a results store, applies the last-known-good rules
(the same as 'lkg show' and 'lkg check') and writes a static dashboard into
--out: index.html with a provider x Kubernetes-version matrix (green, pending,
flaky, red, stale, untested; each provider's last-known-good pair marked),
latency charts across runs and the records that were skipped; a page per
provider and per run (failing specs with their messages); and an SVG badge
per provider, badges/<provider>.svg, for READMEs. The pages use no script and
no external asset. See docs/dashboard.md.

Exit codes: 0 written (also when some records were skipped), 2 bad flags, an
unreadable store or an unwritable --out.`,
		Example: `  ccm-conformance report --store gs://ccm-results --out public/
  ccm-conformance report --store _results --out _dashboard && xdg-open _dashboard/index.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return badInput(fmt.Errorf("--out: empty directory name"))
			}
			if staleAfter <= 0 {
				return badInput(fmt.Errorf("--stale-after %s: want a positive duration", staleAfter))
			}
			ctx := cmd.Context()
			st, err := store.Open(ctx, url)
			if err != nil {
				return badInput(fmt.Errorf("--store: %w", err))
			}
			defer st.Close()
			m, err := dashboard.Generate(ctx, st, out, dashboard.Options{Title: title, LKG: lkg.Config{StaleAfter: staleAfter}})
			if err != nil {
				return badInput(fmt.Errorf("report: %w", err))
			}
			for _, p := range m.Problems {
				fmt.Fprintf(stderr, "skipped %s\n", p)
			}
			fmt.Fprintf(stdout, "wrote %s: %s\n", filepath.Join(out, dashboard.IndexPage), m.Summary())
			return nil
		},
	}
	addStoreFlag(cmd, &url)
	cmd.Flags().StringVar(&out, "out", "_dashboard", "directory the dashboard is written to")
	cmd.Flags().StringVar(&title, "title", dashboard.DefaultTitle, "heading of the pages")
	cmd.Flags().DurationVar(&staleAfter, "stale-after", lkg.DefaultStaleAfter, "a provider whose newest run is older is stale")
	return cmd
}

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/local"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/labels"
	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

func newListCommand(stdout io.Writer) *cobra.Command {
	var labelFilter, output, profilePath, backend string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the specs and their labels",
		Long: `List prints every spec with its labels. Capability labels (InstancesV2,
LoadBalancer, ...) say what a profile must declare for the spec to run.
A spec labelled ReleaseBlocking decides a run's last-known-good verdict,
unless it needs what the backend lacks (NeedsSimulatedNodes: only the local
backend simulates nodes; NeedsSimulatedCloud: an existing cluster's cloud
may be real): such a spec is marked, for the --backend given (docs/lkg.md).

With --provider, the profile is checked as 'run' checks it (its cloud driver
answers its 'info' handshake), and each spec a run on that backend would
skip is marked with the reason the run would give: the missing capability,
a cloud-driver verb the driver does not implement, or machines the harness
cannot add. The last line says whether such a run can be last-known-good,
judged by the same rules as a published run (lkg), and if not, why. A CCM
built from its module (ccm.binary.module) is checked as fields only and
never built here.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("--output %q: want text or json", output)}
			}
			if !slices.Contains(labels.Backends, backend) {
				return &exitError{code: runner.ExitHarnessError, err: fmt.Errorf("--backend %q: want one of %s", backend, strings.Join(labels.Backends, ", "))}
			}
			var (
				specs   []runner.SpecInfo
				listing *runner.ProfileListing
				err     error
			)
			if profilePath != "" {
				opts := runner.ListOptions{Suites: suites.All(), LabelFilter: labelFilter, ProfilePath: profilePath, Backend: backend}
				if backend != labels.BackendKubeconfig {
					// The pod networks the harness's own clusters use.
					opts.ClusterCIDRs = local.DefaultClusterCIDRs()
				}
				listing, err = runner.ListForProfile(context.Background(), opts)
				if listing != nil {
					specs = listing.Specs
				}
			} else {
				specs, err = runner.List(suites.All(), labelFilter)
				runner.MarkReleaseBlocking(specs, backend)
			}
			if err != nil {
				return &exitError{code: runner.ExitHarnessError, err: err}
			}
			if output == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(specs)
			}
			skipped := 0
			for _, s := range specs {
				line := fmt.Sprintf("%s [%s]", s.Text, strings.Join(s.Labels, ", "))
				if s.NotBlockingWhy != "" {
					line += " (not release-blocking here: " + s.NotBlockingWhy + ")"
				}
				if s.Skip != "" {
					skipped++
					line += " (skipped: " + skipReason(s) + ")"
				}
				fmt.Fprintln(stdout, line)
			}
			if listing == nil {
				fmt.Fprintf(stdout, "%d specs\n", len(specs))
				return nil
			}
			fmt.Fprintf(stdout, "%d specs, %d would run, %d would skip\n", len(specs), len(specs)-skipped, skipped)
			fmt.Fprintln(stdout, foreseenVerdict(listing, labelFilter))
			return nil
		},
	}
	cmd.Flags().StringVar(&labelFilter, "label-filter", "", "only specs this ginkgo label filter selects")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().StringVar(&profilePath, "provider", "", "mark the specs a run with this profile would skip, and why")
	cmd.Flags().StringVar(&backend, "backend", labels.BackendLocal, "the backend of the run to foresee: "+strings.Join(labels.Backends, ", "))
	return cmd
}

// foreseenVerdict judges the foreseen run by the rules a published run
// meets (lkg.Judge), as if every spec that would run passed, and says in
// one line whether such a run can be last-known-good and, if not, why.
func foreseenVerdict(l *runner.ProfileListing, labelFilter string) string {
	rec := &prow.SpecRecords{Version: 1, Capabilities: l.Capabilities, LabelFilter: labelFilter}
	for _, s := range l.Specs {
		r := prow.SpecRecord{Suite: s.Suite, Text: s.Text, Labels: s.Labels, State: "passed"}
		if s.Skip != "" {
			r.State, r.SkipReason = "skipped", s.Skip
		}
		rec.Specs = append(rec.Specs, r)
	}
	v := lkg.Judge(&store.Run{Result: prow.ResultSuccess, Specs: rec, Metadata: map[string]any{prow.MetaBackend: l.Backend}})
	var line string
	switch v.Verdict {
	case lkg.VerdictPass:
		line = fmt.Sprintf("a run on %s can be last-known-good: %d release-blocking spec(s) would run", l.Backend, v.BlockingPassed)
	case lkg.VerdictPartial:
		line = fmt.Sprintf("a run on %s cannot be last-known-good (it would be partial): %s", l.Backend, v.Reason)
	default:
		line = fmt.Sprintf("a run on %s cannot be last-known-good: %s", l.Backend, v.Reason)
	}
	if len(v.Unjudged) > 0 {
		line += fmt.Sprintf("; no release-blocking spec judges %s there", strings.Join(v.Unjudged, ", "))
	}
	return line
}

// skipReason says why a spec would skip: "missing CAP, ..." for
// capabilities the profile does not declare, else the run's own skip
// message.
func skipReason(s runner.SpecInfo) string {
	if _, caps, ok := strings.Cut(s.Skip, "does not declare capability "); ok {
		return "missing " + caps
	}
	return s.Skip
}

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
	"github.com/ccm-conformance/ccm-conformance/reports/store"
)

// defaultStore is the results store when --store is not given.
func defaultStore() string {
	if s := os.Getenv("CCM_CONFORMANCE_STORE"); s != "" {
		return s
	}
	return "_results"
}

func addStoreFlag(cmd *cobra.Command, url *string) {
	cmd.Flags().StringVar(url, "store", defaultStore(), "results store: a directory, file:///dir, gs://bucket[/prefix] or s3://bucket[/prefix] (default $CCM_CONFORMANCE_STORE or _results)")
}

func badInput(err error) error { return &exitError{code: runner.ExitHarnessError, err: err} }

func newPublishCommand(stdout io.Writer) *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "publish --store URL DIR",
		Short: "Publish a run directory to a results store",
		Long: `publish uploads a run directory (what run writes to --artifacts) to a results
store laid out like a Prow bucket: logs/ccm-conformance-<provider>/<build-id>/,
with build ids that sort by time, and logs/<job>/latest-build.txt. The run
directory must pass validate-artifacts. Publishers may run at once; none loses
a run. See docs/results-store.md.

Exit codes: 0 published, 2 the run directory is invalid or the store failed.`,
		Example: `  ccm-conformance publish --store gs://my-bucket/ccm _artifacts
  ccm-conformance publish --store /srv/results _artifacts`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := store.Open(ctx, url, store.WithCreate())
			if err != nil {
				return badInput(fmt.Errorf("--store: %w", err))
			}
			defer st.Close()
			b, err := st.Publish(ctx, args[0])
			if err != nil {
				return badInput(err)
			}
			fmt.Fprintf(stdout, "published %s as %s\n", args[0], st.Location(b.Prefix()))
			return nil
		},
	}
	addStoreFlag(cmd, &url)
	return cmd
}

// lkgFlags are the flags lkg show and lkg check share.
type lkgFlags struct {
	stores     []string
	output     string
	staleAfter time.Duration
}

func (f *lkgFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.stores, "store", []string{defaultStore()}, "results store: a directory, file:///dir, gs://bucket[/prefix] or s3://bucket[/prefix]; repeat it to read several stores as one, e.g. each provider's own (default $CCM_CONFORMANCE_STORE or _results)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "table or json")
	cmd.Flags().DurationVar(&f.staleAfter, "stale-after", lkg.DefaultStaleAfter, "a provider whose newest run is older is stale")
}

// load checks the flags and applies the LKG rules to the store.
func (f *lkgFlags) load(ctx context.Context, stderr io.Writer) (*lkg.Report, error) {
	if f.output != "table" && f.output != "json" {
		return nil, badInput(fmt.Errorf("--output %q: want table or json", f.output))
	}
	if f.staleAfter <= 0 {
		return nil, badInput(fmt.Errorf("--stale-after %s: want a positive duration", f.staleAfter))
	}
	var snaps []*store.Snapshot
	for _, url := range f.stores {
		snap, err := readStore(ctx, url)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, snap)
	}
	rep := lkg.Evaluate(store.Merge(snaps...), lkg.Config{StaleAfter: f.staleAfter})
	for _, p := range rep.Problems {
		fmt.Fprintf(stderr, "skipped %s\n", p)
	}
	return rep, nil
}

// readStore reads every run of the store at url; an error names the store.
func readStore(ctx context.Context, url string) (*store.Snapshot, error) {
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, badInput(fmt.Errorf("--store: %w", err))
	}
	defer st.Close()
	snap, err := st.ReadAll(ctx)
	if err != nil {
		return nil, badInput(fmt.Errorf("--store %s: %w", url, err))
	}
	return snap, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newLKGCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lkg",
		Short: "Last-known-good pairs of each provider, from a results store",
		Long: `lkg applies the last-known-good rules (docs/lkg.md) to the runs in a results
store: for each provider, the last-known-good pair is the newest (Kubernetes
version and commit, CCM digest) pair whose release-blocking specs passed in at
least 3 consecutive runs of that pair; a pair that both passed and failed is
flaky and never last-known-good; a provider whose newest run is older than
--stale-after is stale. Records that cannot be read are reported and skipped.`,
	}
	cmd.AddCommand(newLKGShowCommand(stdout, stderr), newLKGCheckCommand(stdout, stderr))
	return cmd
}

func newLKGShowCommand(stdout, stderr io.Writer) *cobra.Command {
	var f lkgFlags
	var provider string
	cmd := &cobra.Command{
		Use:   "show [--provider P]",
		Short: "Show each provider's pairs and its last-known-good pair",
		Long: `show prints, for each provider (or only --provider), every pair its runs
tested with its state (green, pending, flaky, red, partial), and marks the
last-known-good pair. A partial run (narrowed by a label filter, or one that
skipped a release-blocking spec of a claimed capability) is shown with its
reason and never counts towards last-known-good. Exit codes: 0 shown, 1 --provider has no run in the
store, 2 bad flags or an unreadable store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := f.load(cmd.Context(), stderr)
			if err != nil {
				return err
			}
			if provider != "" {
				ps := rep.Provider(provider)
				if ps == nil {
					return &exitError{code: 1, err: fmt.Errorf("provider %q has no readable run in %s", provider, strings.Join(f.stores, ", "))}
				}
				rep.Providers = []lkg.ProviderStatus{*ps}
			}
			if f.output == "json" {
				return writeJSON(stdout, rep)
			}
			printShowTable(stdout, rep)
			return nil
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&provider, "provider", "", "show only this provider")
	return cmd
}

func printShowTable(w io.Writer, rep *lkg.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tKUBERNETES\tCOMMIT\tCCM DIGEST\tSTATE\tRUNS\tPASS\tFAIL\tPARTIAL\tLAST RUN\tLKG")
	for _, ps := range rep.Providers {
		if len(ps.Pairs) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\tuntested\t%d\t0\t0\t0\t%s\t\n", ps.Provider, len(ps.Runs), ps.LastRun.UTC().Format(time.RFC3339))
			continue
		}
		for _, p := range ps.Pairs {
			mark := ""
			if ps.LKG != nil && ps.LKG.Pair == p.Pair {
				mark = "*"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", ps.Provider, p.KubernetesVersion, abbrev(p.KubernetesCommit, 9), abbrev(p.CCMDigest, 19),
				p.State, p.Runs, p.Passes, p.Failures, p.Partials, p.LastRun.UTC().Format(time.RFC3339), mark)
		}
	}
	tw.Flush()
	for _, ps := range rep.Providers {
		for _, p := range ps.Pairs {
			fmt.Fprintf(w, "%s %s: %s\n", ps.Provider, p.Pair, p.Coverage())
		}
	}
	for _, ps := range rep.Providers {
		for _, p := range ps.Pairs {
			if why := p.PartialReason(); why != "" {
				fmt.Fprintf(w, "%s %s: %d run(s) partial, no last-known-good evidence: %s\n", ps.Provider, p.Pair, p.Partials, why)
			}
		}
	}
	for _, ps := range rep.Providers {
		if ps.Stale {
			fmt.Fprintf(w, "%s is stale: its newest run finished %s (limit %s)\n", ps.Provider, ps.LastRun.UTC().Format(time.RFC3339), rep.StaleAfter)
		}
	}
}

func abbrev(s string, n int) string {
	if s == "" {
		return "-"
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

func newLKGCheckCommand(stdout, stderr io.Writer) *cobra.Command {
	var f lkgFlags
	var version string
	var providers []string
	cmd := &cobra.Command{
		Use:   "check --kubernetes vX.Y.Z [--providers a,b]",
		Short: "Check that every provider has a green last-known-good pair for a Kubernetes version",
		Long: `check is the release team's question: does every provider (every one in the
store, or --providers) have a green last-known-good pair for this Kubernetes
version? Each provider is green, stale (no run within --stale-after, even with
a green pair), flaky, red, pending (passing, but fewer runs than the rules
ask), partial (only runs that left out release-blocking specs: narrowed by a
label filter, or skipping specs of claimed capabilities) or untested (no run
of that version).

Exit codes: 0 every provider green, 1 a provider is not, 2 bad flags or an
unreadable store.`,
		Example: `  ccm-conformance lkg check --kubernetes v1.37.2 --store gs://ccm-results
  ccm-conformance lkg check --kubernetes v1.37.2 --providers aws,gcp --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkVersionFlag("--kubernetes", version); err != nil {
				return badInput(err)
			}
			rep, err := f.load(cmd.Context(), stderr)
			if err != nil {
				return err
			}
			var names []string
			for _, p := range providers {
				if p = strings.TrimSpace(p); p != "" {
					names = append(names, p)
				}
			}
			check := rep.Check(version, names)
			if f.output == "json" {
				if err := writeJSON(stdout, check); err != nil {
					return err
				}
			} else {
				printCheckTable(stdout, check)
			}
			if check.OK {
				return nil
			}
			var bad []string
			for _, p := range check.Providers {
				if p.Status != lkg.StatusGreen {
					bad = append(bad, fmt.Sprintf("%s (%s)", p.Provider, p.Status))
				}
			}
			if len(check.Providers) == 0 {
				return &exitError{code: 1, err: errors.New("no provider to check: the store has no readable run")}
			}
			return &exitError{code: 1, err: fmt.Errorf("not green for Kubernetes %s: %s", check.KubernetesVersion, strings.Join(bad, ", "))}
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&version, "kubernetes", "", "the Kubernetes version to check, e.g. v1.37.2")
	cmd.Flags().StringSliceVar(&providers, "providers", nil, "providers to check, comma-separated (default: every provider in the store)")
	_ = cmd.MarkFlagRequired("kubernetes")
	return cmd
}

func printCheckTable(w io.Writer, c *lkg.CheckReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tSTATUS\tKUBERNETES\tCOMMIT\tCCM DIGEST\tREASON")
	green := 0
	for _, p := range c.Providers {
		k, commit, digest := "-", "-", "-"
		if p.LKG != nil {
			k, commit, digest = p.LKG.KubernetesVersion, abbrev(p.LKG.KubernetesCommit, 9), abbrev(p.LKG.CCMDigest, 19)
		}
		if p.Status == lkg.StatusGreen {
			green++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Provider, p.Status, k, commit, digest, p.Reason)
	}
	tw.Flush()
	// What each verdict rests on: the pair, the capabilities its run
	// claimed and how many release-blocking specs passed.
	for _, p := range c.Providers {
		if p.Pair != nil {
			fmt.Fprintf(w, "%s %s: %s\n", p.Provider, p.Pair.Pair, p.Pair.Coverage())
		}
	}
	fmt.Fprintf(w, "Kubernetes %s: %d of %d provider(s) green\n", c.KubernetesVersion, green, len(c.Providers))
}

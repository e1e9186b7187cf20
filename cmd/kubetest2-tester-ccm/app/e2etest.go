package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework/runner"
)

// The suites as the e2e.test binary of kubetest2's stock ginkgo tester
// (kubetest2-tester-ginkgo, sigs.k8s.io/kubetest2 pkg/testers/ginkgo), for
// jobs that already run that tester. Its contract, read from its source
// (ginkgo.go, package.go; docs/kubetest2.md has the details):
//
//   - It wants three executables named ginkgo, e2e.test and kubectl, in
//     $KUBETEST2_RUN_DIR with --use-built-binaries, on PATH with
//     --use-binaries-from-path.
//   - It runs the ginkgo v2 CLI: ginkgo [--ginkgo-args] --nodes=N
//     <dir>/e2e.test -- followed by, always and in this order,
//     --kubeconfig=, --kubectl-path=, --ginkgo.skip=, --ginkgo.focus=,
//     --ginkgo.label-filter=, --provider=, --report-dir=$ARTIFACTS and
//     --ginkgo.timeout=, then its --test-args split as a shell would.
//   - The kubeconfig comes from $KUBECONFIG; JUnit is expected in
//     --report-dir; a non-zero exit fails the job.
//
// The binary is this module's go test -c of ../e2etest (build tag
// e2etest). The provider profile, which the stock tester knows nothing of,
// arrives through its --test-args: --test-args=--ccm-profile=PATH.

// E2ETestFlags are the flags e2e.test accepts besides ginkgo's own
// (--ginkgo.*, which ginkgo registers on the same flag set).
type E2ETestFlags struct {
	// The stock tester's.
	Kubeconfig, KubectlPath, Provider, ReportDir string
	// Ours, through --test-args.
	Profile, RunDir, CCMImage, CCMDigest string
}

// E2ETest flag names of our own.
const (
	E2EFlagProfile = "ccm-profile"
	E2EFlagRunDir  = "ccm-run-dir"
)

// RegisterE2ETestFlags defines e2e.test's flags on fs (flag.CommandLine in
// the test binary, where the testing package and ginkgo define theirs).
func RegisterE2ETestFlags(fs *flag.FlagSet) *E2ETestFlags {
	f := &E2ETestFlags{}
	fs.StringVar(&f.Kubeconfig, "kubeconfig", os.Getenv(EnvKubeconfig), "the cluster under test (kubetest2's ginkgo tester passes $KUBECONFIG)")
	fs.StringVar(&f.KubectlPath, "kubectl-path", "", "kubectl; accepted because the ginkgo tester always passes it, and not used")
	fs.StringVar(&f.Provider, "provider", "", "the ginkgo tester's --provider (a cloud name such as gce for upstream's e2e framework); recorded, not used: the CCM under test comes from --"+E2EFlagProfile)
	fs.StringVar(&f.ReportDir, "report-dir", os.Getenv(EnvArtifacts), "where JUnit, specs.json, logs/ and metadata.json go (the ginkgo tester passes $ARTIFACTS)")
	fs.StringVar(&f.Profile, E2EFlagProfile, "", "provider profile (docs/profile.md); pass it with kubetest2's --test-args=--"+E2EFlagProfile+"=PATH")
	fs.StringVar(&f.RunDir, E2EFlagRunDir, "", "keep the complete run directory here (default $KUBETEST2_RUN_DIR/ccm-conformance, else a temporary directory)")
	fs.StringVar(&f.CCMImage, "ccm-image", "", "the CCM's image, for the results (default: read from the pods of ccm.deployed)")
	fs.StringVar(&f.CCMDigest, "ccm-digest", "", "the CCM's digest, sha256:... (default: from the pods of ccm.deployed)")
	return f
}

// RunE2ETest runs the suites as e2e.test: flags parsed, ginkgo's
// configuration as its --ginkgo.* flags left it. It returns the exit code:
// 0 every selected spec that ran passed, 1 a spec failed, 2 the harness or
// its input failed, or nothing was tested.
func RunE2ETest(f *E2ETestFlags, ginkgoConfig types.SuiteConfig, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return runE2ETest(ctx, f, ginkgoConfig, os.Getenv, stdout, stderr)
}

func runE2ETest(ctx context.Context, f *E2ETestFlags, cfg types.SuiteConfig, getenv env, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "e2e.test (%s): %s\n", Name, err)
		return runner.ExitHarnessError
	}
	if err := checkE2ETestInput(f, cfg); err != nil {
		return fail(err)
	}
	o := &options{
		provider:    f.Profile,
		labelFilter: cfg.LabelFilter,
		kubeconfig:  f.Kubeconfig,
		artifacts:   f.ReportDir,
		runDir:      f.RunDir,
		ccmImage:    f.CCMImage,
		ccmDigest:   f.CCMDigest,
	}
	ro, err := o.runOptions(getenv)
	if err != nil {
		return fail(err)
	}
	return o.execute(ctx, ro, getenv, stdout, stderr)
}

// checkE2ETestInput refuses what the harness cannot honour, each with the
// flag to use instead.
func checkE2ETestInput(f *E2ETestFlags, cfg types.SuiteConfig) error {
	switch {
	case f.Profile == "":
		return fmt.Errorf("--%s: the provider profile is required; give it to kubetest2's ginkgo tester as --test-args=--%s=PATH", E2EFlagProfile, E2EFlagProfile)
	case f.Kubeconfig == "":
		return errors.New("--kubeconfig: no cluster (the ginkgo tester passes $KUBECONFIG; set it)")
	case f.ReportDir == "":
		return errors.New("--report-dir: empty (the ginkgo tester passes $ARTIFACTS)")
	case nonEmpty(cfg.FocusStrings) || nonEmpty(cfg.SkipStrings):
		// The verdicts know a label filter (a narrowed run is partial,
		// docs/lkg.md); a regular expression over spec texts they cannot
		// judge, so it would publish a full-looking run that is not.
		return fmt.Errorf("--ginkgo.focus %q / --ginkgo.skip %q: select specs with --label-filter (the ginkgo tester's --label-filter), which the last-known-good rules understand", strings.Join(cfg.FocusStrings, "|"), strings.Join(cfg.SkipStrings, "|"))
	case cfg.ParallelTotal > 1:
		return fmt.Errorf("--nodes=%d: run with the ginkgo tester's --parallel=1; the harness spreads its own specs", cfg.ParallelTotal)
	}
	if _, err := os.Stat(f.Profile); err != nil {
		return fmt.Errorf("--%s %s: %w", E2EFlagProfile, f.Profile, err)
	}
	if abs, err := filepath.Abs(f.ReportDir); err == nil {
		f.ReportDir = abs
	}
	return nil
}

// nonEmpty reports whether list has a non-empty string: the ginkgo tester
// always passes --ginkgo.focus= and --ginkgo.skip=, which ginkgo records as
// one empty pattern each.
func nonEmpty(list []string) bool {
	for _, s := range list {
		if s != "" {
			return true
		}
	}
	return false
}

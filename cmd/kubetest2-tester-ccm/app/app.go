// Package app is kubetest2-tester-ccm: the CCM conformance suites as a
// kubetest2 tester. It speaks kubetest2's tester protocol without importing
// kubetest2: kubetest2 finds the binary on PATH by its name
// (kubetest2-tester-<name>, here `--test=ccm`), runs it with `--help` (plus
// the tester's arguments) to show its usage, then runs it with the
// arguments given after `--` and this environment:
//
//	ARTIFACTS          the run's artifacts directory (Prow's $ARTIFACTS under Prow)
//	KUBECONFIG         the cluster the deployer brought up
//	KUBETEST2_RUN_DIR  a private directory for this run
//	KUBETEST2_RUN_ID   the run's id (Prow's job id under Prow)
//
// The suites run against that cluster with the CCM the profile names
// (ccm.deployed for one running in the cluster, or ccm.binary: a path, or a
// module the tester builds into the binary cache before the specs, with
// progress on stderr). The junit
// files and records go straight into $ARTIFACTS, the tester's keys are
// merged into $ARTIFACTS/metadata.json, and the exit code is non-zero when
// a spec or the harness failed. See docs/kubetest2.md.
//
// Floor: the commands, the top. They parse flags and delegate to the floors
// below.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/runner"
	"github.com/ccm-conformance/ccm-conformance/internal/harnessversion"
	"github.com/ccm-conformance/ccm-conformance/reports/prow"
	"github.com/ccm-conformance/ccm-conformance/reports/rundir"
	"github.com/ccm-conformance/ccm-conformance/suites"
)

// Name is the binary's name, as kubetest2 looks it up.
const Name = "kubetest2-tester-ccm"

// Version is the tester's version: the harness's (internal/harnessversion).
var Version = harnessversion.Get()

// Environment variables of the kubetest2 tester protocol.
const (
	EnvArtifacts  = rundir.EnvArtifacts
	EnvKubeconfig = "KUBECONFIG"
	EnvRunDir     = "KUBETEST2_RUN_DIR"
	EnvRunID      = "KUBETEST2_RUN_ID"
)

// options are the tester's flags.
type options struct {
	provider    string
	labelFilter string
	kubeconfig  string
	artifacts   string
	runDir      string
	ccmImage    string
	ccmDigest   string
	echoImage   string
}

// env reads the environment; a test passes its own.
type env func(string) string

func newFlags(o *options, getenv env) *pflag.FlagSet {
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&o.provider, "provider", "", "provider profile (YAML, docs/profile.md); ccm.deployed for a CCM running in the cluster")
	fs.StringVar(&o.labelFilter, "label-filter", "", "ginkgo label filter selecting specs, e.g. 'LoadBalancer && !DataPath'")
	fs.StringVar(&o.kubeconfig, "kubeconfig", getenv(EnvKubeconfig), "the cluster under test (default $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.artifacts, "artifacts", getenv(EnvArtifacts), "where junit files, specs.json, timings.json, logs/ and metadata.json go (default $ARTIFACTS, else "+runner.DefaultArtifactsDir+")")
	fs.StringVar(&o.runDir, "run-dir", "", "keep the complete run directory here, for 'ccm-conformance publish' (default $KUBETEST2_RUN_DIR/ccm-conformance, else a temporary directory that is removed)")
	fs.StringVar(&o.ccmImage, "ccm-image", "", "the CCM's image, for the results (default: read from the pods of ccm.deployed)")
	fs.StringVar(&o.ccmDigest, "ccm-digest", "", "the CCM's digest, sha256:... (default: the image digest of the pods of ccm.deployed, or the digest of ccm.binary's executable)")
	fs.StringVar(&o.echoImage, "echo-image", "", "echo server image (cmd/echo-server, docs/images.md) the data path specs run as pods; the cluster pulls it or has it already (default: none, and those specs skip)")
	return fs
}

const usageHead = `kubetest2-tester-ccm runs the CCM conformance suites against the cluster a
kubetest2 deployer brought up, with the cloud-controller-manager a provider
profile names: one already running in the cluster (ccm.deployed) or a binary
the tester starts (ccm.binary: a path, or a Go module it builds unmodified
into the binary cache first, with progress on stderr).

  kubetest2 <deployer> --up --down --test=ccm -- --provider profile.yaml [flags]

It reads ARTIFACTS, KUBECONFIG, KUBETEST2_RUN_DIR and KUBETEST2_RUN_ID. Junit
files (junit_<suite>_01.xml), specs.json, timings.json and logs/ go into
$ARTIFACTS, as Prow uploads it, and the tester's keys (Kubernetes version and
commit, CCM image and digest, provider, versions) are merged into
$ARTIFACTS/metadata.json, which Prow folds into finished.json. The complete
run directory, which 'ccm-conformance publish' takes, is kept in
$KUBETEST2_RUN_DIR/ccm-conformance.

Exit codes: 0 every selected spec that ran passed, 1 a spec failed, 2 the
harness or its input failed, or nothing was tested (every selected spec
was skipped: a green job must have shown something of the CCM).

Flags:
`

func usage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprint(w, usageHead)
	fmt.Fprint(w, fs.FlagUsages())
}

// wantsHelp reports whether -h or --help is among the arguments: kubetest2
// asks for the usage with `--help` followed by the tester's arguments.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}

// Main runs the tester and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Getenv, stdout, stderr)
}

func run(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) int {
	var o options
	fs := newFlags(&o, getenv)
	fs.SetOutput(io.Discard)
	if wantsHelp(args) {
		usage(stdout, fs)
		return 0
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s: %s\n", Name, strings.TrimSpace(err.Error()))
		return runner.ExitHarnessError
	}
	ro, err := o.parse(fs, args, getenv)
	if err != nil {
		return fail(err)
	}
	return o.execute(ctx, ro, getenv, stdout, stderr)
}

// execute runs the suites as ro says, with the tester's metadata, and
// returns the run's exit code.
func (o *options) execute(ctx context.Context, ro rundir.Options, getenv env, stdout, stderr io.Writer) int {
	ro.Metadata = o.metadata(getenv)
	ro.Out = stdout
	code, err := rundir.Run(ctx, ro)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", Name, strings.TrimSpace(err.Error()))
	}
	return code
}

// parse reads the arguments and says where and how the run goes: against
// the kubeconfig's cluster, its results exported into the artifacts
// directory, its run directory kept in $KUBETEST2_RUN_DIR/ccm-conformance
// (or --run-dir) or else in a temporary directory.
func (o *options) parse(fs *pflag.FlagSet, args []string, getenv env) (rundir.Options, error) {
	if err := fs.Parse(args); err != nil {
		return rundir.Options{}, fmt.Errorf("%w (see --help)", err)
	}
	if fs.NArg() > 0 {
		return rundir.Options{}, fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	return o.runOptions(getenv)
}

// runOptions checks the options and turns them into the run's.
func (o *options) runOptions(getenv env) (rundir.Options, error) {
	if o.provider == "" {
		return rundir.Options{}, errors.New("--provider: the provider profile is required (see --help)")
	}
	if o.kubeconfig == "" {
		if home, err := os.UserHomeDir(); err == nil {
			if p := filepath.Join(home, ".kube", "config"); fileExists(p) {
				o.kubeconfig = p
			}
		}
		if o.kubeconfig == "" {
			return rundir.Options{}, errors.New("no cluster: KUBECONFIG is not set and there is no ~/.kube/config (the tester runs against an existing cluster)")
		}
	}
	if o.artifacts == "" {
		o.artifacts = rundir.DefaultArtifacts(getenv)
	}
	artifacts, err := filepath.Abs(o.artifacts)
	if err != nil {
		return rundir.Options{}, fmt.Errorf("--artifacts: %w", err)
	}
	runDir := o.runDir
	if runDir == "" && getenv(EnvRunDir) != "" {
		runDir = filepath.Join(getenv(EnvRunDir), "ccm-conformance")
	}
	return rundir.Options{
		Runner: runner.Options{
			ProfilePath:    o.provider,
			LabelFilter:    o.labelFilter,
			Backend:        cluster.FromKubeconfig(o.kubeconfig),
			Suites:         suites.All(),
			HarnessVersion: Version,
			EchoImage:      o.echoImage,
		},
		Name:     Name,
		Dir:      runDir,
		ExportTo: artifacts,
	}, nil
}

// metadata are the keys the tester adds to the run's: its version, the
// kubetest2 run's id, and the CCM's image and digest when the flags name
// them (they win over what the runner read from a deployed CCM's pods).
func (o *options) metadata(getenv env) map[string]string {
	return map[string]string{
		prow.MetaTesterVersion:  Version,
		prow.MetaKubetest2RunID: getenv(EnvRunID),
		prow.MetaCCMImage:       o.ccmImage,
		prow.MetaCCMDigest:      o.ccmDigest,
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

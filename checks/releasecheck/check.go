// Package releasecheck inspects a cloud-controller-manager release image
// against docs/release-guidelines.md: who it runs as, what else is in it,
// its entrypoint and labels, what its binary says about its version and
// flags, which Kubernetes libraries it was built with, and its platforms.
// Each rule of the guidelines is an Item with an ID, a status and the
// evidence; `ccm-conformance release-check` prints them.
//
// Floor: the checks, which only commands call. This one stands on the
// reports' formats (reports/prow) and the leaves, not on the framework.
package releasecheck

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
)

// Status is an item's outcome.
type Status string

// Statuses. Only Fail makes the check fail.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// The rules of docs/release-guidelines.md, in its order.
const (
	RuleNonRoot       = "RG1"
	RuleNoShell       = "RG2"
	RuleNoPackages    = "RG3"
	RuleEntrypoint    = "RG4"
	RuleLabels        = "RG5"
	RuleVersion       = "RG6"
	RuleFlags         = "RG7"
	RuleLibraries     = "RG8"
	RuleMultiArch     = "RG9"
	LabelVersion      = "org.opencontainers.image.version"
	LabelSource       = "org.opencontainers.image.source"
	LabelRevision     = "org.opencontainers.image.revision"
	LabelK8sVersion   = "com.github.ccm-conformance.kubernetes-version"
	defaultRunTimeout = 20 * time.Second
)

// ruleNames are the short names the checklist shows beside the IDs.
var ruleNames = map[string]string{
	RuleNonRoot:    "non-root user",
	RuleNoShell:    "no shell",
	RuleNoPackages: "no package manager",
	RuleEntrypoint: "entrypoint is the CCM",
	RuleLabels:     "OCI labels",
	RuleVersion:    "--version prints the labelled version",
	RuleFlags:      "cloud-provider flags in --help",
	RuleLibraries:  "Kubernetes libraries not older than claimed",
	RuleMultiArch:  "multi-arch index",
}

// RequiredFlags are flags that every CCM made with k8s.io/cloud-provider's
// app.NewCloudControllerManagerCommand registers (v0.37.2: options,
// controller-manager's generic and leader migration options, the secure
// serving and delegated authentication/authorization options).
var RequiredFlags = []string{
	"--cloud-provider",
	"--cloud-config",
	"--kubeconfig",
	"--controllers",
	"--cluster-name",
	"--allocate-node-cidrs",
	"--cluster-cidr",
	"--configure-cloud-routes",
	"--use-service-account-credentials",
	"--leader-elect",
	"--enable-leader-migration",
	"--leader-migration-config",
	"--bind-address",
	"--secure-port",
	"--authentication-kubeconfig",
	"--authorization-kubeconfig",
	"--concurrent-service-syncs",
	"--node-monitor-period",
	"--route-reconciliation-period",
	"--version",
}

// shells and packageManagers are the file names RG2 and RG3 look for,
// anywhere in the image.
var (
	shells          = []string{"sh", "bash", "ash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "busybox", "toybox"}
	packageManagers = []string{"apt", "apt-get", "aptitude", "dpkg", "apk", "yum", "dnf", "microdnf", "tdnf", "rpm", "zypper", "pacman", "opkg", "emerge", "pip", "pip3", "nix-env"}
)

// Options configure Check. Every field has a default.
type Options struct {
	// KubernetesVersion is the Kubernetes version the image claims to be
	// built for (v1.N or v1.N.P). Default: the label LabelK8sVersion, else
	// the version label when it is v1.N.P (KEP-1771: a CCM's major and
	// minor are the Kubernetes version's), else none (RG8 warns).
	KubernetesVersion string
	// Platform is the os/arch picked from an index. Default
	// linux/runtime.GOARCH.
	Platform string
	// RunTimeout bounds each run of the binary (--version, --help).
	// Default 20s.
	RunTimeout time.Duration
	// TempDir receives the extracted binary, removed at the end. Default
	// os.TempDir().
	TempDir string
}

func (o Options) withDefaults() Options {
	if o.Platform == "" {
		o.Platform = "linux/" + runtime.GOARCH
	}
	if o.RunTimeout == 0 {
		o.RunTimeout = defaultRunTimeout
	}
	return o
}

// Item is one rule's outcome.
type Item struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Status   Status `json:"status"`
	Evidence string `json:"evidence"`
}

// Report is the checklist of one image.
type Report struct {
	// Image is the reference as given.
	Image string `json:"image"`
	// Source is how it was read: docker-daemon, oci-layout or tarball.
	Source string `json:"source"`
	// Digest is the manifest digest of the image checked.
	Digest string `json:"digest"`
	// Platform is the checked image's os/arch.
	Platform string `json:"platform"`
	// KubernetesVersion is the claimed Kubernetes version and where the
	// claim came from, empty without one.
	KubernetesVersion       string `json:"kubernetesVersion,omitempty"`
	KubernetesVersionSource string `json:"kubernetesVersionSource,omitempty"`
	// Result is "pass" (no item failed) or "fail".
	Result string `json:"result"`
	Passed int    `json:"passed"`
	Warned int    `json:"warned"`
	Failed int    `json:"failed"`
	Items  []Item `json:"items"`
}

// Failed items' IDs, for messages.
func (r *Report) FailedIDs() []string {
	var ids []string
	for _, it := range r.Items {
		if it.Status == Fail {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// Item returns the item of a rule.
func (r *Report) Item(id string) (Item, bool) {
	for _, it := range r.Items {
		if it.ID == id {
			return it, true
		}
	}
	return Item{}, false
}

// Check opens ref (RefHelp) and checks it. A reference that names no
// readable image is an *InputError; other errors are the harness's
// (a temporary directory that cannot be made, say).
func Check(ctx context.Context, ref string, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	if opts.KubernetesVersion != "" {
		if _, err := ParseKubernetesVersion(opts.KubernetesVersion); err != nil {
			return nil, fmt.Errorf("kubernetes version %q: %w", opts.KubernetesVersion, err)
		}
	}
	src, err := Open(ctx, ref, opts.Platform)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return CheckSource(ctx, src, opts)
}

// CheckSource checks an opened image.
func CheckSource(ctx context.Context, src *Source, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	img := src.Image
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, &InputError{Ref: src.Ref, Err: err}
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, &InputError{Ref: src.Ref, Err: err}
	}
	fsys, err := readFS(img)
	if err != nil {
		return nil, &InputError{Ref: src.Ref, Err: err}
	}
	rep := &Report{Image: src.Ref, Source: src.Kind, Digest: digest.String(), Platform: cf.Platform().String()}
	labels := cf.Config.Labels
	add := func(id string, s Status, format string, args ...any) {
		rep.Items = append(rep.Items, Item{ID: id, Name: ruleNames[id], Status: s, Evidence: fmt.Sprintf(format, args...)})
	}

	// RG1: the user.
	s, ev := checkUser(cf.Config.User, fsys)
	add(RuleNonRoot, s, "%s", ev)

	// RG2, RG3: what else is in the image.
	if found := fsys.named(shells); len(found) > 0 {
		add(RuleNoShell, Fail, "shell found: %s", strings.Join(found, ", "))
	} else {
		add(RuleNoShell, Pass, "none of %s in %d files", strings.Join(shells, ", "), len(fsys))
	}
	if found := fsys.named(packageManagers); len(found) > 0 {
		add(RuleNoPackages, Fail, "package manager found: %s", strings.Join(found, ", "))
	} else {
		add(RuleNoPackages, Pass, "none of %s in %d files", strings.Join(packageManagers, ", "), len(fsys))
	}

	// RG4: the entrypoint, and the binary the later rules run and read.
	bin, s, ev := checkEntrypoint(cf.Config.Entrypoint, cf.Config.Cmd, fsys)
	var exe string
	var info *buildinfo.BuildInfo
	if bin != "" {
		dir, err := os.MkdirTemp(opts.TempDir, "ccm-release-check-")
		if err != nil {
			return nil, fmt.Errorf("temporary directory: %w", err)
		}
		defer os.RemoveAll(dir)
		exe = filepath.Join(dir, path.Base(bin))
		if err := extract(img, bin, exe); err != nil {
			return nil, &InputError{Ref: src.Ref, Err: fmt.Errorf("extracting %s: %w", bin, err)}
		}
		info, err = buildinfo.ReadFile(exe)
		switch {
		case err != nil:
			s, ev = Warn, ev+fmt.Sprintf("; not a Go binary (%v): cannot tell whether it is built on k8s.io/cloud-provider", err)
		case moduleVersion(info, cloudProviderModule) == "":
			s, ev = Fail, ev+fmt.Sprintf("; a Go binary (%s, %s) not built with %s: a wrapper or another program", info.Path, info.GoVersion, cloudProviderModule)
		default:
			ev += fmt.Sprintf("; a Go binary (%s, %s) built with %s %s", info.Path, info.GoVersion, cloudProviderModule, moduleVersion(info, cloudProviderModule))
		}
	}
	add(RuleEntrypoint, s, "%s", ev)

	// RG5: labels.
	var missing, present []string
	for _, k := range []string{LabelVersion, LabelSource, LabelRevision} {
		if strings.TrimSpace(labels[k]) == "" {
			missing = append(missing, k)
		} else {
			present = append(present, fmt.Sprintf("%s=%s", k, labels[k]))
		}
	}
	switch {
	case len(missing) > 0:
		add(RuleLabels, Fail, "missing: %s", strings.Join(missing, ", "))
	case !strings.Contains(labels[LabelSource], "://"):
		add(RuleLabels, Warn, "%s is not a URL: %s", LabelSource, strings.Join(present, ", "))
	default:
		add(RuleLabels, Pass, "%s", strings.Join(present, ", "))
	}

	// RG6, RG7: run the binary.
	// Run only a binary of this machine's platform, whichever image of an
	// index was picked.
	runnable := bin != "" && cf.OS == runtime.GOOS && cf.Architecture == runtime.GOARCH
	var versionOut, helpOut string
	var versionErr, helpErr error
	if runnable {
		versionOut, versionErr = runBinary(ctx, exe, filepath.Dir(exe), opts.RunTimeout, "--version")
		helpOut, helpErr = runBinary(ctx, exe, filepath.Dir(exe), opts.RunTimeout, "--help")
	}
	notRun := func(id string) {
		if bin == "" {
			add(id, Fail, "no entrypoint binary to run (%s)", RuleEntrypoint)
		} else {
			add(id, Warn, "not run: the image is %s, this machine runs %s/%s", cf.Platform(), runtime.GOOS, runtime.GOARCH)
		}
	}
	switch want := labels[LabelVersion]; {
	case !runnable:
		notRun(RuleVersion)
	case versionErr != nil:
		add(RuleVersion, Fail, "%s --version: %v", bin, versionErr)
	case want == "":
		add(RuleVersion, Fail, "%s --version printed %q, but there is no %s label to compare", bin, firstline.Of(versionOut), LabelVersion)
	case hasToken(versionOut, want):
		add(RuleVersion, Pass, "%s --version printed %q", bin, firstline.Of(versionOut))
	default:
		add(RuleVersion, Fail, "%s --version printed %q, want the labelled version %q", bin, firstline.Of(versionOut), want)
	}
	switch {
	case !runnable:
		notRun(RuleFlags)
	case helpErr != nil:
		add(RuleFlags, Fail, "%s --help: %v", bin, helpErr)
	default:
		var absent []string
		for _, f := range RequiredFlags {
			if !hasFlag(helpOut, f) {
				absent = append(absent, f)
			}
		}
		if len(absent) > 0 {
			add(RuleFlags, Fail, "%s --help lacks %s", bin, strings.Join(absent, ", "))
		} else {
			add(RuleFlags, Pass, "%s --help lists all %d: %s", bin, len(RequiredFlags), strings.Join(RequiredFlags, " "))
		}
	}

	// RG8: libraries against the claimed Kubernetes version.
	claim, claimSource := opts.KubernetesVersion, "--kubernetes-version"
	if claim == "" {
		if v := labels[LabelK8sVersion]; v != "" {
			claim, claimSource = v, "label "+LabelK8sVersion
		} else if v := labels[LabelVersion]; kep1771.MatchString(v) {
			claim, claimSource = v, "label "+LabelVersion+" (KEP-1771: v1.N.P is for Kubernetes v1.N)"
		}
	}
	rep.KubernetesVersion, rep.KubernetesVersionSource = claim, claimSource
	if claim == "" {
		rep.KubernetesVersionSource = ""
	}
	s, ev = checkLibraries(info, claim, claimSource)
	add(RuleLibraries, s, "%s", ev)

	// RG9: platforms.
	switch {
	case src.Index == nil:
		add(RuleMultiArch, Warn, "a single-platform image (%s), not an index", cf.Platform())
	default:
		var linux []string
		for _, p := range src.Platforms {
			if strings.HasPrefix(p, "linux/") {
				linux = append(linux, p)
			}
		}
		if !slices.ContainsFunc(linux, func(p string) bool { return strings.HasPrefix(p, "linux/amd64") }) ||
			!slices.ContainsFunc(linux, func(p string) bool { return strings.HasPrefix(p, "linux/arm64") }) {
			add(RuleMultiArch, Warn, "an index of %s: linux/amd64 and linux/arm64 expected", strings.Join(src.Platforms, ", "))
		} else {
			add(RuleMultiArch, Pass, "an index of %s", strings.Join(src.Platforms, ", "))
		}
	}

	for _, it := range rep.Items {
		switch it.Status {
		case Pass:
			rep.Passed++
		case Warn:
			rep.Warned++
		case Fail:
			rep.Failed++
		}
	}
	rep.Result = string(Pass)
	if rep.Failed > 0 {
		rep.Result = string(Fail)
	}
	return rep, nil
}

// kep1771 is a version that follows KEP-1771 (a CCM's major.minor are the
// Kubernetes release it is for).
var kep1771 = regexp.MustCompile(`^v1\.[0-9]+\.[0-9]+([-+].*)?$`)

// named returns the paths whose base name is one of names, sorted.
func (fsys filesystem) named(names []string) []string {
	var found []string
	for p, f := range fsys {
		if f.mode.IsDir() {
			continue
		}
		if slices.Contains(names, path.Base(p)) {
			found = append(found, p)
		}
	}
	sort.Strings(found)
	return found
}

// checkUser is RG1: a user that is set, not root, and numeric (the
// kubelet can verify runAsNonRoot only for a numeric UID).
func checkUser(user string, fsys filesystem) (Status, string) {
	if user == "" {
		return Fail, "User is unset: the container runs as root (uid 0)"
	}
	name, _, _ := strings.Cut(user, ":")
	if uid, err := strconv.Atoi(name); err == nil {
		if uid == 0 {
			return Fail, fmt.Sprintf("User %q is root (uid 0)", user)
		}
		return Pass, fmt.Sprintf("User %q (uid %d)", user, uid)
	}
	if name == "root" {
		return Fail, fmt.Sprintf("User %q is root (uid 0)", user)
	}
	return Warn, fmt.Sprintf("User %q is a name, not a UID: the kubelet cannot verify runAsNonRoot for it; use a numeric UID", user)
}

// checkEntrypoint is RG4. It returns the resolved path of the entrypoint
// binary (empty when there is none to run) and its Go build info (nil
// when it is not a Go binary).
func checkEntrypoint(entrypoint, cmd []string, fsys filesystem) (string, Status, string) {
	if len(entrypoint) == 0 {
		return "", Fail, fmt.Sprintf("no Entrypoint (Cmd %q): the CCM must be the entrypoint, so that a pod's args go to it", cmd)
	}
	first := entrypoint[0]
	if slices.Contains(shells, path.Base(first)) {
		return "", Fail, fmt.Sprintf("Entrypoint %q runs a shell, not the CCM", entrypoint)
	}
	if !path.IsAbs(first) {
		return "", Fail, fmt.Sprintf("Entrypoint %q is not an absolute path", entrypoint)
	}
	resolved, err := fsys.resolve(first)
	if err != nil {
		return "", Fail, fmt.Sprintf("Entrypoint %q: %v", entrypoint, err)
	}
	if fsys[resolved].mode&0o111 == 0 {
		return "", Fail, fmt.Sprintf("Entrypoint %q: %s is not executable (mode %s)", entrypoint, resolved, fsys[resolved].mode)
	}
	return resolved, Pass, fmt.Sprintf("Entrypoint %q is %s", entrypoint, resolved)
}

// runBinary runs the extracted binary with one argument in dir, with an
// empty environment but HOME and TMPDIR (dir), and returns its output.
func runBinary(ctx context.Context, exe, dir string, timeout time.Duration, arg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return run(ctx, dir, exe, arg)
}

// hasToken says whether s has want as a whitespace-separated word, with
// or without a leading "v".
func hasToken(s, want string) bool {
	want = strings.TrimPrefix(want, "v")
	for _, f := range strings.Fields(s) {
		if strings.TrimPrefix(f, "v") == want {
			return true
		}
	}
	return false
}

// hasFlag says whether help text lists flag (as "--flag", followed by a
// space, "=", "," or the end of the line).
func hasFlag(help, flag string) bool {
	re := regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(flag) + `($|[\s=,])`)
	for _, l := range strings.Split(help, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

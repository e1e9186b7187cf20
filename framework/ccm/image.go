package ccm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework/internal/proc"
	"github.com/ccm-conformance/ccm-conformance/internal/command"
	"github.com/ccm-conformance/ccm-conformance/internal/firstline"
)

// Bounds of the harness's dealings with Docker.
const (
	// dockerCommandTimeout bounds one short docker command (inspect, stop
	// after its own grace, rm).
	dockerCommandTimeout = 30 * time.Second
	// containerGoneTimeout bounds the wait for a removed container to
	// disappear from the engine's list.
	containerGoneTimeout = 30 * time.Second
	// containerGonePoll is how often that wait asks.
	containerGonePoll = 100 * time.Millisecond
	// dockerCLIGrace is how long `docker run` gets to exit once its
	// container has ended.
	dockerCLIGrace = 5 * time.Second
)

// Names the harness uses in the containers it runs.
const (
	// ContainerFilesDir is where a container finds the harness's readable
	// copies of the files its arguments name (the kubeconfig first).
	ContainerFilesDir = "/ccm-conformance"
	// LabelRun is the label every container of a run carries, with the
	// run's ID as its value: `docker ps -a --filter label=ccm-conformance.run=ID`
	// lists what a run left.
	LabelRun = "ccm-conformance.run"
	// LabelInstance names the CCM instance a container runs.
	LabelInstance = "ccm-conformance.instance"
	// LabelImage is the image reference as the profile names it.
	LabelImage = "ccm-conformance.image"
)

// ImageOptions describe a CCM run from a container image with Docker, on
// the host's network so that it reaches loopback addresses (the local
// cluster's API server, a cloud simulator) and serves /healthz where the
// harness looks.
type ImageOptions struct {
	// Name in messages; default "ccm".
	Name string
	// Image is what `docker run` runs: best the image ID that InspectImage
	// found, so that the run tests exactly what it records.
	Image string
	// Args from the profile, already expanded.
	Args []string
	// Env is the container's whole environment, KEY=VALUE.
	Env []string
	// Kubeconfig on the host; the container gets a readable copy, passed
	// as --kubeconfig, --authentication-kubeconfig and
	// --authorization-kubeconfig unless Args set them.
	Kubeconfig string
	// LogPath receives the container's output.
	LogPath string
	// FilesDir is a host directory, private to this container, for the
	// copies of the files its arguments name; created, and removed by Stop.
	// It is mounted read-only at ContainerFilesDir.
	FilesDir string
	// Files are mounted read-only into the container, each at its Path,
	// from copies in FilesDir (as StandardDeployment mounts them).
	Files []File
	// Container is the container's name, unique on the engine.
	Container string
	// Labels go on the container (LabelRun, LabelInstance, ...), besides
	// LabelOwnerPID and LabelOwnerStart, which StartImage adds.
	Labels map[string]string
	// Docker is the docker CLI; default "docker".
	Docker string
}

// StartImage starts the CCM in a container: `docker run --rm` in the
// foreground, so that its output streams into LogPath and the container
// ends with it. The harness's flags are added as for StartBinary. Every
// argument or env value that names a file on the host (the kubeconfig, a
// leader migration configuration) is replaced by a readable copy in
// FilesDir, seen by the container at ContainerFilesDir; the original is
// left as it was.
func StartImage(opts ImageOptions) (*Process, error) {
	if opts.Name == "" {
		opts.Name = "ccm"
	}
	if opts.Docker == "" {
		opts.Docker = "docker"
	}
	args, port, err := harnessArgs(opts.Args, opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	files := newFileMap(hostFileOutside(opts.Files, isRegularFile))
	args = files.rewriteArgs(args)
	env := files.rewriteEnv(opts.Env)
	if err := files.copyInto(opts.FilesDir); err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Name, err)
	}
	mounts, err := writeMountedFiles(opts.FilesDir, opts.Files)
	if err != nil {
		_ = os.RemoveAll(opts.FilesDir)
		return nil, fmt.Errorf("%s: %w", opts.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(opts.LogPath), 0o755); err != nil {
		_ = os.RemoveAll(opts.FilesDir)
		return nil, err
	}
	labels := ownerLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	command := DockerRunCommand(DockerRun{
		Docker:    opts.Docker,
		Container: opts.Container,
		Labels:    labels,
		FilesDir:  opts.FilesDir,
		Mounts:    mounts,
		EnvNames:  envNames(env),
		Image:     opts.Image,
		Args:      args,
	})
	// The values reach the container through the docker CLI's own
	// environment (--env NAME), so that they never show in a command line.
	cliEnv := append(os.Environ(), env...)
	p, err := proc.Start(proc.Options{Name: opts.Name, Command: command, Env: cliEnv, LogPath: opts.LogPath})
	if err != nil {
		_ = os.RemoveAll(opts.FilesDir)
		return nil, err
	}
	c := &container{docker: opts.Docker, name: opts.Container, filesDir: opts.FilesDir}
	return &Process{proc: p, securePort: port, command: command, container: c}, nil
}

// DockerRun is what a `docker run` of a CCM image is made of.
type DockerRun struct {
	Docker    string
	Container string
	Labels    map[string]string
	// FilesDir is mounted read-only at ContainerFilesDir.
	FilesDir string
	// Mounts bind host files read-only into the container.
	Mounts []Mount
	// EnvNames are passed as --env NAME: the value comes from the docker
	// CLI's environment.
	EnvNames []string
	Image    string
	Args     []string
}

// DockerRunCommand is the command line that runs a CCM image: removed
// when it ends, on the host's network, never pulled, labelled so that
// whatever a run leaves can be found.
func DockerRunCommand(r DockerRun) []string {
	cmd := []string{r.Docker, "run", "--rm", "--name", r.Container, "--pull", "never", "--network", "host"}
	keys := make([]string, 0, len(r.Labels))
	for k := range r.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd = append(cmd, "--label", k+"="+r.Labels[k])
	}
	if r.FilesDir != "" {
		cmd = append(cmd, "--mount", "type=bind,source="+r.FilesDir+",target="+ContainerFilesDir+",readonly")
	}
	for _, m := range r.Mounts {
		cmd = append(cmd, "--mount", "type=bind,source="+m.Source+",target="+m.Target+",readonly")
	}
	for _, n := range r.EnvNames {
		cmd = append(cmd, "--env", n)
	}
	cmd = append(cmd, r.Image)
	return append(cmd, r.Args...)
}

// hostFileOutside is isFile but for the paths files are mounted at: such a
// path names the container's file, not the host's, even where the host has
// a file there.
func hostFileOutside(files []File, isFile func(string) bool) func(string) bool {
	mountedAt := map[string]bool{}
	for _, f := range files {
		mountedAt[f.Path] = true
	}
	return func(p string) bool { return !mountedAt[p] && isFile(p) }
}

// mountedDir is the directory of a container's files directory that
// holds the copies of ccm.image.files.
const mountedDir = "mounted"

// Mount binds the host file Source read-only at Target in a container.
type Mount struct{ Source, Target string }

// writeMountedFiles writes each file's content under dir/mounted, readable
// by the container's user, and returns their mounts.
func writeMountedFiles(dir string, files []File) ([]Mount, error) {
	if len(files) == 0 {
		return nil, nil
	}
	sub := filepath.Join(dir, mountedDir)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return nil, fmt.Errorf("files for the container: %w", err)
	}
	var mounts []Mount
	for i, f := range files {
		source := filepath.Join(sub, fileKey(i))
		if err := os.WriteFile(source, []byte(f.Content), 0o644); err != nil {
			return nil, fmt.Errorf("file %s for the container: %w", f.Path, err)
		}
		mounts = append(mounts, Mount{Source: source, Target: f.Path})
	}
	return mounts, nil
}

// fileMap decides which host files a container gets copies of, and where
// it sees them.
type fileMap struct {
	isFile func(string) bool
	// byHost maps a host path to its name in the files directory.
	byHost map[string]string
	names  map[string]bool
	order  []string
}

func newFileMap(isFile func(string) bool) *fileMap {
	// No copy takes the name of the directory of the mounted files.
	return &fileMap{isFile: isFile, byHost: map[string]string{}, names: map[string]bool{mountedDir: true}}
}

// containerPath returns where the container sees the host file at p, or
// "" when p is not an absolute path to a file on the host.
func (m *fileMap) containerPath(p string) string {
	if !filepath.IsAbs(p) || !m.isFile(p) {
		return ""
	}
	if n, ok := m.byHost[p]; ok {
		return path.Join(ContainerFilesDir, n)
	}
	n := filepath.Base(p)
	for i := 2; m.names[n]; i++ {
		n = strconv.Itoa(i) + "-" + filepath.Base(p)
	}
	m.byHost[p], m.names[n] = n, true
	m.order = append(m.order, p)
	return path.Join(ContainerFilesDir, n)
}

// rewriteArgs replaces host file paths in args, standing alone or as the
// value of --flag=VALUE.
func (m *fileMap) rewriteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if cp := m.containerPath(a); cp != "" {
			out[i] = cp
			continue
		}
		if strings.HasPrefix(a, "-") {
			if flag, value, ok := strings.Cut(a, "="); ok {
				if cp := m.containerPath(value); cp != "" {
					out[i] = flag + "=" + cp
				}
			}
		}
	}
	return out
}

// rewriteEnv replaces env values that are host file paths.
func (m *fileMap) rewriteEnv(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i] = kv
		if k, v, ok := strings.Cut(kv, "="); ok {
			if cp := m.containerPath(v); cp != "" {
				out[i] = k + "=" + cp
			}
		}
	}
	return out
}

// copyInto writes the copies into dir, readable by any user: the
// container's user is the image's, not the harness's. dir itself lives in
// the run's private directory, so no other user of the host reads them.
func (m *fileMap) copyInto(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("files for the container: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("files for the container: %w", err)
	}
	for _, host := range m.order {
		data, err := os.ReadFile(host)
		if err != nil {
			return fmt.Errorf("copying %s for the container: %w", host, err)
		}
		if err := os.WriteFile(filepath.Join(dir, m.byHost[host]), data, 0o644); err != nil {
			return fmt.Errorf("copying %s for the container: %w", host, err)
		}
	}
	return nil
}

func isRegularFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular()
}

func envNames(env []string) []string {
	seen := map[string]bool{}
	var names []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "" && !seen[k] {
			seen[k] = true
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// container is the Docker side of a CCM run from an image.
type container struct {
	docker   string
	name     string
	filesDir string
}

// stop ends the container (SIGTERM, SIGKILL after grace), waits for
// `docker run` to exit, removes the container should --rm not have, and
// waits until the engine no longer lists it.
func (c *container) stop(ctx context.Context, p *proc.Process, grace time.Duration) error {
	var errs []error
	stopCtx, cancel := context.WithTimeout(ctx, grace+dockerCommandTimeout)
	_, err := docker(stopCtx, c.docker, "stop", "--time", strconv.Itoa(int(grace.Seconds())), c.name)
	cancel()
	if err != nil && !isGone(err) {
		errs = append(errs, err)
	}
	errs = append(errs, p.Stop(ctx, dockerCLIGrace))
	if err := c.remove(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(c.filesDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// remove force-removes the container and waits until it is gone.
func (c *container) remove(ctx context.Context) error {
	rmCtx, cancel := context.WithTimeout(ctx, dockerCommandTimeout)
	_, err := docker(rmCtx, c.docker, "rm", "--force", c.name)
	cancel()
	if err != nil && !isGone(err) && !isBeingRemoved(err) {
		return err
	}
	ctx, cancel = context.WithTimeout(ctx, containerGoneTimeout)
	defer cancel()
	for {
		_, err := docker(ctx, c.docker, "container", "inspect", "--format", "{{.State.Status}}", c.name)
		if err != nil && isGone(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %s still exists %s after docker rm --force", c.name, containerGoneTimeout)
		case <-time.After(containerGonePoll):
		}
	}
}

// docker runs a short docker command and returns its stdout.
func docker(ctx context.Context, cli string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, cli, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return stdout.String(), &command.Error{Command: command.Line(cli, nil, args), Output: command.Tail(stderr.String()+stdout.String(), command.TailLines), Err: err}
	}
	return stdout.String(), nil
}

// isGone says a docker command failed because the container (or image)
// does not exist.
func isGone(err error) bool {
	var de *command.Error
	return errors.As(err, &de) && de.Said("no such")
}

func isBeingRemoved(err error) bool {
	var de *command.Error
	return errors.As(err, &de) && de.Said("already in progress")
}

// ImageInfo is what the local Docker engine knows of an image.
type ImageInfo struct {
	// Reference is the image as the profile names it.
	Reference string
	// ID is the digest of the image's configuration (Docker's image ID).
	ID string
	// RepoDigests are the registry digests the engine knows for it
	// (repository@sha256:...); none for an image only ever loaded.
	RepoDigests []string
	// User the image runs as.
	User string
}

// Digest identifies the image in results: its registry digest (what a
// manifest pins, and what a pod's imageID shows) when the engine knows
// one, else its image ID.
func (i ImageInfo) Digest() string {
	for _, rd := range i.RepoDigests {
		if _, d, ok := strings.Cut(rd, "@"); ok && d != "" {
			return d
		}
	}
	return i.ID
}

// ErrImageNotFound is the local Docker engine not having the image.
var ErrImageNotFound = errors.New("not present in the local Docker engine")

// InspectImage asks the local Docker engine about ref. Errors are one
// line: docker missing from PATH, the engine unreachable, or
// ErrImageNotFound, since nothing is pulled.
func InspectImage(ctx context.Context, cli, ref string) (ImageInfo, error) {
	if cli == "" {
		cli = "docker"
	}
	if _, err := exec.LookPath(cli); err != nil {
		return ImageInfo{}, fmt.Errorf("image %s: %s is not on PATH, and the harness runs images with the local Docker engine", ref, cli)
	}
	ctx, cancel := context.WithTimeout(ctx, dockerCommandTimeout)
	defer cancel()
	out, err := docker(ctx, cli, "image", "inspect", "--format", "{{json .}}", ref)
	if err != nil {
		if isGone(err) {
			return ImageInfo{}, fmt.Errorf("image %s: %w (nothing is pulled: build or load it first, e.g. make images)", ref, ErrImageNotFound)
		}
		var de *command.Error
		if errors.As(err, &de) {
			return ImageInfo{}, fmt.Errorf("image %s: docker image inspect: %s", ref, dockerMessage(strings.Join(de.Output, "\n"), de.Err.Error()))
		}
		return ImageInfo{}, fmt.Errorf("image %s: %w", ref, err)
	}
	var raw struct {
		ID          string   `json:"Id"`
		RepoDigests []string `json:"RepoDigests"`
		Config      struct {
			User string `json:"User"`
		} `json:"Config"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &raw); err != nil || raw.ID == "" {
		return ImageInfo{}, fmt.Errorf("image %s: docker image inspect answered %q: %v", ref, dockerMessage(out, ""), err)
	}
	return ImageInfo{Reference: ref, ID: raw.ID, RepoDigests: raw.RepoDigests, User: raw.Config.User}, nil
}

// dockerMessage is the first line of what the docker CLI said, without the
// daemon's prefix; fallback when it said nothing.
func dockerMessage(s, fallback string) string {
	line := firstline.Of(s)
	if line == "" {
		return fallback
	}
	return strings.TrimPrefix(line, "Error response from daemon: ")
}

package ccm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDockerRunCommand(t *testing.T) {
	tests := []struct {
		name string
		run  DockerRun
		want []string
	}{
		{
			name: "everything",
			run: DockerRun{
				Docker:    "docker",
				Container: "ccm-conformance-abc-main",
				Labels:    map[string]string{LabelRun: "abc", LabelInstance: "main", LabelImage: "ccm-conformance/reference-ccm:latest"},
				FilesDir:  "/tmp/run/ccm-main",
				Mounts:    []Mount{{Source: "/tmp/run/ccm-main/mounted/file-0", Target: "/etc/cloud/cloud.conf"}},
				EnvNames:  []string{"A", "REFERENCE_CLOUD_ENDPOINT"},
				Image:     "sha256:0123",
				Args:      []string{"--v=2", "--kubeconfig=/ccm-conformance/kubeconfig"},
			},
			want: []string{
				"docker", "run", "--rm", "--name", "ccm-conformance-abc-main", "--pull", "never", "--network", "host",
				"--label", "ccm-conformance.image=ccm-conformance/reference-ccm:latest",
				"--label", "ccm-conformance.instance=main",
				"--label", "ccm-conformance.run=abc",
				"--mount", "type=bind,source=/tmp/run/ccm-main,target=/ccm-conformance,readonly",
				"--mount", "type=bind,source=/tmp/run/ccm-main/mounted/file-0,target=/etc/cloud/cloud.conf,readonly",
				"--env", "A", "--env", "REFERENCE_CLOUD_ENDPOINT",
				"sha256:0123", "--v=2", "--kubeconfig=/ccm-conformance/kubeconfig",
			},
		},
		{
			name: "no files, env or args",
			run:  DockerRun{Docker: "/usr/bin/docker", Container: "c", Image: "ccm:v1"},
			want: []string{"/usr/bin/docker", "run", "--rm", "--name", "c", "--pull", "never", "--network", "host", "ccm:v1"},
		},
		{
			// An argument after the image is the CCM's, even one that
			// looks like a docker flag.
			name: "args that look like docker flags",
			run:  DockerRun{Docker: "docker", Container: "c", Image: "ccm:v1", Args: []string{"--network", "none", "--rm"}},
			want: []string{"docker", "run", "--rm", "--name", "c", "--pull", "never", "--network", "host", "ccm:v1", "--network", "none", "--rm"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DockerRunCommand(tt.run)
			if !slices.Equal(got, tt.want) {
				t.Errorf("DockerRunCommand =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestFileMapRewrites(t *testing.T) {
	hostFiles := map[string]bool{
		"/run/x/kubeconfig":          true,
		"/tmp/lm/lm-ccm.yaml":        true,
		"/profile/deploy/cloud.conf": true,
		"/other/deploy/cloud.conf":   true,
		"/profile/creds.json":        true,
		"relative/kubeconfig":        true, // never: not absolute
	}
	isFile := func(p string) bool { return hostFiles[p] }
	tests := []struct {
		name     string
		args     []string
		env      []string
		wantArgs []string
		wantEnv  []string
		copies   map[string]string // host path -> name in the files directory
	}{
		{
			name:     "kubeconfig flags share one copy",
			args:     []string{"--kubeconfig=/run/x/kubeconfig", "--authentication-kubeconfig=/run/x/kubeconfig"},
			wantArgs: []string{"--kubeconfig=/ccm-conformance/kubeconfig", "--authentication-kubeconfig=/ccm-conformance/kubeconfig"},
			copies:   map[string]string{"/run/x/kubeconfig": "kubeconfig"},
		},
		{
			name:     "a flag's value as the next argument",
			args:     []string{"--leader-migration-config", "/tmp/lm/lm-ccm.yaml"},
			wantArgs: []string{"--leader-migration-config", "/ccm-conformance/lm-ccm.yaml"},
			copies:   map[string]string{"/tmp/lm/lm-ccm.yaml": "lm-ccm.yaml"},
		},
		{
			name:     "two files of one name",
			args:     []string{"--cloud-config=/profile/deploy/cloud.conf", "--other-config=/other/deploy/cloud.conf"},
			wantArgs: []string{"--cloud-config=/ccm-conformance/cloud.conf", "--other-config=/ccm-conformance/2-cloud.conf"},
			copies:   map[string]string{"/profile/deploy/cloud.conf": "cloud.conf", "/other/deploy/cloud.conf": "2-cloud.conf"},
		},
		{
			name:     "left alone: no file, a relative path, a socket URL, a path inside the image",
			args:     []string{"--v=2", "--cloud-config=relative/kubeconfig", "--endpoint=unix:///run/x/cloud.sock", "--cert-dir=/var/run/certs", "/etc/ssl/certs"},
			wantArgs: []string{"--v=2", "--cloud-config=relative/kubeconfig", "--endpoint=unix:///run/x/cloud.sock", "--cert-dir=/var/run/certs", "/etc/ssl/certs"},
			copies:   map[string]string{},
		},
		{
			name:    "env values",
			env:     []string{"GOOGLE_APPLICATION_CREDENTIALS=/profile/creds.json", "REFERENCE_CLOUD_ENDPOINT=tcp://127.0.0.1:4000", "EMPTY="},
			wantEnv: []string{"GOOGLE_APPLICATION_CREDENTIALS=/ccm-conformance/creds.json", "REFERENCE_CLOUD_ENDPOINT=tcp://127.0.0.1:4000", "EMPTY="},
			copies:  map[string]string{"/profile/creds.json": "creds.json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFileMap(isFile)
			if got := m.rewriteArgs(tt.args); !slices.Equal(got, tt.wantArgs) {
				t.Errorf("args = %q, want %q", got, tt.wantArgs)
			}
			if got := m.rewriteEnv(tt.env); !slices.Equal(got, tt.wantEnv) {
				t.Errorf("env = %q, want %q", got, tt.wantEnv)
			}
			if len(m.byHost) != len(tt.copies) {
				t.Errorf("copies = %v, want %v", m.byHost, tt.copies)
			}
			for host, n := range tt.copies {
				if m.byHost[host] != n {
					t.Errorf("copy of %s = %q, want %q", host, m.byHost[host], n)
				}
			}
		})
	}
}

// The copies are readable by any user, in a directory any user can enter,
// whatever the originals' modes: the container runs as the image's user.
func TestFileMapCopiesAreReadable(t *testing.T) {
	src := t.TempDir()
	kubeconfig := filepath.Join(src, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newFileMap(isRegularFile)
	args := m.rewriteArgs([]string{"--kubeconfig=" + kubeconfig})
	dir := filepath.Join(t.TempDir(), "ccm-main")
	if err := m.copyInto(dir); err != nil {
		t.Fatal(err)
	}
	if args[0] != "--kubeconfig=/ccm-conformance/kubeconfig" {
		t.Errorf("args = %q", args)
	}
	for path, want := range map[string]os.FileMode{dir: os.ModeDir | 0o755, filepath.Join(dir, "kubeconfig"): 0o644, kubeconfig: 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %s, want %s", path, info.Mode(), want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "kubeconfig")); string(data) != "apiVersion: v1\n" {
		t.Errorf("copy holds %q", data)
	}
}

func TestHarnessArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     []string // prefixes of the added args, in order
		wantPort int      // 0: any free port
	}{
		{
			name: "nothing set",
			args: []string{"--v=2"},
			want: []string{"--v=2", "--kubeconfig=/k", "--authentication-kubeconfig=/k", "--authorization-kubeconfig=/k", "--bind-address=127.0.0.1", "--secure-port="},
		},
		{
			name:     "profile sets them",
			args:     []string{"--kubeconfig=/mine", "--authentication-kubeconfig", "/mine", "--authorization-kubeconfig=/mine", "--bind-address=0.0.0.0", "--secure-port=10258"},
			want:     []string{"--kubeconfig=/mine", "--authentication-kubeconfig", "/mine", "--authorization-kubeconfig=/mine", "--bind-address=0.0.0.0", "--secure-port=10258"},
			wantPort: 10258,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, port, err := harnessArgs(tt.args, "/k")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("args = %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("args[%d] = %q, want %q", i, got[i], tt.want[i])
				}
			}
			if tt.wantPort != 0 && port != tt.wantPort || port == 0 {
				t.Errorf("port = %d, want %d", port, tt.wantPort)
			}
		})
	}
	if _, _, err := harnessArgs([]string{"--secure-port=x"}, "/k"); err == nil || !strings.Contains(err.Error(), `--secure-port="x"`) {
		t.Errorf("err = %v, want one naming --secure-port", err)
	}
}

func TestImageDigest(t *testing.T) {
	tests := []struct {
		info ImageInfo
		want string
	}{
		{ImageInfo{ID: "sha256:aaa"}, "sha256:aaa"},
		{ImageInfo{ID: "sha256:aaa", RepoDigests: []string{"registry.example/ccm@sha256:bbb"}}, "sha256:bbb"},
		{ImageInfo{ID: "sha256:aaa", RepoDigests: []string{"broken"}}, "sha256:aaa"},
	}
	for _, tt := range tests {
		if got := tt.info.Digest(); got != tt.want {
			t.Errorf("%+v: Digest = %q, want %q", tt.info, got, tt.want)
		}
	}
}

// InspectImage's errors are one line that names the image, for each way
// Docker can be missing.
func TestInspectImageErrors(t *testing.T) {
	dir := t.TempDir()
	fake := func(name, script string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, cli string
		want      []string
		notFound  bool
	}{
		{name: "no docker", cli: filepath.Join(dir, "nope"), want: []string{"image reg/ccm:v1", "is not on PATH"}},
		{name: "no image", cli: fake("no-image", "echo 'Error response from daemon: No such image: reg/ccm:v1' >&2; exit 1\n"), want: []string{"image reg/ccm:v1", "not present in the local Docker engine", "make images"}, notFound: true},
		{name: "no daemon", cli: fake("no-daemon", "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2; echo second line >&2; exit 1\n"), want: []string{"image reg/ccm:v1", "docker image inspect", "Cannot connect to the Docker daemon"}},
		{name: "garbage", cli: fake("garbage", "echo '<html>'\n"), want: []string{"image reg/ccm:v1", "<html>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := InspectImage(context.Background(), tt.cli, "reg/ccm:v1")
			if err == nil {
				t.Fatal("InspectImage succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if errors.Is(err, ErrImageNotFound) != tt.notFound {
				t.Errorf("errors.Is(err, ErrImageNotFound) = %v, want %v", !tt.notFound, tt.notFound)
			}
		})
	}
	ok := fake("ok", `echo '{"Id":"sha256:abc","RepoDigests":[],"Config":{"User":"65532:65532"}}'`+"\n")
	info, err := InspectImage(context.Background(), ok, "reg/ccm:v1")
	if err != nil || info.ID != "sha256:abc" || info.User != "65532:65532" || info.Digest() != "sha256:abc" {
		t.Errorf("InspectImage = %+v, %v", info, err)
	}
}

func TestOrphans(t *testing.T) {
	running := map[int]uint64{100: 5000, 200: 7000}
	startTime := func(pid int) (uint64, error) {
		if s, ok := running[pid]; ok {
			return s, nil
		}
		return 0, os.ErrNotExist
	}
	tests := []struct {
		name, ps string
		want     []string
	}{
		{"owner runs", "ccm-a\t100\t5000", nil},
		{"owner gone", "ccm-b\t300\t5000", []string{"ccm-b"}},
		{"pid reused by another process", "ccm-c\t200\t6999", []string{"ccm-c"}},
		{"several", "ccm-a\t100\t5000\nccm-b\t300\t1\nccm-d\t200\t7000\n", []string{"ccm-b"}},
		{"unparseable labels are left alone", "ccm-e\t\t\nccm-f\tx\t1\nccm-g\t300\t", nil},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := orphans(tt.ps, startTime); !slices.Equal(got, tt.want) {
				t.Errorf("orphans = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProcStartTime(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	a, err := procStartTime(os.Getpid())
	if err != nil || a == 0 {
		t.Fatalf("procStartTime(self) = %d, %v", a, err)
	}
	if b, _ := procStartTime(os.Getpid()); b != a {
		t.Errorf("start time changed: %d, then %d", a, b)
	}
	if labels := ownerLabels(); labels[LabelOwnerPID] == "" || labels[LabelOwnerStart] == "" || !strings.HasPrefix(labels[LabelOwnerPIDNamespace], "pid:[") {
		t.Errorf("ownerLabels = %v", labels)
	}
}

func TestWriteMountedFiles(t *testing.T) {
	dir := t.TempDir()
	mounts, err := writeMountedFiles(dir, []File{{Path: "/etc/cloud/cloud.conf", Content: "endpoint: x\n"}, {Path: "/etc/key", Content: "k", Secret: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{{Source: filepath.Join(dir, "mounted", "file-0"), Target: "/etc/cloud/cloud.conf"}, {Source: filepath.Join(dir, "mounted", "file-1"), Target: "/etc/key"}}
	if !slices.Equal(mounts, want) {
		t.Fatalf("mounts %v, want %v", mounts, want)
	}
	for i, content := range []string{"endpoint: x\n", "k"} {
		data, err := os.ReadFile(want[i].Source)
		if err != nil || string(data) != content {
			t.Errorf("%s = %q, %v; want %q", want[i].Source, data, err, content)
		}
	}
	if mounts, err := writeMountedFiles(dir, nil); err != nil || mounts != nil {
		t.Errorf("no files: %v, %v", mounts, err)
	}
}

// An argument naming a path that ccm.image.files mounts a file at is left
// alone, even where the host has a file there; other host files are still
// copied, and no copy takes the mounted files' directory name.
func TestMountedPathsAreNotHostFiles(t *testing.T) {
	dir := t.TempDir()
	hostConf, other := filepath.Join(dir, "cloud.conf"), filepath.Join(dir, mountedDir)
	for _, p := range []string{hostConf, other} {
		if err := os.WriteFile(p, []byte("host"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newFileMap(hostFileOutside([]File{{Path: hostConf, Content: "profile"}}, isRegularFile))
	got := m.rewriteArgs([]string{"--cloud-config=" + hostConf, "--other=" + other})
	want := []string{"--cloud-config=" + hostConf, "--other=/ccm-conformance/2-" + mountedDir}
	if !slices.Equal(got, want) {
		t.Errorf("rewriteArgs = %q, want %q", got, want)
	}
}

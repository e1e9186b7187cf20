package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/ccm"
	"github.com/ccm-conformance/ccm-conformance/framework/cluster"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// ccmLauncher brings up the main CCM of a world.
type ccmLauncher interface {
	// start brings the main CCM up and returns once it is ready, having
	// registered on the world the teardown of what it started.
	start(ctx context.Context) error
	// logs is the CCM the specs read.
	logs() framework.CCMLogs
}

// ccmInstanceLauncher is a launcher that also starts extra instances of
// the CCM and restarts the main one, as the leader migration specs need;
// where the launcher lacks it, those specs skip.
type ccmInstanceLauncher interface {
	instances() framework.CCMs
}

// ccmNodeWatcher is a launcher that recorded which of the cluster's real
// nodes awaited the CCM's initialization when it started the CCM, so that
// a spec can see the CCM act on them (framework.NodesAwaitingCCM).
type ccmNodeWatcher interface {
	awaitingNodes() []string
}

// deployedLogLines is how many of a deployed CCM pod's last log lines the
// run keeps: its start (flags, version) as well as the run for a CCM
// deployed for the run, the run's part for one that has run for weeks.
const deployedLogLines = 20000

// deployedCCM is a CCM that already runs in the cluster (ccm.deployed):
// the harness only waits for its pods, reads their logs (and keeps their
// last deployedLogLines lines in logs/ccm.log at the end, also when they
// never became ready) and records the image they run.
type deployedCCM struct {
	w        *world
	deployed *ccm.Deployed
}

func (l *deployedCCM) start(ctx context.Context) error {
	d := l.w.profile.CCM.Deployed
	l.deployed = &ccm.Deployed{Client: l.w.client, Namespace: d.Namespace, LabelSelector: d.LabelSelector, Container: d.Container, TailLines: deployedLogLines}
	l.w.onTeardown("keep the deployed CCM's log", func(ctx context.Context) error { return l.w.keepPodLog(ctx, l.deployed, "ccm.log") })
	if err := l.deployed.WaitReady(ctx); err != nil {
		return &SetupError{Step: "ccm", Err: err}
	}
	l.w.logf("the CCM runs in the cluster (pods %q in %s)", d.LabelSelector, d.Namespace)
	// What names the CCM in the results (half of the LKG pair) is what
	// its pods run.
	image, digest, err := l.deployed.Image(ctx)
	if err != nil {
		l.w.logf("the CCM's image is not known, so the results cannot name it (the kubetest2 tester takes it as --ccm-image and --ccm-digest): %v", err)
		return nil
	}
	l.w.info.CCMImage, l.w.info.CCMDigest = image, digest
	l.w.logf("the CCM's pods run %s (%s)", image, digest)
	return nil
}

func (l *deployedCCM) logs() framework.CCMLogs { return l.deployed }

// deploymentCCM loads the profile's CCM image into the cluster's nodes and
// deploys it there (ccm.StandardDeployment: a ServiceAccount, its RBAC and
// a Deployment on the control plane, leader election on). The nodes that
// await the CCM's initialization at that moment are recorded, so that
// specs can see the CCM act on them.
type deploymentCCM struct {
	w        *world
	loader   cluster.ImageLoader
	deployed *ccm.Deployed
	awaiting []string
}

func (l *deploymentCCM) start(ctx context.Context) error {
	w := l.w
	img, err := w.ccmImageInCluster(ctx, l.loader)
	if err != nil {
		return err
	}
	l.awaiting = img.awaiting
	d := ccm.StandardDeployment{Image: img.reference, Args: img.args, Env: img.env, Files: img.files, RunID: w.runID}
	if err := d.Apply(ctx, w.client); err != nil {
		return &SetupError{Step: "ccm deployment", Err: err}
	}
	w.onTeardown("delete the CCM's deployment", func(ctx context.Context) error {
		// The pods' logs go with them: keep them first.
		err := w.keepPodLog(ctx, d.Deployed(w.client), "ccm.log")
		return errors.Join(err, d.Delete(ctx, w.client))
	})
	w.logf("deployed the CCM image %s into the cluster (Deployment %s/%s, pods %q): %s",
		img.reference, cmp.Or(d.Namespace, ccm.StandardNamespace), cmp.Or(d.Name, ccm.StandardName), d.Selector(), strings.Join(d.ContainerArgs(), " "))
	if err := d.WaitAvailable(ctx, w.client, w.profile.Timeout(profile.CCMReady)); err != nil {
		return &SetupError{Step: "ccm", Err: err}
	}
	l.deployed = d.Deployed(w.client)
	w.logf("the CCM's pod is available; %d nodes await its initialization: %s", len(l.awaiting), strings.Join(l.awaiting, ", "))
	return w.startNodeManagerDaemonSet(ctx, l.loader)
}

// clusterImage is ccm.image as a cluster runs it: loaded into the nodes,
// its args, env and files expanded; awaiting are the nodes that await a
// CCM's initialization once it is loaded, just before the CCM starts.
type clusterImage struct {
	reference string
	args      []string
	env       map[string]string
	files     []ccm.File
	awaiting  []string
}

// ccmImageInCluster loads the profile's CCM image into the cluster's nodes,
// expands what its container gets, and records the nodes that await it.
func (w *world) ccmImageInCluster(ctx context.Context, loader cluster.ImageLoader) (clusterImage, error) {
	img := w.profile.CCM.Image
	// The tag, not the ID: an image saved by ID has no name in the nodes.
	if err := loader.LoadImage(ctx, img.Reference); err != nil {
		return clusterImage{}, &SetupError{Step: "ccm image", Err: err}
	}
	out := clusterImage{reference: img.Reference}
	var err error
	if out.args, err = w.ccmExpander.ExpandAll(img.Args); err != nil {
		return clusterImage{}, &SetupError{Step: "ccm", Err: fmt.Errorf("ccm.image.args: %w", err)}
	}
	if out.env, err = w.ccmExpander.ExpandMap(img.Env); err != nil {
		return clusterImage{}, &SetupError{Step: "ccm", Err: fmt.Errorf("ccm.image.%w", err)}
	}
	w.info.CCMEnv = slices.Sorted(maps.Keys(out.env))
	if out.files, err = w.ccmFiles(w.ccmExpander); err != nil {
		return clusterImage{}, &SetupError{Step: "ccm", Err: err}
	}
	if out.awaiting, err = framework.UninitializedNodes(ctx, w.client); err != nil {
		return clusterImage{}, &SetupError{Step: "ccm", Err: err}
	}
	return out, nil
}

// keepPodLog writes the log of d's pods to logs/<file>.
func (w *world) keepPodLog(ctx context.Context, d *ccm.Deployed, file string) error {
	logs, err := d.Log(ctx)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(w.logDir, file), []byte(logs), 0o644)
}

func (l *deploymentCCM) logs() framework.CCMLogs { return l.deployed }
func (l *deploymentCCM) awaitingNodes() []string { return l.awaiting }

// staticPodCCM runs the profile's CCM image as a static pod of the
// control-plane node's kubelet, beside kube-controller-manager
// (ccm.image.placement: staticPod; ccm.StaticPod): its files and manifest
// written on the node, kube-controller-manager's user given the CCM's
// rules. As for the Deployment, the nodes that await the CCM when it
// starts are recorded.
type staticPodCCM struct {
	w        *world
	loader   cluster.ImageLoader
	host     cluster.ControlPlaneHost
	deployed *ccm.Deployed
	awaiting []string
}

// staticPodGone bounds the wait for the kubelet to stop the static pod
// once its manifest is gone: the teardown's other steps share its time.
const staticPodGone = 30 * time.Second

func (l *staticPodCCM) start(ctx context.Context) error {
	w := l.w
	if l.host == nil {
		return &InputError{fmt.Errorf("profile %s: ccm.image.placement staticPod: the %s backend's cluster has no control-plane node the harness can write on", w.profile.Path, w.backend.Name())}
	}
	img, err := w.ccmImageInCluster(ctx, l.loader)
	if err != nil {
		return err
	}
	l.awaiting = img.awaiting
	sp := ccm.StaticPod{Image: img.reference, Args: img.args, Env: img.env, Files: img.files, RunID: w.runID}
	manifest, err := sp.Manifest()
	if err != nil {
		return &SetupError{Step: "ccm", Err: err}
	}
	node, manifestPath := l.host.ControlPlaneNode(), filepath.Join(l.host.StaticPodDir(), sp.ManifestName())
	// Torn down in reverse: the pod (its log kept first), then its files
	// and rules.
	w.onTeardown("delete the CCM's rules", func(ctx context.Context) error { return sp.DeleteRBAC(ctx, w.client) })
	w.onTeardown("remove the CCM's files from node "+node, func(ctx context.Context) error { return l.host.RemoveNodePath(ctx, sp.FilesDir()) })
	if err := sp.ApplyRBAC(ctx, w.client); err != nil {
		return &SetupError{Step: "ccm static pod", Err: err}
	}
	for _, f := range sp.NodeFiles() {
		if err := l.host.WriteNodeFile(ctx, f.Path, []byte(f.Content), f.Mode); err != nil {
			return &SetupError{Step: "ccm static pod", Err: err}
		}
	}
	w.onTeardown("remove the CCM's static pod from node "+node, func(ctx context.Context) error {
		err := w.keepPodLog(ctx, sp.Deployed(w.client), "ccm.log")
		if rmErr := l.host.RemoveNodePath(ctx, manifestPath); rmErr != nil {
			return errors.Join(err, rmErr)
		}
		return errors.Join(err, sp.WaitGone(ctx, w.client, node, staticPodGone))
	})
	if err := l.host.WriteNodeFile(ctx, manifestPath, manifest, 0o600); err != nil {
		return &SetupError{Step: "ccm static pod", Err: err}
	}
	w.logf("wrote the CCM image %s as static pod %s on node %s (beside kube-controller-manager, with its kubeconfig): %s",
		img.reference, manifestPath, node, strings.Join(sp.ContainerArgs(), " "))
	if err := sp.WaitReady(ctx, w.client, node, w.profile.Timeout(profile.CCMReady)); err != nil {
		return &SetupError{Step: "ccm", Err: err}
	}
	l.deployed = sp.Deployed(w.client)
	w.logf("the CCM's static pod %s is ready; %d nodes await its initialization: %s", sp.MirrorPodName(node), len(l.awaiting), strings.Join(l.awaiting, ", "))
	return w.startNodeManagerDaemonSet(ctx, l.loader)
}

// startNodeManagerDaemonSet runs ccm.nodeManager.image, where the profile
// has one, as a DaemonSet on every node of the cluster
// (ccm.NodeManagerDaemonSet), and waits until each node runs its pod.
// Its pods' log goes to logs/node-manager.log at the end.
func (w *world) startNodeManagerDaemonSet(ctx context.Context, loader cluster.ImageLoader) error {
	nm := w.profile.CCM.NodeManager
	if nm == nil || nm.Image == "" {
		return nil
	}
	// Its image was found in the Docker engine and recorded
	// (inspectNodeManagerImage, recordCCMIdentity) before the run.
	if err := loader.LoadImage(ctx, nm.Image); err != nil {
		return &SetupError{Step: "node manager image", Err: err}
	}
	args, err := w.ccmExpander.ExpandAll(nm.Args)
	if err != nil {
		return &SetupError{Step: "node manager", Err: fmt.Errorf("ccm.nodeManager.args: %w", err)}
	}
	env, err := w.ccmExpander.ExpandMap(nm.Env)
	if err != nil {
		return &SetupError{Step: "node manager", Err: fmt.Errorf("ccm.nodeManager.%w", err)}
	}
	ds := ccm.NodeManagerDaemonSet{Image: nm.Image, Args: args, Env: env, RunID: w.runID}
	w.onTeardown("delete the node manager's DaemonSet", func(ctx context.Context) error {
		err := w.keepPodLog(ctx, ds.Deployed(w.client), "node-manager.log")
		return errors.Join(err, ds.Delete(ctx, w.client))
	})
	if err := ds.Apply(ctx, w.client); err != nil {
		return &SetupError{Step: "node manager DaemonSet", Err: err}
	}
	w.logf("deployed the node manager image %s as a DaemonSet on every node (pods %q)", nm.Image, ds.Selector())
	if err := ds.WaitRunning(ctx, w.client, w.profile.Timeout(profile.CCMReady)); err != nil {
		return &SetupError{Step: "node manager", Err: err}
	}
	return nil
}

func (l *staticPodCCM) logs() framework.CCMLogs { return l.deployed }
func (l *staticPodCCM) awaitingNodes() []string { return l.awaiting }

// processCCM runs the CCM as processes the harness owns, on its host: the
// main instance, extra instances and restarts of the main one. starter
// says how one instance is started (binaryCCM or containerCCM).
type processCCM struct {
	w       *world
	starter processStarter
	main    *mainCCM
	// lastInstance is the number of the last extra instance started.
	lastInstance int
}

// processStarter starts one instance of the CCM as a process.
type processStarter interface {
	// prepare runs once, before the main instance starts.
	prepare(ctx context.Context)
	// startProcess starts an instance; name is "" for the main one.
	startProcess(in instanceInput) (*ccm.Process, error)
}

// instanceInput is one instance's command line and where it logs.
type instanceInput struct {
	name, label string
	args        []string
	profileEnv  map[string]string
	envField    string
	expander    *profile.Expander
	logPath     string
}

func (l *processCCM) start(ctx context.Context) error {
	l.starter.prepare(ctx)
	p, err := l.startInstance(ctx, "", l.w.ccmExpander, nil)
	if err != nil {
		return &SetupError{Step: "ccm", Err: err}
	}
	l.main = &mainCCM{current: p}
	l.w.onTeardown("stop ccm", l.main.Stop)
	return nil
}

func (l *processCCM) logs() framework.CCMLogs { return l.main }

func (l *processCCM) instances() framework.CCMs { return ccmInstances{l} }

// startInstance starts an instance of the profile's CCM with extraArgs
// appended and waits until it is healthy. The main instance has name ""
// and expander w.ccmExpander (${INSTANCE} 0); each extra one an expander of
// its own, so that its ${INSTANCE} and ports differ.
func (l *processCCM) startInstance(ctx context.Context, name string, e *profile.Expander, extraArgs []string) (*ccm.Process, error) {
	w := l.w
	logName, label := "ccm.log", "ccm"
	if name != "" {
		logName, label = "ccm-"+name+".log", "ccm "+name
	}
	profileArgs, profileEnv, fieldPath := w.profile.CCM.Command()
	args, err := e.ExpandAll(profileArgs)
	if err != nil {
		return nil, fmt.Errorf("%s.args: %w", fieldPath, err)
	}
	p, err := l.starter.startProcess(instanceInput{
		name: name, label: label,
		args:       append(args, extraArgs...),
		profileEnv: profileEnv, envField: fieldPath + ".env",
		expander: e,
		logPath:  filepath.Join(w.logDir, logName),
	})
	if err != nil {
		return nil, err
	}
	if err := p.WaitReady(ctx, w.profile.Timeout(profile.CCMReady), ccmHealthPoll); err != nil {
		_ = p.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	w.logf("%s healthy on port %d", label, p.SecurePort())
	return p, nil
}

// binaryCCM runs ccm.binary (the profile's path, or the binary built from
// its module) as a child process.
type binaryCCM struct{ w *world }

func (binaryCCM) prepare(context.Context) {}

func (s binaryCCM) startProcess(in instanceInput) (*ccm.Process, error) {
	w := s.w
	path, err := in.expander.Expand(w.ccmBinary)
	if err != nil {
		return nil, fmt.Errorf("ccm.binary.path: %w", err)
	}
	env, err := in.expander.Environ(in.profileEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.envField, err)
	}
	if in.expander.Instance() == 0 {
		w.info.CCMEnv = profile.EnvNames(env)
	}
	p, err := ccm.StartBinary(ccm.BinaryOptions{
		Name:       in.label,
		Path:       w.profile.ResolvePath(path),
		Args:       in.args,
		Env:        env,
		Kubeconfig: w.cluster.Kubeconfig(),
		LogPath:    in.logPath,
	})
	if err != nil {
		return nil, err
	}
	w.logf("started %s (pid %d): %s", in.label, p.Pid(), p.CommandLine())
	return p, nil
}

// containerCCM runs ccm.image with Docker on the host network. A
// container's name is unique to the run, the world and the instance; its
// labels say which run it belongs to, so that whatever a run leaves can be
// found.
type containerCCM struct{ w *world }

// prepare removes the CCM containers of runs whose harness is gone: one
// killed with SIGKILL could not remove its own.
func (s containerCCM) prepare(ctx context.Context) {
	removed, err := ccm.RemoveOrphans(ctx, "")
	if len(removed) > 0 {
		s.w.logf("removed %d CCM containers whose harness is gone: %s", len(removed), strings.Join(removed, ", "))
	}
	if err != nil {
		s.w.logf("removing CCM containers whose harness is gone: %v", err)
	}
}

func (s containerCCM) startProcess(in instanceInput) (*ccm.Process, error) {
	w := s.w
	// The container's environment is the profile's alone.
	env, err := in.expander.Env(in.profileEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.envField, err)
	}
	if in.expander.Instance() == 0 {
		w.info.CCMEnv = profile.EnvNames(env)
	}
	instance := cmp.Or(in.name, "main")
	parts := []string{"ccm-conformance", w.runID}
	if w.worldName != "" {
		parts = append(parts, w.worldName)
	}
	containerName := containerNameFor(append(parts, instance)...)
	reference := w.profile.CCM.Image.Reference
	image := reference
	if w.image != nil && w.image.ID != "" {
		image = w.image.ID
	}
	files, err := w.ccmFiles(in.expander)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{ccm.LabelRun: w.runID, ccm.LabelInstance: instance, ccm.LabelImage: reference}
	if w.worldName != "" {
		labels[labelWorld] = w.worldName
	}
	p, err := ccm.StartImage(ccm.ImageOptions{
		Name:       in.label,
		Image:      image,
		Args:       in.args,
		Env:        env,
		Kubeconfig: w.cluster.Kubeconfig(),
		Files:      files,
		LogPath:    in.logPath,
		FilesDir:   filepath.Join(w.runDir, "container-"+containerName),
		Container:  containerName,
		Labels:     labels,
	})
	if err != nil {
		return nil, err
	}
	w.logf("started %s in container %s (label %s=%s): %s", in.label, p.Container(), ccm.LabelRun, w.runID, p.CommandLine())
	return p, nil
}

// labelWorld names the world (lane) of a run a container belongs to.
const labelWorld = "ccm-conformance.world"

// containerNameFor joins parts into a Docker container name: characters a
// name cannot have become "-".
func containerNameFor(parts ...string) string {
	name := strings.Join(parts, "-")
	var b strings.Builder
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// mainCCM is the main CCM instance a processCCM started; specs may stop
// and restart it, so it is reached through this handle. Its log file stays
// the same.
type mainCCM struct {
	mu      sync.Mutex
	current *ccm.Process
	// stopped is set while a spec (or the teardown) has stopped it.
	stopped bool
}

func (m *mainCCM) get() *ccm.Process {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

func (m *mainCCM) set(p *ccm.Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.current, m.stopped = p, false
}

func (m *mainCCM) Log(ctx context.Context) (string, error) { return m.get().Log(ctx) }

func (m *mainCCM) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.stopped = true
	p := m.current
	m.mu.Unlock()
	return p.Stop(ctx)
}

// EndedOnItsOwn implements framework.CCMEnded.
func (m *mainCCM) EndedOnItsOwn() error {
	m.mu.Lock()
	p, stopped := m.current, m.stopped
	m.mu.Unlock()
	if stopped {
		return nil
	}
	return p.ExitError()
}

// ccmInstances implements framework.CCMs for a processCCM.
type ccmInstances struct{ l *processCCM }

func (c ccmInstances) Start(ctx context.Context, name string, extraArgs []string) (*ccm.Process, error) {
	if name == "" {
		return nil, errors.New("an extra CCM instance needs a name")
	}
	c.l.lastInstance++
	p, err := c.l.startInstance(ctx, name, c.l.w.expander.ForInstance(c.l.lastInstance), extraArgs)
	if err != nil {
		return nil, err
	}
	c.l.w.onTeardown("stop ccm "+name, p.Stop)
	return p, nil
}

func (c ccmInstances) StopMain(ctx context.Context) (func(context.Context) error, error) {
	if err := c.l.main.Stop(ctx); err != nil {
		return nil, err
	}
	c.l.w.logf("stopped the main CCM for a spec")
	return func(ctx context.Context) error {
		p, err := c.l.startInstance(ctx, "", c.l.w.ccmExpander, nil)
		if err != nil {
			return err
		}
		c.l.main.set(p)
		return nil
	}, nil
}

// ccmFiles are the files of ccm.image.files, their content expanded.
func (w *world) ccmFiles(e *profile.Expander) ([]ccm.File, error) {
	var out []ccm.File
	for i, f := range w.profile.CCM.Image.Files {
		content, err := e.Expand(f.Content)
		if err != nil {
			return nil, fmt.Errorf("ccm.image.files[%d] (%s): %w", i, f.Path, err)
		}
		out = append(out, ccm.File{Path: f.Path, Content: content, Secret: f.Secret})
	}
	return out, nil
}

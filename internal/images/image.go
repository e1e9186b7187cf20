package images

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The OCI annotation keys the images carry as labels
// (github.com/opencontainers/image-spec, annotations.md).
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelSource      = "org.opencontainers.image.source"
	LabelCreated     = "org.opencontainers.image.created"
)

// Metadata is what an image says about its build.
type Metadata struct {
	// Version is the label LabelVersion.
	Version string
	// Revision is the label LabelRevision; left out when empty.
	Revision string
	// Source is the label LabelSource.
	Source string
	// Created stamps the files, the history and the configuration.
	Created time.Time
	// Arch is the image's architecture (a GOARCH).
	Arch string
}

// Image returns the image of target: one layer (layerEntries) on an empty
// image, run as UID:GID with the binary as its entrypoint.
func Image(t Target, binary []byte, meta Metadata) (v1.Image, error) {
	created := meta.Created.UTC()
	tarData, err := layerTar(layerEntries(t.Name, binary), created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarData)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: fmt.Sprintf("ccm-conformance images: %s FROM scratch (static binary, user %d:%d)", t.Name, UID, GID),
			Comment:   "built with go-containerregistry, no Dockerfile",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	labels := map[string]string{
		LabelTitle:   t.Name,
		LabelVersion: meta.Version,
		LabelSource:  meta.Source,
		LabelCreated: created.Format(time.RFC3339),
	}
	if t.Description != "" {
		labels[LabelDescription] = t.Description
	}
	if meta.Revision != "" {
		labels[LabelRevision] = meta.Revision
	}
	img, err = mutate.Config(img, v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{path.Join(BinDir, t.Name)},
		Env:        []string{"PATH=" + BinDir},
		WorkingDir: "/",
		Labels:     labels,
	})
	if err != nil {
		return nil, fmt.Errorf("setting the configuration: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", meta.Arch
	cf.Created = v1.Time{Time: created}
	cf.Author = "ccm-conformance"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the platform: %w", err)
	}
	return img, nil
}

// WithBinary adds a layer holding one more static executable at
// BinDir/name to img (the release image holds the CLI and the kubetest2
// tester). The image's entrypoint stays the first binary.
func WithBinary(img v1.Image, name string, binary []byte, created time.Time) (v1.Image, error) {
	tarData, err := layerTar([]entry{{name: path.Join(BinDir[1:], name), mode: 0o755, data: binary}}, created.UTC())
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarData)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("making the layer of %s: %w", name, err)
	}
	return mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created.UTC()},
			CreatedBy: "ccm-conformance images: " + name + " (static binary)",
			Comment:   "built with go-containerregistry, no Dockerfile",
		},
	})
}

package release

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ccm-conformance/ccm-conformance/internal/images"
)

// ImageRepository is the name the release image carries in its index
// (org.opencontainers.image.ref.name is REPOSITORY:VERSION).
const ImageRepository = "ccm-conformance/ccm-conformance"

type platformImage struct {
	platform v1.Platform
	image    v1.Image
}

// platformImageOf puts one platform's binaries (the CLI first, its
// entrypoint) into an image FROM scratch.
func platformImageOf(binaries []string, meta images.Metadata) (v1.Image, error) {
	var img v1.Image
	for i, b := range Binaries {
		data, err := os.ReadFile(binaries[i])
		if err != nil {
			return nil, err
		}
		if i == 0 {
			img, err = images.Image(b, data, meta)
		} else {
			img, err = images.WithBinary(img, b.Name, data, meta.Created)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name, err)
		}
	}
	return img, nil
}

// writeIndex writes the platforms' images as one OCI image index, in the
// OCI image layout, tarred into path (what Docker 25 and later, skopeo and
// crane read as an OCI archive).
func writeIndex(imgs []platformImage, path, version string) error {
	var idx v1.ImageIndex = empty.Index
	for _, p := range imgs {
		platform := p.platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: p.image,
			Descriptor: v1.Descriptor{
				Platform:    &platform,
				Annotations: map[string]string{"org.opencontainers.image.ref.name": ImageRepository + ":" + version},
			},
		})
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	return tarDir(dir, path)
}

// tarDir writes the files under dir into a tar at path, named relative to
// dir.
func tarDir(dir, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = h.ModTime.UTC().Truncate(0), 0, 0, "", ""
		if d.IsDir() {
			h.Name += "/"
			return tw.WriteHeader(h)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeDockerTarball writes one platform's image as `docker save` would,
// tagged ImageRepository:version.
func writeDockerTarball(img v1.Image, path, version string) error {
	tag, err := images.TagFor(version)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(ImageRepository + ":" + tag)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

package releasecheck

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/daemon"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// OCILayoutPrefix marks a reference to an OCI image layout directory.
const OCILayoutPrefix = "oci-layout:"

// RefHelp says which forms of reference Open takes; the CLI quotes it.
const RefHelp = `REF is one of:
  oci-layout:DIR   an OCI image layout directory (index.json, blobs/)
  PATH.tar         a tarball: 'docker save' form (manifest.json) or an OCI
                   layout tarred (index.json, oci-layout)
  NAME[:TAG]       an image in the local Docker engine (nothing is pulled)`

// InputError is a reference that names no readable image: missing,
// corrupt, or an engine that does not answer. The CLI exits 2 on it.
type InputError struct {
	Ref string
	Err error
}

func (e *InputError) Error() string {
	// One line: the CLI prints it as the whole message.
	msg := strings.Join(strings.Fields(e.Err.Error()), " ")
	return fmt.Sprintf("image %s: %s", e.Ref, msg)
}
func (e *InputError) Unwrap() error { return e.Err }

// Source is an image read from a reference: a single image, or an index
// (a multi-arch image) and the image of it that is checked.
type Source struct {
	// Ref is the reference as given.
	Ref string
	// Kind is "docker-daemon", "oci-layout" or "tarball".
	Kind string
	// Index is the image index when the reference names one, else nil.
	Index v1.ImageIndex
	// Platforms are the index's platforms (os/arch[/variant]), nil without
	// an index.
	Platforms []string
	// Image is the image checked: the reference's image, or the index's
	// image for the wanted platform.
	Image v1.Image

	cleanup func()
}

// Close removes what Open unpacked.
func (s *Source) Close() {
	if s != nil && s.cleanup != nil {
		s.cleanup()
		s.cleanup = nil
	}
}

// Open reads the image ref names (RefHelp). From an index it picks the
// image of platform (os/arch, e.g. linux/amd64). Anything wrong with ref
// is an *InputError.
func Open(ctx context.Context, ref, platform string) (*Source, error) {
	s, err := open(ctx, ref, platform)
	if err != nil {
		return nil, &InputError{Ref: ref, Err: err}
	}
	// Every reader is lazy: read the manifest and configuration now, so a
	// corrupt image is bad input here, not an odd check result later.
	if _, err := s.Image.Manifest(); err != nil {
		s.Close()
		return nil, &InputError{Ref: ref, Err: fmt.Errorf("reading the manifest: %w", err)}
	}
	if _, err := s.Image.ConfigFile(); err != nil {
		s.Close()
		return nil, &InputError{Ref: ref, Err: fmt.Errorf("reading the configuration: %w", err)}
	}
	return s, nil
}

func open(ctx context.Context, ref, platform string) (*Source, error) {
	switch {
	case ref == "":
		return nil, errors.New("empty reference")
	case strings.HasPrefix(ref, OCILayoutPrefix):
		dir := strings.TrimPrefix(ref, OCILayoutPrefix)
		s, err := fromLayout(dir, platform)
		if err != nil {
			return nil, err
		}
		s.Ref, s.Kind = ref, "oci-layout"
		return s, nil
	case strings.HasSuffix(ref, ".tar") || isFile(ref):
		return fromTarball(ref, platform)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("not a directory, a tarball or an image name: %w", err)
	}
	// Buffered in memory: the file-backed opener leaves its copy of the
	// image in the temporary directory until a garbage collection, which a
	// short command never reaches.
	img, err := daemon.Image(r, daemon.WithContext(ctx), daemon.WithBufferedOpener())
	if err != nil {
		return nil, fmt.Errorf("not in the local Docker engine (nothing is pulled: load it first, or name a tarball or oci-layout:DIR): %w", err)
	}
	return &Source{Ref: ref, Kind: "docker-daemon", Image: img}, nil
}

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular()
}

// fromTarball reads a `docker save` tarball with tarball.ImageFromPath, and
// an OCI layout in a tarball by unpacking it into a temporary directory.
func fromTarball(path, platform string) (*Source, error) {
	names, err := tarNames(path)
	if err != nil {
		return nil, err
	}
	switch {
	case names["manifest.json"]:
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			return nil, err
		}
		return &Source{Ref: path, Kind: "tarball", Image: img}, nil
	case names["index.json"] && names["oci-layout"]:
		dir, err := os.MkdirTemp("", "ccm-release-check-layout-")
		if err != nil {
			return nil, err
		}
		if err := untar(path, dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s, err := fromLayout(dir, platform)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.Ref, s.Kind, s.cleanup = path, "tarball", func() { os.RemoveAll(dir) }
		return s, nil
	}
	return nil, errors.New("neither a 'docker save' tarball (no manifest.json) nor an OCI layout (no index.json and oci-layout)")
}

// tarNames lists the files of a tarball, reading it to the end, so that a
// truncated or corrupt tarball is found here.
func tarNames(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a readable tarball: %w", err)
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return nil, fmt.Errorf("not a readable tarball: %s: %w", h.Name, err)
		}
		names[strings.TrimPrefix(filepath.Clean(h.Name), "./")] = true
	}
	if len(names) == 0 {
		return nil, errors.New("an empty tarball")
	}
	return names, nil
}

// untar unpacks the regular files and directories of a tarball into dir,
// refusing names that leave it.
func untar(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a readable tarball: %w", err)
		}
		clean := filepath.Clean(h.Name)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return fmt.Errorf("tarball entry %q leaves the layout", h.Name)
		}
		target := filepath.Join(dir, clean)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("unpacking %s: %w", h.Name, err)
			}
		}
	}
}

// fromLayout reads an OCI layout. Its index.json names either one image,
// one index (a multi-arch image), or several images, which are taken as
// the platforms of one multi-arch image.
func fromLayout(dir, platform string) (*Source, error) {
	if dir == "" {
		return nil, errors.New("oci-layout: needs a directory")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := root.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading index.json: %w", err)
	}
	switch {
	case len(im.Manifests) == 0:
		return nil, errors.New("index.json names no image")
	case len(im.Manifests) == 1 && !im.Manifests[0].MediaType.IsIndex():
		img, err := root.Image(im.Manifests[0].Digest)
		if err != nil {
			return nil, err
		}
		return &Source{Image: img}, nil
	case len(im.Manifests) == 1:
		idx, err := root.ImageIndex(im.Manifests[0].Digest)
		if err != nil {
			return nil, err
		}
		return fromIndex(idx, platform)
	}
	return fromIndex(root, platform)
}

// fromIndex picks the image of platform from an index.
func fromIndex(idx v1.ImageIndex, platform string) (*Source, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the index: %w", err)
	}
	s := &Source{Index: idx}
	var pick *v1.Descriptor
	for i, d := range im.Manifests {
		if !d.MediaType.IsImage() {
			continue
		}
		p := "unknown"
		if d.Platform != nil {
			p = d.Platform.String()
		} else if img, err := idx.Image(d.Digest); err == nil {
			// An index written without platforms: the configuration says.
			if cf, err := img.ConfigFile(); err == nil {
				p = cf.Platform().String()
			}
		}
		s.Platforms = append(s.Platforms, p)
		if pick == nil && (p == platform || strings.HasPrefix(p, platform+"/")) {
			pick = &im.Manifests[i]
		}
	}
	if len(s.Platforms) == 0 {
		return nil, errors.New("the index names no image")
	}
	if pick == nil {
		return nil, fmt.Errorf("the index has no image for %s (it has %s)", platform, strings.Join(s.Platforms, ", "))
	}
	img, err := idx.Image(pick.Digest)
	if err != nil {
		return nil, err
	}
	s.Image = img
	return s, nil
}

package releasecheck

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// maxLinks bounds the symbolic links followed to resolve the entrypoint.
const maxLinks = 16

// file is one entry of an image's flattened file system.
type file struct {
	mode     os.FileMode
	linkname string // a symlink's target, or a hard link's (absolute) source
	hardlink bool
	size     int64
}

// filesystem is an image's flattened file system (whiteouts applied),
// keyed by absolute, clean path.
type filesystem map[string]file

// readFS lists the files of the image's flattened file system.
func readFS(img v1.Image) (filesystem, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	fsys := filesystem{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fsys, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the layers: %w", err)
		}
		f := file{mode: h.FileInfo().Mode(), size: h.Size}
		switch h.Typeflag {
		case tar.TypeSymlink:
			f.linkname = h.Linkname
		case tar.TypeLink:
			f.linkname, f.hardlink = cleanPath(h.Linkname), true
		}
		fsys[cleanPath(h.Name)] = f
	}
}

func cleanPath(p string) string { return path.Clean("/" + p) }

// resolve follows symbolic links (in every element of p) inside the
// image and returns the path of the regular file p names.
func (fsys filesystem) resolve(p string) (string, error) {
	p = cleanPath(p)
	for hops := 0; hops <= maxLinks; hops++ {
		changed := false
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur := "/"
		for i, part := range parts {
			next := path.Join(cur, part)
			f, ok := fsys[next]
			if !ok {
				return "", fmt.Errorf("%s is not in the image", p)
			}
			if f.mode&os.ModeSymlink != 0 {
				target := f.linkname
				if !path.IsAbs(target) {
					target = path.Join(cur, target)
				}
				p = path.Join(append([]string{target}, parts[i+1:]...)...)
				p = cleanPath(p)
				changed = true
				break
			}
			cur = next
		}
		if !changed {
			f := fsys[p]
			if f.hardlink {
				return f.linkname, nil
			}
			if !f.mode.IsRegular() {
				return "", fmt.Errorf("%s is not a regular file (mode %s)", p, f.mode)
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("more than %d symbolic links resolving %s", maxLinks, p)
}

// extract writes the regular file at p (resolved) of the image's
// flattened file system to dst, mode 0755.
func extract(img v1.Image, p, dst string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s is not in the layers", p)
		}
		if err != nil {
			return fmt.Errorf("reading the layers: %w", err)
		}
		if cleanPath(h.Name) != p || h.Typeflag != tar.TypeReg {
			continue
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

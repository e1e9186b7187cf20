package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"time"
)

// The user the images run as: not root, and the same IDs distroless's
// "nonroot" user has, so that a cluster's policies written for those
// images fit these.
const (
	// UID and GID of the image's user.
	UID, GID = 65532, 65532
	// UserName and GroupName as /etc/passwd and /etc/group spell them.
	UserName, GroupName = "nonroot", "nonroot"
	// HomeDir is the user's home, owned by it.
	HomeDir = "/home/nonroot"
	// BinDir is where the binary lands in the image.
	BinDir = "/usr/local/bin"
)

// entry is one file or directory of the layer.
type entry struct {
	name     string // without a leading slash
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

// layerEntries are the files of an image that holds only binary, a static
// executable: the directories it needs, /etc/passwd and /etc/group naming
// the user, a world-writable /tmp, and the binary. No shell, no libraries.
func layerEntries(binaryName string, binary []byte) []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", UserName, UID, GID, UserName, HomeDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", GroupName, GID)
	home := HomeDir[1:]
	bin := BinDir[1:]
	return []entry{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: path.Dir(home), mode: 0o755, dir: true},
		{name: home, mode: 0o700, uid: UID, gid: GID, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
		{name: "usr", mode: 0o755, dir: true},
		{name: "usr/local", mode: 0o755, dir: true},
		{name: bin, mode: 0o755, dir: true},
		{name: path.Join(bin, binaryName), mode: 0o755, data: binary},
	}
}

// layerTar writes entries as an uncompressed tar, every entry stamped with
// mtime so that the same inputs give the same bytes.
func layerTar(entries []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			Uname:   userName(e.uid),
			Gname:   groupName(e.gid),
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if !e.dir {
			if _, err := tw.Write(e.data); err != nil {
				return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

func userName(uid int) string {
	if uid == UID {
		return UserName
	}
	return "root"
}

func groupName(gid int) string {
	if gid == GID {
		return GroupName
	}
	return "root"
}

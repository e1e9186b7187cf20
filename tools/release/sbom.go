package release

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"
)

// The SPDX 2.3 document a release writes beside each binary: one package
// per Go module linked into it, read from the binary itself (the build
// information the go command embeds), so the list is what shipped, not
// what go.mod allows. Only the fields SPDX requires and the ones a
// scanner matches on (the purl) are filled.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	// Comment carries the module's go.sum hash (h1:...), which SPDX has
	// no checksum algorithm for.
	Comment string `json:"comment,omitempty"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// WriteSBOM reads the Go build information of binary and writes its
// module list as binary.spdx.json; version names the main module's
// release (a checkout's build records "(devel)").
func WriteSBOM(binary, version string, created time.Time) (string, error) {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("%s: no Go build information: %w", binary, err)
	}
	doc := sbomOf(filepath.Base(binary), info, version, created)
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	path := binary + ".spdx.json"
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

func sbomOf(name string, info *debug.BuildInfo, version string, created time.Time) spdxDocument {
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              name,
		DocumentNamespace: "https://github.com/ccm-conformance/ccm-conformance/releases/" + version + "/" + name + ".spdx.json",
		CreationInfo: spdxCreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: ccm-conformance make release", "Tool: " + info.GoVersion},
		},
	}
	main := info.Main
	main.Version = version
	modules := []debug.Module{main}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		modules = append(modules, *d)
	}
	for i, m := range modules {
		id := fmt.Sprintf("SPDXRef-Package-%d", i)
		doc.Packages = append(doc.Packages, spdxPackage{
			Name:             m.Path,
			SPDXID:           id,
			VersionInfo:      m.Version,
			DownloadLocation: "NOASSERTION",
			ExternalRefs: []spdxExternalRef{{
				ReferenceCategory: "PACKAGE-MANAGER",
				ReferenceType:     "purl",
				ReferenceLocator:  "pkg:golang/" + m.Path + "@" + m.Version,
			}},
			Comment: m.Sum,
		})
		if i == 0 {
			doc.Relationships = append(doc.Relationships, spdxRelationship{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: id})
		} else {
			doc.Relationships = append(doc.Relationships, spdxRelationship{Element: "SPDXRef-Package-0", Type: "DEPENDS_ON", Related: id})
		}
	}
	return doc
}

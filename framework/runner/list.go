package runner

import (
	"fmt"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"golang.org/x/sys/unix"

	"github.com/ccm-conformance/ccm-conformance/framework"
)

// SpecInfo describes one spec for `ccm-conformance list`.
type SpecInfo struct {
	Text   string   `json:"text"`
	Labels []string `json:"labels"`
	// Suite is the suite's name.
	Suite string `json:"suite"`
}

// List returns the specs of suites that labelFilter selects, without
// running anything. Like Run, it can be called once per process (a ginkgo
// limit).
func List(suites []framework.Suite, labelFilter string) ([]SpecInfo, error) {
	if labelFilter != "" {
		if _, err := types.ParseLabelFilter(labelFilter); err != nil {
			return nil, &InputError{fmt.Errorf("--label-filter %q: %s", labelFilter, labelFilterError(err))}
		}
	}
	declareSuites(&framework.Framework{}, suites)
	var specs []SpecInfo
	ginkgo.ReportAfterSuite("list", func(rep ginkgo.Report) {
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt || (labelFilter != "" && !matches(labelFilter, s.Labels())) {
				continue
			}
			specs = append(specs, SpecInfo{Text: strings.TrimSpace(s.FullText()), Labels: s.Labels(), Suite: SuiteOf(s)})
		}
	})
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	suiteConfig.DryRun = true
	suiteConfig.LabelFilter = labelFilter
	reporterConfig.Succinct = true

	// Ginkgo's reporter writes to the process's stdout; a dry run has
	// nothing to say there, so stdout points at /dev/null meanwhile.
	restore, err := silenceStdout()
	if err != nil {
		return nil, err
	}
	ginkgo.RunSpecs(failRecorder{}, "list", suiteConfig, reporterConfig)
	restore()
	return specs, nil
}

func matches(filter string, labels []string) bool {
	f, err := types.ParseLabelFilter(filter)
	return err == nil && f(labels)
}

func silenceStdout() (func(), error) {
	saved, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("silencing ginkgo: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		unix.Close(saved)
		return nil, fmt.Errorf("silencing ginkgo: %w", err)
	}
	defer null.Close()
	if err := unix.Dup2(int(null.Fd()), 1); err != nil {
		unix.Close(saved)
		return nil, fmt.Errorf("silencing ginkgo: %w", err)
	}
	return func() {
		_ = unix.Dup2(saved, 1)
		unix.Close(saved)
	}, nil
}

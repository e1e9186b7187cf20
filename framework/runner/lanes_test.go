package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/ccm-conformance/ccm-conformance/framework"
)

func laneSpec(suite, text string, state types.SpecState) types.SpecReport {
	return types.SpecReport{
		ContainerHierarchyTexts: []string{"[" + suite + "]", "Describe"},
		LeafNodeText:            text,
		LeafNodeType:            types.NodeTypeIt,
		LeafNodeLocation:        types.CodeLocation{FileName: suite + ".go", LineNumber: len(text)},
		State:                   state,
	}
}

func TestClaimOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "claims"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := laneSpec("routes", "gives routes", types.SpecStateInvalid)
	first, second := Lane{Index: 1, Dir: dir}, Lane{Index: 2, Dir: dir}
	if ok, err := first.claim(s); !ok || err != nil {
		t.Fatalf("lane 1 claim = %v, %v; want it", ok, err)
	}
	if ok, err := second.claim(s); ok || err != nil {
		t.Errorf("lane 2 claim of the same spec = %v, %v; want refused", ok, err)
	}
	other := laneSpec("routes", "deletes routes", types.SpecStateInvalid)
	if ok, err := second.claim(other); !ok || err != nil {
		t.Errorf("lane 2 claim of another spec = %v, %v; want it", ok, err)
	}
	claims, err := readClaims(filepath.Join(dir, "claims"))
	if err != nil {
		t.Fatal(err)
	}
	if c := claims[specID(s)]; c.Lane != 1 || c.Text != "gives routes" || c.Hierarchy[0] != "[routes]" {
		t.Errorf("claim record = %+v", c)
	}
}

func TestMergeLaneReports(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := laneSpec("nodeaddress", "a", types.SpecStatePassed)
	b := laneSpec("nodeaddress", "b", types.SpecStateFailed)
	c := laneSpec("routes", "c", types.SpecStatePassed)
	filtered := laneSpec("routes", "left out by the filter", types.SpecStateSkipped)
	crashed := laneSpec("routes", "its lane died", types.SpecStatePassed)
	skippedHere := func(s types.SpecReport) types.SpecReport {
		s.State = types.SpecStateSkipped
		s.Failure.Message = notClaimedPrefix
		return s
	}
	claims := map[string]claimRecord{
		specID(a):       {Lane: 1},
		specID(b):       {Lane: 2},
		specID(c):       {Lane: 2},
		specID(crashed): {Lane: 3, Hierarchy: crashed.ContainerHierarchyTexts, Text: crashed.LeafNodeText, Location: "routes.go:13"},
	}
	suiteNode := types.SpecReport{LeafNodeType: types.NodeTypeReportAfterSuite, State: types.SpecStatePassed}
	failedSuiteNode := types.SpecReport{LeafNodeType: types.NodeTypeReportAfterSuite, State: types.SpecStateFailed}
	reports := []*laneReport{
		{Report: types.Report{StartTime: t0.Add(time.Second), EndTime: t0.Add(30 * time.Second), SuiteSucceeded: true,
			SpecReports: types.SpecReports{a, skippedHere(b), skippedHere(c), filtered, skippedHere(crashed), suiteNode}}},
		{Report: types.Report{StartTime: t0, EndTime: t0.Add(40 * time.Second), SuiteSucceeded: false,
			SpecReports: types.SpecReports{skippedHere(a), b, c, filtered, skippedHere(crashed), failedSuiteNode}}},
		nil, // lane 3 left no report
	}
	merged := mergeLaneReports(reports, claims)

	var got []string
	for _, s := range merged.SpecReports {
		got = append(got, s.LeafNodeType.String()+":"+s.LeafNodeText+":"+s.State.String())
	}
	want := []string{
		"It:a:passed", "It:left out by the filter:skipped", "ReportAfterSuite::passed",
		"It:b:failed", "It:c:passed", "ReportAfterSuite::failed",
		"It:its lane died:failed",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("merged specs =\n %v\nwant\n %v", got, want)
	}
	last := merged.SpecReports[len(merged.SpecReports)-1]
	if !strings.Contains(last.Failure.Message, "lane 3 ended while running this spec") || SuiteOf(last) != "routes" {
		t.Errorf("the spec of the dead lane: suite %q, failure %q", SuiteOf(last), last.Failure.Message)
	}
	if !merged.StartTime.Equal(t0) || !merged.EndTime.Equal(t0.Add(40*time.Second)) || merged.RunTime != 40*time.Second {
		t.Errorf("merged times = %s .. %s (%s)", merged.StartTime, merged.EndTime, merged.RunTime)
	}
	if merged.SuiteSucceeded {
		t.Error("the merged suite succeeded although lane 2's did not")
	}
	res := resultFrom(merged, "")
	if res.Passed != 2 || res.Failed != 3 || res.Skipped != 1 || res.NotSelected != 0 {
		t.Errorf("result = %+v", res)
	}
	// With the filter that left it out, the skipped spec is not selected.
	for i := range merged.SpecReports {
		if merged.SpecReports[i].LeafNodeText != "left out by the filter" {
			merged.SpecReports[i].LeafNodeLabels = []string{"Selected"}
		}
	}
	res = resultFrom(merged, "Selected")
	if res.Passed != 2 || res.Failed != 3 || res.Skipped != 0 || res.NotSelected != 1 {
		t.Errorf("result with a label filter = %+v", res)
	}
}

func TestAutoLanes(t *testing.T) {
	suites := []framework.Suite{{Name: "fast"}, {Name: "slow", SpecSeconds: 6}}
	specs := func(suite string, n int) []SpecInfo {
		out := make([]SpecInfo, n)
		for i := range out {
			out[i].Suite = suite
		}
		return out
	}
	cap := min(maxLanes, 2*runtime.GOMAXPROCS(0))
	tests := []struct {
		name  string
		specs []SpecInfo
		want  int
	}{
		{"none", nil, 1},
		{"a few fast specs", specs("fast", 6), 1},
		{"eleven seconds", specs("fast", 11), min(2, cap)},
		{"four slow specs", specs("slow", 4), min(3, cap)},
		{"many", append(specs("fast", 30), specs("slow", 10)...), cap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AutoLanes(suites, tt.specs); got != tt.want {
				t.Errorf("AutoLanes = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPrefixWriter(t *testing.T) {
	var out bytes.Buffer
	p := &prefixWriter{out: &out, prefix: "[lane 2] "}
	for _, chunk := range []string{"one\ntw", "o\n", "three"} {
		if _, err := p.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	p.flush()
	if want := "[lane 2] one\n[lane 2] two\n[lane 2] three\n"; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}

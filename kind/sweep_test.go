package kind

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ccm-conformance/ccm-conformance/internal/owner"
)

func TestAbandoned(t *testing.T) {
	self, err := owner.Self()
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	dir := t.TempDir()
	write := func(file string, rec any) {
		t.Helper()
		data, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	killed := self
	killed.Start++ // this pid with another start time: a process that is gone
	otherNS := killed
	otherNS.PIDNamespace = "pid:[1]"
	write("ccmc-running.json", clusterRecord{Name: "ccmc-running", Owner: self})
	write("ccmc-killed.json", clusterRecord{Name: "ccmc-killed", Owner: killed})
	write("ccmc-elsewhere.json", clusterRecord{Name: "ccmc-elsewhere", Owner: otherNS})
	write("someone-else.json", clusterRecord{Name: "someone-else", Owner: killed})
	write("ccmc-renamed.json", clusterRecord{Name: "ccmc-other", Owner: killed})
	if err := os.WriteFile(filepath.Join(dir, "ccmc-garbled.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := abandoned(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ccmc-killed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("abandoned = %v, want %v (only a cluster of ours whose owner is gone in this pid namespace)", got, want)
	}
	if err := recordCluster(dir, "ccmc-new"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(recordPath(dir, "ccmc-new"))
	if err != nil {
		t.Fatal(err)
	}
	var rec clusterRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Name != "ccmc-new" || rec.Owner != self {
		t.Errorf("record %s: %+v (%v), want this process as its owner", data, rec, err)
	}
}

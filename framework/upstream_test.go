package framework

import (
	"regexp"
	"strings"
	"testing"
)

var plainLabel = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func TestUpstreamChangeApplies(t *testing.T) {
	since := UpstreamChange{Label: "X", Since: "v1.36"}
	until := UpstreamChange{Label: "Y", Until: "v1.36"}
	window := UpstreamChange{Label: "Z", Since: "v1.35", Until: "v1.37"}
	tests := []struct {
		change  UpstreamChange
		version string
		want    bool
	}{
		{since, "v1.35.4", false},
		{since, "v1.36.0", true},
		{since, "v1.36.3", true},
		{since, "v1.37.2", true},
		// A pre-release of the minor already has its changes.
		{since, "v1.36.0-alpha.1.123+abcdef", true},
		{since, "v1.34.0", false},
		{until, "v1.35.4", true},
		{until, "v1.36.0", false},
		{until, "v1.37.2", false},
		{window, "v1.34.4", false},
		{window, "v1.35.4", true},
		{window, "v1.36.3", true},
		{window, "v1.37.2", false},
		{UpstreamChange{Label: "open"}, "v1.30.0", true},
	}
	for _, tt := range tests {
		got, err := tt.change.Applies(tt.version)
		if err != nil {
			t.Fatalf("%+v.Applies(%q): %v", tt.change, tt.version, err)
		}
		if got != tt.want {
			t.Errorf("%s (since %q, until %q) applies to %s: %v, want %v", tt.change.Label, tt.change.Since, tt.change.Until, tt.version, got, tt.want)
		}
	}
}

func TestVersionSkip(t *testing.T) {
	tests := []struct {
		name      string
		labels    []string
		version   string
		emulation string
		// want is a part of the skip message; "" means no skip.
		want    string
		wantErr string
	}{
		{name: "no version labels", labels: []string{"LoadBalancer", ReleaseBlocking}, version: "v1.35.4"},
		{name: "inside the range", labels: []string{"LoadBalancer", RelaxedServiceNames.Label}, version: "v1.36.3"},
		{name: "below the range", labels: []string{"LoadBalancer", RelaxedServiceNames.Label}, version: "v1.35.4",
			want: OutsideVersionRange + " v1.35.4: the spec needs Kubernetes v1.36 and later (KEP-5311"},
		{name: "a vendor's build inside the range", labels: []string{RelaxedServiceNames.Label}, version: "v1.36.3+k3s1"},
		{name: "a release candidate of the range's first minor", labels: []string{RelaxedServiceNames.Label}, version: "v1.36.0-rc.1"},
		{name: "a newer release emulating an older minor", labels: []string{RelaxedServiceNames.Label}, version: "v1.37.2", emulation: "1.35",
			want: OutsideVersionRange + " v1.37.2 (emulating 1.35): the spec needs Kubernetes v1.36 and later"},
		{name: "emulating a minor inside the range", labels: []string{RelaxedServiceNames.Label}, version: "v1.37.2", emulation: "1.36"},
		{name: "version unknown", labels: []string{RelaxedServiceNames.Label}, version: ""},
		// An unstamped build says nothing about its changes: the spec runs.
		{name: "unstamped build", labels: []string{RelaxedServiceNames.Label}, version: "v0.0.0-master+$Format:%H$"},
		{name: "unreadable version", labels: []string{RelaxedServiceNames.Label}, version: "banana", wantErr: `Kubernetes version "banana"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := versionSkip(tt.labels, tt.version, tt.emulation)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("skip message %q, want %q", got, tt.want)
			}
		})
	}
}

// Every known change has a label, a well-formed range and says what it is,
// and no label is also a capability's.
func TestUpstreamChangesWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range UpstreamChanges {
		if c.Label == "" || c.What == "" || (c.Since == "" && c.Until == "") {
			t.Errorf("%+v: needs a label, a range and what changed", c)
		}
		// Ginkgo refuses some characters in labels and reads "key:value"
		// as a label set; a plain word keeps label filters simple.
		if !plainLabel.MatchString(c.Label) {
			t.Errorf("label %q is not a plain word (letters and digits, a letter first)", c.Label)
		}
		if seen[c.Label] {
			t.Errorf("label %s used twice", c.Label)
		}
		seen[c.Label] = true
		if len(capabilityLabels([]string{c.Label})) > 0 {
			t.Errorf("label %s is also a capability", c.Label)
		}
		if _, err := c.Applies("v1.37.2"); err != nil {
			t.Error(err)
		}
		for _, v := range []string{c.Since, c.Until} {
			if v != "" && !strings.HasPrefix(v, "v1.") || strings.Count(v, ".") > 1 {
				t.Errorf("%s: version %q is not a minor like v1.36", c.Label, v)
			}
		}
	}
}

package firstline

import "testing"

func TestFirstLine(t *testing.T) {
	for _, tt := range []struct {
		in, of, marked string
	}{
		{"", "", ""},
		{"  \n\t\n", "", ""},
		{"one", "one", "one"},
		{"one\n", "one", "one"},
		{"\n\n  one  \n", "one", "one"},
		{"one \r\ntwo", "one", "one …"},
		{"\nError: no such image\nmore detail\n", "Error: no such image", "Error: no such image …"},
	} {
		if got := Of(tt.in); got != tt.of {
			t.Errorf("Of(%q) = %q, want %q", tt.in, got, tt.of)
		}
		if got := Marked(tt.in); got != tt.marked {
			t.Errorf("Marked(%q) = %q, want %q", tt.in, got, tt.marked)
		}
	}
}

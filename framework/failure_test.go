package framework

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// gomegaFailure runs assert with a Gomega whose failures are caught, and
// returns the message gomega produced.
func gomegaFailure(t *testing.T, assert func(g gomega.Gomega)) string {
	t.Helper()
	var message string
	type halt struct{}
	g := gomega.NewGomega(func(m string, _ ...int) {
		message = m
		panic(halt{})
	})
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(halt); !ok {
					panic(r)
				}
			}
		}()
		assert(g)
	}()
	if message == "" {
		t.Fatal("the assertion did not fail")
	}
	return message
}

// firstLine is what a one-line summary of a failure shows.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// The messages are gomega's own, so that the test breaks when a gomega
// upgrade changes their shape.
func TestFailureMessage(t *testing.T) {
	const short = 20 * time.Millisecond
	tests := []struct {
		name      string
		assert    func(g gomega.Gomega)
		wantFirst string   // the first line
		wantAlso  []string // further text that must stay
	}{
		{
			name: "Eventually with a Gomega: the spec's sentence leads",
			assert: func(g gomega.Gomega) {
				g.Eventually(func(g gomega.Gomega) {
					g.Expect([]string{}).To(gomega.ContainElement("shutdown"), "node n1: expected taint shutdown, saw taints [none]")
				}).WithTimeout(short).WithPolling(short / 4).Should(gomega.Succeed())
			},
			wantFirst: "node n1: expected taint shutdown, saw taints [none]",
			wantAlso:  []string{"to contain element matching", "timed out after 0.0", "the failing check is at ", "failure_test.go:"},
		},
		{
			name: "StopTrying",
			assert: func(g gomega.Gomega) {
				g.Eventually(func(g gomega.Gomega) {
					gomega.StopTrying("node n1 was deleted, but its instance is only stopped").Now()
				}).WithTimeout(short).Should(gomega.Succeed())
			},
			wantFirst: "node n1 was deleted, but its instance is only stopped",
			wantAlso:  []string{"told to stop trying after "},
		},
		{
			name: "Consistently",
			assert: func(g gomega.Gomega) {
				g.Consistently(func(g gomega.Gomega) {
					g.Expect("reference://zone-a/i-1").To(gomega.BeEmpty(), "node n1: expected no providerID, saw %q", "reference://zone-a/i-1")
				}).WithTimeout(short).Should(gomega.Succeed())
			},
			wantFirst: `node n1: expected no providerID, saw "reference://zone-a/i-1"`,
			wantAlso:  []string{"failed after "},
		},
		{
			name: "an error without a description: its text leads",
			assert: func(g gomega.Gomega) {
				g.Expect(fmt.Errorf("creating instance ccm-node-x: %w", errors.New("quota exceeded"))).NotTo(gomega.HaveOccurred())
			},
			wantFirst: "creating instance ccm-node-x: quota exceeded",
			wantAlso:  []string{"Unexpected error:", "*fmt.wrapError"},
		},
		{
			name: "an error with a description",
			assert: func(g gomega.Gomega) {
				g.Expect(errors.New("connection refused")).NotTo(gomega.HaveOccurred(), "asking the cloud driver for the instance of node %s", "n1")
			},
			wantFirst: "asking the cloud driver for the instance of node n1: connection refused",
		},
		{
			name: "Succeed on an error",
			assert: func(g gomega.Gomega) {
				g.Expect(errors.New("Node n1: expected the watch to deliver version 7, saw version 5")).To(gomega.Succeed())
			},
			wantFirst: "Node n1: expected the watch to deliver version 7, saw version 5",
		},
		{
			name: "Eventually of a function returning an error",
			assert: func(g gomega.Gomega) {
				g.Eventually(func() error { return errors.New("labelling node n1: conflict") }).WithTimeout(short).WithPolling(short / 4).Should(gomega.Succeed())
			},
			wantFirst: "labelling node n1: conflict",
			wantAlso:  []string{"timed out after "},
		},
		{
			name: "an error inside Eventually",
			assert: func(g gomega.Gomega) {
				g.Eventually(func(g gomega.Gomega) {
					g.Expect(errors.New(`nodes "n1" not found`)).NotTo(gomega.HaveOccurred(), "node n1")
				}).WithTimeout(short).WithPolling(short / 4).Should(gomega.Succeed())
			},
			wantFirst: `node n1: nodes "n1" not found`,
			wantAlso:  []string{"timed out after "},
		},
		{
			name: "a plain assertion is left as it is",
			assert: func(g gomega.Gomega) {
				g.Expect(1).To(gomega.Equal(2), "Service ns/web: expected 2 ports, saw 1")
			},
			wantFirst: "Service ns/web: expected 2 ports, saw 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := gomegaFailure(t, tt.assert)
			got := FailureMessage(raw)
			if first := firstLine(got); first != tt.wantFirst {
				t.Errorf("first line %q, want %q\nfrom gomega's:\n%s", first, tt.wantFirst, raw)
			}
			for _, s := range tt.wantAlso {
				if !strings.Contains(got, s) {
					t.Errorf("message lost %q:\n%s", s, got)
				}
			}
		})
	}
}

// testgridCut is how TestGrid shortens a failure message for its cells:
// the first and the last 70 characters.
func testgridCut(s string) string {
	if len(s) <= 140 {
		return s
	}
	return s[:70] + "..." + s[len(s)-70:]
}

// A typical watched wait that times out: what a TestGrid cell shows of it
// names the object, the expectation and what was seen.
func TestFailureMessageInATestGridCell(t *testing.T) {
	raw := gomegaFailure(t, func(g gomega.Gomega) {
		g.Eventually(func(g gomega.Gomega) {
			g.Expect(false).To(gomega.BeTrue(), "node n7: expected Ready, saw NotReady (reason NodeStatusUnknown); the kubelet was resumed 30s ago")
		}).WithTimeout(10 * time.Millisecond).Should(gomega.Succeed())
	})
	cell := testgridCut(FailureMessage(raw))
	for _, want := range []string{"node n7", "expected Ready", "saw NotReady"} {
		if !strings.Contains(cell[:70], want) {
			t.Errorf("the cell's first 70 characters %q do not contain %q", cell[:70], want)
		}
	}
	if strings.Contains(testgridCut(raw)[:70], "n7") {
		t.Errorf("gomega's own message already leads with the object; is FailureMessage still needed? %q", raw)
	}
}

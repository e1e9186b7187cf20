package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"

	"github.com/ccm-conformance/ccm-conformance/framework"
)

// orderHelperEnv makes the test binary, run again, the helper process of
// TestSuitesStartLongestFirst: it runs the suites of orderSuites with the
// seed the variable holds and prints the order their specs ran in.
const orderHelperEnv = "CCM_RUNNER_ORDER_HELPER_SEED"

// orderSuites are three suites of three specs each; "slow" and "medium"
// say their specs take longer than the others.
func orderSuites(ran *[]string) []framework.Suite {
	suite := func(name string, seconds float64) framework.Suite {
		return framework.Suite{Name: name, SpecSeconds: seconds, Declare: func(*framework.Framework) {
			for i := range 3 {
				ginkgo.It(fmt.Sprintf("%s spec %d", name, i), func() { *ran = append(*ran, name) })
			}
		}}
	}
	return []framework.Suite{suite("fast-a", 0), suite("medium", 6), suite("fast-b", 0), suite("slow", 10)}
}

// TestSpecOrderHelper is the helper process; it does nothing in a normal
// test run.
func TestSpecOrderHelper(t *testing.T) {
	seed := os.Getenv(orderHelperEnv)
	if seed == "" {
		t.Skip("the helper process of TestSuitesStartLongestFirst")
	}
	var ran []string
	declareSuites(&framework.Framework{}, orderSuites(&ran))
	var s int64
	if _, err := fmt.Sscan(seed, &s); err != nil {
		t.Fatal(err)
	}
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	suiteConfig.RandomSeed = s
	if !ginkgo.RunSpecs(t, "order", suiteConfig, reporterConfig) {
		t.Fatal("the specs failed")
	}
	out, _ := json.Marshal(ran)
	fmt.Printf("ORDER %s\n", out)
}

// TestSuitesStartLongestFirst runs four suites under several seeds: the
// suite with the longest specs always runs first, then the next longest,
// and the suites of equal spec time follow in an order that changes with
// the seed.
func TestSuitesStartLongestFirst(t *testing.T) {
	if os.Getenv(orderHelperEnv) != "" {
		t.Skip("in the helper process")
	}
	tails := map[string]bool{}
	for seed := 1; seed <= 8; seed++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSpecOrderHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", orderHelperEnv, seed))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("seed %d: the helper process: %v\n%s", seed, err, out)
		}
		var ran []string
		for line := range strings.SplitSeq(string(out), "\n") {
			if rest, ok := strings.CutPrefix(line, "ORDER "); ok {
				if err := json.Unmarshal([]byte(rest), &ran); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		}
		if len(ran) != 12 {
			t.Fatalf("seed %d: the helper ran %d specs, want 12: %v\n%s", seed, len(ran), ran, out)
		}
		want := []string{"slow", "slow", "slow", "medium", "medium", "medium"}
		if !slices.Equal(ran[:6], want) {
			t.Errorf("seed %d: ran %v, want %v first", seed, ran, want)
		}
		tails[strings.Join(ran[6:], ",")] = true
	}
	if len(tails) < 2 {
		t.Errorf("the suites of equal spec time ran in one order under 8 seeds (%v), want the seed to shuffle them", tails)
	}
}

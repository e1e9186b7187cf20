package freeport

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// useClaimFile points the package at a claim file of the test's own, so
// that harnesses running beside the test neither see its claims nor block
// its ports.
func useClaimFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ports.lock")
	old := claimFile
	claimFile = path
	t.Cleanup(func() { claimFile = old })
	return path
}

// twoFreePorts returns a range [low, low+2) of two ports both free now.
func twoFreePorts(t *testing.T) (low int) {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		low = l.Addr().(*net.TCPAddr).Port
		l.Close()
		next, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(low+1))
		if err == nil {
			next.Close()
			return low
		}
	}
	t.Skip("found no two free neighbouring ports")
	return 0
}

func TestDrawRange(t *testing.T) {
	tests := []struct {
		name              string
		ephemeralLow      int
		wantLow, wantHigh int
	}{
		{name: "Linux default", ephemeralLow: 32768, wantLow: 10000, wantHigh: 32768},
		{name: "IANA range, as on macOS", ephemeralLow: 49152, wantLow: 10000, wantHigh: 49152},
		{name: "ephemeral range too low: the kernel chooses", ephemeralLow: 10500, wantLow: 0, wantHigh: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			low, high := drawRange(tt.ephemeralLow)
			if low != tt.wantLow || high != tt.wantHigh {
				t.Errorf("drawRange(%d) = %d, %d, want %d, %d", tt.ephemeralLow, low, high, tt.wantLow, tt.wantHigh)
			}
		})
	}
}

func TestPortsAreDistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	useClaimFile(t)
	ports, err := Ports(8)
	if err != nil {
		t.Fatal(err)
	}
	low, high := drawRange(readEphemeralLow())
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice in %v", p, ports)
		}
		seen[p] = true
		if low != 0 && (p < low || p >= high) {
			t.Errorf("port %d outside [%d, %d)", p, low, high)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free after Ports returned: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestPickSkipsPortsInUse(t *testing.T) {
	useClaimFile(t)
	// A range of two ports, one of them taken: every pick is the other.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	low := port
	if port > 1025 {
		low = port - 1
	}
	high := low + 2
	free := low
	if free == port {
		free = low + 1
	}
	for range 5 {
		got, release, err := pick(1, low, high)
		if err != nil {
			t.Skipf("port %d is taken as well: %v", free, err)
		}
		release()
		if got[0] != free {
			t.Fatalf("pick = %d, want %d (%d is taken)", got[0], free, port)
		}
	}
	// Both taken: an error that names the range.
	other, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(free))
	if err != nil {
		t.Skipf("cannot take port %d: %v", free, err)
	}
	defer other.Close()
	if _, _, err := pick(1, low, high); err == nil {
		t.Errorf("pick from a range with no free port returned no error")
	}
}

func TestPickSkipsClaimedPorts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("claims are held on Linux only")
	}
	path := useClaimFile(t)
	low := twoFreePorts(t)
	release, ok := claim(path, low)
	if !ok {
		t.Fatalf("claim(%d) on a new claim file = false", low)
	}
	for range 5 {
		got, releasePick, err := pick(1, low, low+2)
		if err != nil {
			t.Fatalf("pick from [%d, %d) with %d claimed: %v", low, low+2, low, err)
		}
		releasePick()
		if got[0] != low+1 {
			t.Fatalf("pick = %d, want %d (%d is claimed)", got[0], low+1, low)
		}
	}
	// Both claimed: an error that says so. A released claim is free again.
	releaseOther, ok := claim(path, low+1)
	if !ok {
		t.Fatalf("claim(%d) after pick released it = false", low+1)
	}
	if _, _, err := pick(1, low, low+2); err == nil {
		t.Errorf("pick with both ports claimed returned no error")
	}
	release()
	releaseOther()
	if got, releasePick, err := pick(1, low, low+1); err != nil || got[0] != low {
		t.Errorf("pick after both claims were released = %v, %v; want [%d]", got, err, low)
	} else {
		releasePick()
	}
}

// holdClaimEnv makes the test binary a second harness process that claims
// a port, says so, and holds the claim until its stdin closes.
const holdClaimEnv = "FREEPORT_TEST_HOLD_CLAIM"

func TestMain(m *testing.M) {
	if spec := os.Getenv(holdClaimEnv); spec != "" {
		var path string
		var port int
		if _, err := fmt.Sscanf(spec, "%d %s", &port, &path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if _, ok := claim(path, port); !ok {
			fmt.Println("refused")
			os.Exit(1)
		}
		fmt.Println("claimed")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		// Exit without releasing: the kernel must drop the claim.
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestClaimsHoldAcrossProcessesAndEndWithThem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("claims are held on Linux only")
	}
	path := useClaimFile(t)
	low := twoFreePorts(t)

	other := exec.Command(os.Args[0], "-test.run=^$")
	other.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s", holdClaimEnv, low, path))
	stdin, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	other.Stderr = os.Stderr
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "claimed\n" {
		t.Fatalf("the other process printed %q, %v; want it to claim port %d", line, err, low)
	}

	if _, ok := claim(path, low); ok {
		t.Errorf("claim(%d) = true while another process holds it", low)
	}
	got, release, err := pick(1, low, low+2)
	if err != nil || got[0] != low+1 {
		t.Errorf("pick from [%d, %d) while another process holds %d = %v, %v; want [%d]", low, low+2, low, got, err, low+1)
	} else {
		release()
	}

	stdin.Close()
	if err := other.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	release, ok := claim(path, low)
	if !ok {
		t.Fatalf("claim(%d) = false after the process that held it exited", low)
	}
	release()
}

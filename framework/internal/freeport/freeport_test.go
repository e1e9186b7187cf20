package freeport

import (
	"net"
	"strconv"
	"testing"
)

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
		got, err := pick(1, low, high)
		if err != nil {
			t.Skipf("port %d is taken as well: %v", free, err)
		}
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
	if _, err := pick(1, low, high); err == nil {
		t.Errorf("pick from a range with no free port returned no error")
	}
}

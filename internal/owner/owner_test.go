package owner

import (
	"os"
	"os/exec"
	"testing"
)

func TestGone(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	// A process that has exited.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exitedPID := cmd.Process.Pid
	exitedStart, startErr := StartTime(exitedPID)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    Owner
		want bool
	}{
		{"this process", self, false},
		{"this pid, another start time (a reused pid)", Owner{PID: self.PID, Start: self.Start + 1, PIDNamespace: self.PIDNamespace}, true},
		{"another pid namespace: cannot tell", Owner{PID: self.PID, Start: self.Start + 1, PIDNamespace: "pid:[1]"}, false},
		{"no pid", Owner{PIDNamespace: self.PIDNamespace}, false},
	}
	if startErr == nil {
		tests = append(tests, struct {
			name string
			o    Owner
			want bool
		}{"a process that exited", Owner{PID: exitedPID, Start: exitedStart, PIDNamespace: self.PIDNamespace}, true})
	}
	for _, tt := range tests {
		if got := tt.o.Gone(); got != tt.want {
			t.Errorf("%s: Gone() = %v, want %v", tt.name, got, tt.want)
		}
	}
	if self.PID != os.Getpid() {
		t.Errorf("Self().PID = %d, want %d", self.PID, os.Getpid())
	}
}

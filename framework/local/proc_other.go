//go:build unix && !linux

package local

import "errors"

// procStartTime is unknown off Linux; StopDir then trusts the pid alone.
func procStartTime(int) (uint64, error) {
	return 0, errors.New("process start times are only known on Linux")
}

func isZombie(int) bool { return false }

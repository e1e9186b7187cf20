package cloudapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// faultState is a Fault with its failures left to give.
type faultState struct {
	Fault
	latency time.Duration
}

// spent reports whether the fault has nothing left to do.
func (f *faultState) spent() bool {
	return f.FailTimes <= 0 && f.ErrorRate == 0 && f.latency == 0
}

// injectFault applies the faults that match op and caller: it waits for
// their latency and returns an error when one of them fails the call.
func (s *Server) injectFault(ctx context.Context, op, caller string) error {
	var (
		latency time.Duration
		fail    bool
	)
	s.mu.Lock()
	for _, f := range s.faults {
		if (f.Operation != op && f.Operation != "*") || (f.ExceptCaller != "" && f.ExceptCaller == caller) {
			continue
		}
		latency += f.latency
		switch {
		case f.FailTimes > 0:
			f.FailTimes--
			fail = true
		case f.ErrorRate > 0 && s.rng.Float64() < f.ErrorRate:
			fail = true
		}
	}
	s.faults = slices.DeleteFunc(s.faults, (*faultState).spent)
	s.mu.Unlock()

	if latency > 0 {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("injected latency for %s: %w", op, ctx.Err())
		}
	}
	if fail {
		return &apiError{http.StatusInternalServerError, "injected fault: " + op}
	}
	return nil
}

func (s *Server) listFaults(*http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := FaultList{Faults: []Fault{}}
	for _, f := range s.faults {
		list.Faults = append(list.Faults, f.Fault)
	}
	return list, nil
}

// addFault installs a fault, replacing any earlier one for the same
// operation, and answers with every fault now installed.
func (s *Server) addFault(r *http.Request) (any, error) {
	var f Fault
	if err := decode(r, &f); err != nil {
		return nil, err
	}
	if f.Operation == "" {
		return nil, badRequest("operation is required (an operation name or \"*\")")
	}
	if f.FailTimes < 0 {
		return nil, badRequest("failTimes %d: must not be negative", f.FailTimes)
	}
	if f.ErrorRate < 0 || f.ErrorRate > 1 {
		return nil, badRequest("errorRate %v: want a value from 0 to 1", f.ErrorRate)
	}
	state := &faultState{Fault: f}
	if f.Latency != "" {
		d, err := time.ParseDuration(f.Latency)
		if err != nil || d < 0 {
			return nil, badRequest("latency %q: want a non-negative Go duration such as 250ms", f.Latency)
		}
		state.latency = d
	}

	s.mu.Lock()
	s.faults = slices.DeleteFunc(s.faults, func(old *faultState) bool { return old.Operation == f.Operation })
	if !state.spent() {
		s.faults = append(s.faults, state)
	}
	s.mu.Unlock()
	return s.listFaults(r)
}

func (s *Server) clearFaults(*http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
	return FaultList{Faults: []Fault{}}, nil
}

package leadermigration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// sampler asks every live manager's /healthz?verbose which controllers it
// runs, over and over, and records each moment at which one of the
// watched controllers ran in more than one process.
type sampler struct {
	watched []string
	// maxSpread drops a sample whose answers came further apart than
	// this: a controller can move from a stopped process to another only
	// after a lease duration, so two answers less than half a lease apart
	// cannot both be right about a handover in between.
	maxSpread time.Duration

	mu       sync.Mutex
	managers map[string]*manager // by role
	samples  int
	overlaps []string

	stop func()
	done sync.WaitGroup
}

func newSampler(watched []string, maxSpread time.Duration) *sampler {
	return &sampler{watched: watched, maxSpread: maxSpread, managers: map[string]*manager{}}
}

// add makes a manager part of the samples; remove drops it before it is
// stopped.
func (s *sampler) add(m *manager) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.managers[m.role] = m
}

func (s *sampler) remove(m *manager) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.managers, m.role)
}

// run samples every interval until Stop.
func (s *sampler) run(ctx context.Context, interval time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	s.stop = cancel
	s.done.Add(1)
	go func() {
		defer GinkgoRecover()
		defer s.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// taken returns how many samples have counted so far.
func (s *sampler) taken() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// Stop ends the sampling and returns how many samples counted and the
// overlaps seen.
func (s *sampler) Stop() (int, []string) {
	if s.stop != nil {
		s.stop()
	}
	s.done.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, slices.Clone(s.overlaps)
}

func (s *sampler) sample(ctx context.Context) {
	s.mu.Lock()
	managers := slices.Collect(maps.Values(s.managers))
	s.mu.Unlock()

	began := time.Now()
	active := map[string][]string{} // controller -> roles
	for _, m := range managers {
		qctx, cancel := context.WithTimeout(ctx, s.maxSpread)
		running, err := m.controllers(qctx)
		cancel()
		if err != nil {
			continue // a process that does not answer runs nothing we can see
		}
		for _, c := range intersect(running, s.watched) {
			active[c] = append(active[c], m.role)
		}
	}
	if ctx.Err() != nil || time.Since(began) > s.maxSpread {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	for _, c := range slices.Sorted(maps.Keys(active)) {
		if roles := active[c]; len(roles) > 1 {
			slices.Sort(roles)
			s.overlaps = append(s.overlaps, fmt.Sprintf("at %s %s ran in %s", began.Format("15:04:05.000"), c, strings.Join(roles, " and ")))
		}
	}
}

// callerTakeBacks finds, in calls ordered by sequence number, each call by
// a caller whose turn had ended: another caller had called since. When
// every process has a caller of its own and the migrated controllers never
// run in two at once, the callers take one turn each.
func callerTakeBacks(calls []clouddriver.Call) []string {
	var out []string
	done := map[string]bool{}
	current := ""
	var turnStart clouddriver.Call
	for _, c := range calls {
		if c.Caller == current {
			continue
		}
		if done[c.Caller] {
			out = append(out, fmt.Sprintf("%s by caller %q (seq %d) after caller %q had taken over (seq %d)",
				c.Operation, c.Caller, c.Seq, turnStart.Caller, turnStart.Seq))
		}
		if current != "" {
			done[current] = true
		}
		current, turnStart = c.Caller, c
	}
	return out
}

// callers returns the distinct callers of calls, sorted.
func callers(calls []clouddriver.Call) []string {
	var out []string
	for _, c := range calls {
		if !slices.Contains(out, c.Caller) {
			out = append(out, c.Caller)
		}
	}
	slices.Sort(out)
	return out
}

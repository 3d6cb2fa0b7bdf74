package jobs

// Callers reports how many callers (Submit and RunSync) share the pending
// or running job of type typ and id, 0 for none: tests wait for callers to
// attach instead of sleeping.
func Callers(s *Scheduler, typ JobType, id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	js, ok := s.c.jobs[tid{typ, id}]
	if !ok {
		return 0
	}
	if e := js.current(); e != nil {
		return e.owners
	}
	return 0
}

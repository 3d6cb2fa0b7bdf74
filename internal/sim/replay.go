package sim

import "fmt"

// Replay runs cfg again and checks it event by event against log, the
// Result.Log of a recorded run of the same configuration: it fails at the
// first event that differs, or when the run makes more or fewer events
// than the log holds. One seed gives one schedule, so a log that does not
// replay was made by another configuration or changed since.
func Replay(cfg Config, log []Entry) error {
	cfg.Record = false
	s, err := newSim(cfg)
	if err != nil {
		return err
	}
	s.log.check = func(i int, e Entry) error {
		if i >= len(log) {
			return fmt.Errorf("sim: replay: event %d %+v is beyond the recorded log of %d events", i, e, len(log))
		}
		if log[i] != e {
			return fmt.Errorf("sim: replay: event %d: recorded %+v, replayed %+v", i, log[i], e)
		}
		return nil
	}
	res, err := s.run()
	if err != nil {
		return err
	}
	if res.Events != len(log) {
		return fmt.Errorf("sim: replay: the run made %d events, the log holds %d", res.Events, len(log))
	}
	return nil
}

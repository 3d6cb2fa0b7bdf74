package jobs

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
)

// Sentinel errors, for errors.Is: errors about the configuration and about
// submitted jobs wrap one of them.
var (
	// ErrInvalidConfig reports a Config, weight or cost the scheduler cannot use.
	ErrInvalidConfig = errors.New("jobs: invalid configuration")
	// ErrUnknownType reports a job whose type was not registered in Config.Types.
	ErrUnknownType = errors.New("jobs: unknown job type")
	// ErrUnknownTier reports a tier name that is not in Config.Tiers.
	ErrUnknownTier = errors.New("jobs: unknown tier")
	// ErrInvalidJob reports a job without a body or with an unusable weight.
	ErrInvalidJob = errors.New("jobs: invalid job")
	// ErrClosed reports work given to a closed scheduler.
	ErrClosed = errors.New("jobs: scheduler closed")
)

// Defaults for the zero values of Config.
const (
	// DefaultSmithFactor is the aging factor a, per millisecond of wait,
	// that the Smith's-rule design recommends. Set Config.SmithFactor to it
	// to order jobs inside a key by Smith's rule; the zero value orders them
	// by submission, as the fair-queuing design does.
	DefaultSmithFactor = 0.1
	DefaultAlpha       = 0.3              // weight of the newest observation in the cost estimate
	DefaultTTL         = 10 * time.Minute // idle keys and estimates are forgotten after this
)

// minSweep is the shortest period between two TTL sweeps: a tiny TTL
// forgets idle keys at the next sweep instead of waking the scheduler
// without pause.
const minSweep = time.Second

// JobType names a kind of job (a clone, a sync, an export).
type JobType string

// Tier is a priority tier. Tiers are listed lowest first in Config.Tiers;
// a job of a higher tier is admitted before one of a lower tier.
type Tier struct {
	Name string
	// Priority is the runtime priority the tier's jobs run at.
	Priority fairness.Priority
	// Cap bounds how many jobs of this tier run at once, aged or not; 0
	// means only Config.Slots bounds them.
	Cap int
}

// GroupConfig shares the slots between groups of jobs (for example one
// group per remote endpoint). Groups not named in Config.Groups get
// Config.DefaultGroupWeight, no minimum and no cap.
type GroupConfig struct {
	// Weight is the group's relative share of the slots; it must be > 0.
	Weight float64
	// Min slots are guaranteed to the group while it has work.
	Min int
	// Cap bounds the group's running jobs; 0 means Config.Slots.
	Cap int
}

// TypeConfig describes a job type.
type TypeConfig struct {
	// DefaultCost is the cost (wall time) assumed for a (type, id) never
	// seen before; it must be > 0.
	DefaultCost time.Duration
	// MaxConcurrency bounds the running jobs of this type; 0 means no bound.
	MaxConcurrency int
	// ConflictGroup: two jobs with the same ID whose types share a
	// non-empty conflict group never run at the same time.
	ConflictGroup string
	// Tier is the name of the base tier of the type's jobs.
	Tier string
	// Handler runs the type's jobs that have no Run of their own, with
	// their ID and payload. A durable Config.Store needs one for every
	// type: a job that comes back after a restart has only its type, ID
	// and payload, since code cannot be stored.
	Handler Handler
}

// Aging promotes a waiting job one tier per Interval once it has waited
// Grace, up to Ceiling. A job whose promoted level (base tier plus the
// steps it has aged, not capped by Ceiling) reaches Urgent is urgent: it
// goes before every job that is not, and may take a slot beyond its
// group's allocation. Aging is off when Interval is 0.
type Aging struct {
	Grace    time.Duration
	Interval time.Duration
	// Ceiling is the highest tier aging promotes to; "" means the top tier.
	Ceiling string
	// Urgent is a level on the tier scale (index in Config.Tiers; it may
	// exceed the top tier's index); 0 disables urgency. Jobs whose base
	// tier is at or above it are urgent from the start.
	Urgent int
}

// Config configures a Scheduler.
type Config struct {
	// Slots bounds how many jobs run at once; it must be > 0.
	Slots int
	// Tiers, lowest first; at least one.
	Tiers []Tier
	// Types maps each job type to its configuration; at least one.
	Types map[JobType]TypeConfig
	// Groups configures named groups.
	Groups map[string]GroupConfig
	// DefaultGroupWeight is the weight of groups not in Groups; 0 means 1.
	DefaultGroupWeight float64
	// KeyWeights gives fairness keys a weight other than 1: a key's
	// virtual time advances by charge/weight.
	KeyWeights map[string]float64
	Aging      Aging
	// SmithFactor > 0 orders the jobs of one fairness key by Smith's rule
	// with aging, largest w/r + a·wait first, with a = SmithFactor and r
	// and wait in milliseconds (DefaultSmithFactor is the design's value).
	// 0 orders them by submission time, first come first served, as the
	// fair-queuing design and its upstream tests do; that is Smith's rule
	// in the limit a → ∞.
	SmithFactor float64
	// MaxLag bounds the credit a fairness key can carry: when a key is
	// charged, its virtual time is first raised to at least the system
	// virtual time minus MaxLag/weight. 0 means the largest DefaultCost
	// of the types; see docs/jobs.md for the bound this gives.
	MaxLag time.Duration
	// Alpha is the smoothing factor of the learned cost, in (0, 1];
	// 0 means DefaultAlpha.
	Alpha float64
	// TTL after which idle fairness keys and unused estimates are
	// forgotten; 0 means DefaultTTL. Sweeps run at most once every
	// max(TTL/2, 1 s), so a tiny TTL costs nothing extra.
	TTL time.Duration
	// Logger receives the evidence of every decision as structured
	// records (admissions at Info, skipped candidates at Debug); nil
	// logs nothing.
	Logger *slog.Logger
	// OnEvent, if set, receives events (aging, allocation and weight
	// changes). It is called from one goroutine at a time, outside the
	// scheduler's lock, so it may call the Scheduler.
	OnEvent func(Event)
	// Store keeps the jobs, the keys' charges and the learned estimates;
	// nil keeps them in memory, lost when the process ends. With a
	// durable store (package sqlitestore or pgstore), Submit returns once
	// the job is committed and the jobs of a process that died come back
	// when a scheduler opens the store again; see docs/jobs.md for the
	// durability contract.
	Store *Store
	// Clock replaces time.Now, for tests. Aging, retry backoffs and TTL
	// sweeps are evaluated against Clock at every admission decision (a
	// submission, a completion, Scheduler.Reschedule); the timer that
	// brings the scheduler round on its own runs on real time.
	Clock func() time.Time
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// positive reports whether w is a usable weight or cost.
func positive(w float64) bool { return w > 0 && !math.IsInf(w, 0) && !math.IsNaN(w) }

// settings is a validated Config with its defaults filled in and names
// resolved to indices.
type settings struct {
	Config
	tierIndex map[string]int
	ceiling   int
}

func validate(cfg Config) (*settings, error) {
	s := &settings{Config: cfg, tierIndex: make(map[string]int)}
	// Own copies, so the caller may reuse its Config.
	s.Tiers = slices.Clone(cfg.Tiers)
	s.Types = maps.Clone(cfg.Types)
	s.Groups = maps.Clone(cfg.Groups)
	s.KeyWeights = maps.Clone(cfg.KeyWeights)
	if cfg.Slots <= 0 {
		return nil, invalid("Slots must be > 0, got %d", cfg.Slots)
	}
	if len(cfg.Tiers) == 0 {
		return nil, invalid("no tiers")
	}
	for i, t := range cfg.Tiers {
		if t.Name == "" {
			return nil, invalid("tier %d has no name", i)
		}
		if _, dup := s.tierIndex[t.Name]; dup {
			return nil, invalid("tier %q listed twice", t.Name)
		}
		if t.Cap < 0 {
			return nil, invalid("tier %q: negative cap", t.Name)
		}
		s.tierIndex[t.Name] = i
	}
	if len(cfg.Types) == 0 {
		return nil, invalid("no job types")
	}
	for name, tc := range cfg.Types {
		if tc.DefaultCost <= 0 {
			return nil, invalid("type %q: DefaultCost must be > 0, got %v", name, tc.DefaultCost)
		}
		if tc.MaxConcurrency < 0 {
			return nil, invalid("type %q: negative MaxConcurrency", name)
		}
		if _, ok := s.tierIndex[tc.Tier]; !ok {
			return nil, fmt.Errorf("%w: type %q names tier %q", ErrUnknownTier, name, tc.Tier)
		}
		if cfg.Store != nil && tc.Handler == nil {
			return nil, invalid("type %q: a durable Store needs a Handler", name)
		}
	}
	if cfg.DefaultGroupWeight == 0 {
		s.DefaultGroupWeight = 1
	} else if !positive(cfg.DefaultGroupWeight) {
		return nil, invalid("DefaultGroupWeight must be > 0, got %v", cfg.DefaultGroupWeight)
	}
	mins := 0
	for name, g := range cfg.Groups {
		if err := checkGroup(name, g); err != nil {
			return nil, err
		}
		mins += g.Min
	}
	if mins > cfg.Slots {
		return nil, invalid("group minimums (%d) exceed Slots (%d)", mins, cfg.Slots)
	}
	for k, w := range cfg.KeyWeights {
		if !positive(w) {
			return nil, invalid("key %q: weight must be > 0, got %v", k, w)
		}
	}
	a := cfg.Aging
	if a.Grace < 0 || a.Interval < 0 || a.Urgent < 0 {
		return nil, invalid("negative aging parameter")
	}
	if a.Interval == 0 && (a.Grace != 0 || a.Urgent != 0 || a.Ceiling != "") {
		return nil, invalid("aging parameters without an aging Interval")
	}
	s.ceiling = len(cfg.Tiers) - 1
	if a.Ceiling != "" {
		c, ok := s.tierIndex[a.Ceiling]
		if !ok {
			return nil, fmt.Errorf("%w: aging ceiling %q", ErrUnknownTier, a.Ceiling)
		}
		s.ceiling = c
	}
	if cfg.SmithFactor != 0 && !positive(cfg.SmithFactor) {
		return nil, invalid("SmithFactor must be >= 0, got %v", cfg.SmithFactor)
	}
	switch {
	case cfg.MaxLag < 0:
		return nil, invalid("negative MaxLag")
	case cfg.MaxLag == 0:
		for _, tc := range cfg.Types {
			s.MaxLag = max(s.MaxLag, tc.DefaultCost)
		}
	}
	switch {
	case cfg.Alpha == 0:
		s.Alpha = DefaultAlpha
	case !(cfg.Alpha > 0 && cfg.Alpha <= 1):
		return nil, invalid("Alpha must be in (0, 1], got %v", cfg.Alpha)
	}
	switch {
	case cfg.TTL == 0:
		s.TTL = DefaultTTL
	case cfg.TTL < 0:
		return nil, invalid("negative TTL")
	}
	if cfg.Clock == nil {
		s.Clock = time.Now
	}
	return s, nil
}

func checkGroup(name string, g GroupConfig) error {
	if !positive(g.Weight) {
		return invalid("group %q: weight must be > 0, got %v", name, g.Weight)
	}
	if g.Min < 0 || g.Cap < 0 {
		return invalid("group %q: negative Min or Cap", name)
	}
	if g.Cap > 0 && g.Min > g.Cap {
		return invalid("group %q: Min %d above Cap %d", name, g.Min, g.Cap)
	}
	return nil
}

// sweepEvery is the period of the TTL sweep.
func (s *settings) sweepEvery() time.Duration { return max(s.TTL/2, minSweep) }

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
)

// agingThreshold is the notebook's aging threshold: a lo job that has
// waited this long goes before hi work. Stepwise aging reaches it as
// Grace + Interval; Smith's rule is tuned so that its aging term closes
// the gap between the classes over the same time.
const (
	agingGrace     = 5 * time.Second
	agingInterval  = 10 * time.Second
	agingThreshold = agingGrace + agingInterval
)

// Policy is one way of configuring jobs/ for the two classes.
type Policy struct {
	Name  string // short name, for flags, the table and the JSON
	Label string // for the charts' legends
	// config makes the scheduler's configuration for the given slots.
	config func(slots int, p priorities) jobs.Config
	// job gives a class's key and group (its type is the class name).
	key, group func(class int) string
}

// priorities are the runtime priorities of the two tiers.
type priorities struct{ hi, lo fairness.Priority }

// types registers one job type per class, with the class's mean service
// time as the cost a job is assumed to have: every job has its own ID, so
// the scheduler never learns a per-job estimate.
func types(tierHi, tierLo string) map[jobs.JobType]jobs.TypeConfig {
	return map[jobs.JobType]jobs.TypeConfig{
		jobs.JobType(classNames[hi]): {DefaultCost: seconds(meanServiceHi), Tier: tierHi},
		jobs.JobType(classNames[lo]): {DefaultCost: seconds(meanServiceLo), Tier: tierLo},
	}
}

// twoTiers is hi above lo.
func twoTiers(p priorities) []jobs.Tier {
	return []jobs.Tier{{Name: "lo", Priority: p.lo}, {Name: "hi", Priority: p.hi}}
}

// oneTier puts both classes in one tier, for the policies that order them
// by something else than priority.
func oneTier(p priorities) []jobs.Tier { return []jobs.Tier{{Name: "all", Priority: p.hi}} }

func none(int) string       { return "" }
func perClass(c int) string { return classNames[c] }

// smithFactor is a in Smith's rule w/r + a·wait (per millisecond, r in
// milliseconds, w = 1) such that a lo job goes before the hi jobs that
// arrived more than agingThreshold after it: the aging term must make up
// 1/r_H − 1/r_L over that time. The package default, 0.1, is meant for
// jobs of milliseconds; on jobs of seconds it makes the order first come,
// first served within a microsecond of waiting.
func smithFactor() float64 {
	gap := 1/(meanServiceHi*1e3) - 1/(meanServiceLo*1e3)
	return gap / float64(agingThreshold.Milliseconds())
}

// policies are the compared configurations, in the order of the table.
var policies = []Policy{
	{
		Name: "static", Label: "static priority",
		config: func(slots int, p priorities) jobs.Config {
			return jobs.Config{Slots: slots, Tiers: twoTiers(p), Types: types("hi", "lo")}
		},
		key: none, group: none,
	},
	{
		Name: "aging", Label: fmt.Sprintf("stepwise aging (%v)", agingThreshold),
		config: func(slots int, p priorities) jobs.Config {
			return jobs.Config{Slots: slots, Tiers: twoTiers(p), Types: types("hi", "lo"),
				Aging: jobs.Aging{Grace: agingGrace, Interval: agingInterval}}
		},
		key: none, group: none,
	},
	{
		Name: "smith", Label: "Smith's rule + linear aging",
		config: func(slots int, p priorities) jobs.Config {
			return jobs.Config{Slots: slots, Tiers: oneTier(p), Types: types("all", "all"),
				SmithFactor: smithFactor()}
		},
		key: none, group: none,
	},
	{
		Name: "wfq", Label: "fair queuing, key per class",
		config: func(slots int, p priorities) jobs.Config {
			return jobs.Config{Slots: slots, Tiers: oneTier(p), Types: types("all", "all")}
		},
		key: perClass, group: none,
	},
	{
		Name: "groups", Label: "weighted groups 1:1",
		config: func(slots int, p priorities) jobs.Config {
			return jobs.Config{Slots: slots, Tiers: twoTiers(p), Types: types("hi", "lo"),
				Groups: map[string]jobs.GroupConfig{"hi": {Weight: 1}, "lo": {Weight: 1}}}
		},
		key: none, group: perClass,
	},
}

// policyNames lists the policies' names, for messages.
func policyNames() string {
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// findPolicy looks a policy up by name.
func findPolicy(name string) (Policy, bool) {
	for _, p := range policies {
		if p.Name == name {
			return p, true
		}
	}
	return Policy{}, false
}

// policyIndex is a policy's place in policies, which gives it the same
// colour and marker in every chart.
func policyIndex(name string) int {
	for i, p := range policies {
		if p.Name == name {
			return i
		}
	}
	return len(policies)
}

// seconds converts seconds of the model into a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

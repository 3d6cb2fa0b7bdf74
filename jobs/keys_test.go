package jobs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReturningKeyStartsAtVirtualTime(t *testing.T) {
	sm := newSim(t, Config{Slots: 1, Tiers: []Tier{{Name: "t"}},
		Types: map[JobType]TypeConfig{"j": {DefaultCost: sec, Tier: "t"}}})
	for i := range 5 {
		sm.add("j", "busy"+itoa(i), "busy", "", 1, sec)
	}
	for range 3 {
		sm.advance(sec)
	}
	late := sm.add("j", "late", "late", "", 1, sec)
	assert.Equal(t, sm.c.vnow, late.key.vt, "a new key starts at the system virtual time")
	sm.advance(sec)
	sm.advance(sec)
	assert.Greater(t, sm.at(late), 0.0)
}

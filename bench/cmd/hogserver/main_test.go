package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCases(t *testing.T) {
	cs, err := parseCases("fairly-idle, fairly:2,plain")
	require.NoError(t, err)
	assert.Equal(t, []testCase{{mode: "fairly-idle"}, {mode: "fairly", hogs: 2}, {mode: "plain"}}, cs)
	assert.Equal(t, "fairly:2", cs[1].String())
	for _, bad := range []string{"", "fairly:x", "fairly:-1", "fairly:65", "twin:1"} {
		_, err := parseCases(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestClientRefusesBadFlags(t *testing.T) {
	assert.Error(t, client([]string{"-reps", "0"}))
	assert.Error(t, client([]string{"-cases", "nobody"}))
	assert.Error(t, client([]string{"-server", "missing=/nonexistent/hogserver"}))
}

package trace

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEvents(t *testing.T) {
	tr, err := ParseString(`
# comment only
payload 10
rate 4/s for 1s        # 4 requests, 250ms apart
burst 2
pause 500ms
repeat 2 {
  payload 20
  burst 1 every 100ms for 200ms
}
`)
	require.NoError(t, err)
	ms := time.Millisecond
	want := []Event{
		{0, 10}, {250 * ms, 10}, {500 * ms, 10}, {750 * ms, 10},
		{1000 * ms, 10}, {1000 * ms, 10},
		{1500 * ms, 20}, {1600 * ms, 20},
		{1700 * ms, 20}, {1800 * ms, 20},
	}
	assert.Equal(t, want, tr.Events())
	assert.Equal(t, len(want), tr.Requests)
	assert.Equal(t, 1900*ms, tr.Duration)
}

func TestParseSemicolonsAndNesting(t *testing.T) {
	tr, err := ParseString("repeat 2 { ; repeat 3 { ; burst 1 ; pause 1s ; } ; payload 7 ; } ; burst 1")
	require.NoError(t, err)
	ev := tr.Events()
	require.Len(t, ev, 7)
	assert.Equal(t, 6*time.Second, ev[6].At)
	assert.Equal(t, DefaultPayload, ev[0].Size)
	assert.Equal(t, 7, ev[3].Size, "the payload set at the end of the first pass applies to the second")
	tr2, err := ParseString("repeat 2 {\nburst 1\npayload 7\n}")
	require.NoError(t, err)
	assert.Equal(t, []Event{{0, DefaultPayload}, {0, 7}}, tr2.Events())
}

func TestEmptyBlocksKeepPayload(t *testing.T) {
	// A block without requests is skipped in replay, but its payload still counts.
	tr, err := ParseString("repeat 1000000 {\n pause 1ns\n payload 9\n}\nburst 1")
	require.NoError(t, err)
	assert.Equal(t, []Event{{time.Millisecond, 9}}, tr.Events())
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		src  string
		line int
		err  error
	}{
		{"rate 50 for 1s", 1, ErrSyntax},
		{"rate -1/s for 1s", 1, ErrSyntax},
		{"rate x/s for 1s", 1, ErrSyntax},
		{"\nrate 5/s during 1s", 2, ErrSyntax},
		{"burst 0", 1, ErrSyntax},
		{"burst 2 every 0s for 1s", 1, ErrSyntax},
		{"burst 2 every 1s", 1, ErrSyntax},
		{"pause soon", 1, ErrSyntax},
		{"pause -1s", 1, ErrSyntax},
		{"payload 0", 1, ErrSyntax},
		{"payload 99999999", 1, ErrTooLarge},
		{"wait 1s", 1, ErrSyntax},
		{"repeat 2 {\nburst 1", 1, ErrSyntax},
		{"repeat 2", 1, ErrSyntax},
		{"}", 1, ErrSyntax},
		{"repeat 2 {\n} extra", 2, ErrSyntax},
		{"rate 1000000/s for 2s", 1, ErrTooLarge},
		{"repeat 2000 {\nburst 1000\n}", 1, ErrTooLarge},
		{"pause 25h", 1, ErrTooLarge},
		{"repeat 1000000 {\nrepeat 1000000 {\npause 1s\n}\n}", 2, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.src, "\n", `\n`), func(t *testing.T) {
			_, err := ParseString(c.src)
			require.ErrorIs(t, err, c.err)
			var pe *Error
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, c.line, pe.Line)
			assert.Contains(t, err.Error(), "trace line")
		})
	}
}

func TestBuiltin(t *testing.T) {
	names := BuiltinNames()
	require.Contains(t, names, "steady50")
	for _, n := range names {
		tr, err := Builtin(n)
		require.NoError(t, err, n)
		assert.Positive(t, tr.Requests, n)
		assert.Len(t, tr.Events(), tr.Requests, n)
	}
	tr, _ := Builtin("steady50")
	assert.Equal(t, 500, tr.Requests)
	_, err := Builtin("nope")
	assert.ErrorContains(t, err, "steady50")
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"rate 50/s for 1s", "repeat 3 {\nburst 2\n}\n", "payload 8; pause 1ms; burst 3 every 1ms for 5ms", "repeat 0 {\n}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tr, err := ParseString(src)
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("parse error %v wraps neither sentinel", err)
			}
			return
		}
		ev := tr.Events()
		if len(ev) != tr.Requests {
			t.Fatalf("%d events, %d announced", len(ev), tr.Requests)
		}
		for i, e := range ev {
			if e.At < 0 || e.At > tr.Duration || e.Size < 1 || e.Size > MaxPayload {
				t.Fatalf("event %d out of bounds: %+v (duration %v)", i, e, tr.Duration)
			}
			if i > 0 && e.At < ev[i-1].At {
				t.Fatalf("events out of order at %d", i)
			}
		}
	})
}

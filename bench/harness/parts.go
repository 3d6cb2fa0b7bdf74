package harness

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/bench/latency"
)

// EchoParts splits the network echo's response times into three parts,
// from the driver's clock and the server's, which are the machine's one
// wall clock:
//
//   - delivery: from the driver's write to the server's read returning the
//     line. The loopback, the OS waking Go's network poller, and Go running
//     the goroutine that reads (in fairly, the Await's).
//   - fairly: from the read returning to the echo's code going on with the
//     line. For fairly, the Await's thread getting a worker again; for
//     plain goroutines, nothing.
//   - reply: from there to the driver reading the echo. The write, the
//     loopback, and the OS running the driver's reader.
//
// So a tail in delivery or reply is the operating system's and Go's, and
// one in fairly is the scheduler's. Requests whose parts do not line up
// (clock steps, a line not matched) are left out; Matched counts the rest.
type EchoParts struct {
	Matched     int           `json:"matched"`
	DeliveryP50 time.Duration `json:"delivery_p50_ns"`
	DeliveryP99 time.Duration `json:"delivery_p99_ns"`
	FairlyP50   time.Duration `json:"fairly_p50_ns"`
	FairlyP99   time.Duration `json:"fairly_p99_ns"`
	ReplyP50    time.Duration `json:"reply_p50_ns"`
	ReplyP99    time.Duration `json:"reply_p99_ns"`
	// The Tail fields are the means of each part over the slowest 1 % of
	// the matched requests (at least one): what the p99 is made of.
	TailDelivery time.Duration `json:"tail_delivery_ns"`
	TailFairly   time.Duration `json:"tail_fairly_ns"`
	TailReply    time.Duration `json:"tail_reply_ns"`
}

// partsOf lines up the driver's result with the server's timings by the
// requests' sequence numbers, keeping the requests whose sending time
// passes keep; nil if nothing lines up.
func partsOf(res *driver.Result, log []interactive.Timing, keep func(sent int64) bool) *EchoParts {
	if res == nil {
		return nil
	}
	type split struct{ total, delivery, fairly, reply time.Duration }
	var all []split
	for _, t := range log {
		seq, ok := driver.SeqOf([]byte(t.Head))
		if !ok || seq >= len(res.SentAt) || res.SentAt[seq] == 0 || res.ReceivedAt[seq] == 0 || !keep(res.SentAt[seq]) {
			continue
		}
		x := split{
			total:    time.Duration(res.ReceivedAt[seq] - res.SentAt[seq]),
			delivery: time.Duration(t.Read - res.SentAt[seq]),
			fairly:   time.Duration(t.Resumed - t.Read),
			reply:    time.Duration(res.ReceivedAt[seq] - t.Resumed),
		}
		if x.delivery < 0 || x.fairly < 0 || x.reply < 0 {
			continue // the clock stepped
		}
		all = append(all, x)
	}
	if len(all) == 0 {
		return nil
	}
	part := func(f func(split) time.Duration) (p50, p99 time.Duration) {
		v := make([]time.Duration, len(all))
		for i, x := range all {
			v[i] = f(x)
		}
		l := latency.Of(v, 0) // the same nearest-rank percentiles as response times
		return l.P50, l.P99
	}
	p := &EchoParts{Matched: len(all)}
	p.DeliveryP50, p.DeliveryP99 = part(func(x split) time.Duration { return x.delivery })
	p.FairlyP50, p.FairlyP99 = part(func(x split) time.Duration { return x.fairly })
	p.ReplyP50, p.ReplyP99 = part(func(x split) time.Duration { return x.reply })
	slices.SortFunc(all, func(a, b split) int { return cmp.Compare(b.total, a.total) })
	tail := all[:max(1, len(all)/100)]
	for _, x := range tail {
		p.TailDelivery += x.delivery
		p.TailFairly += x.fairly
		p.TailReply += x.reply
	}
	n := time.Duration(len(tail))
	p.TailDelivery, p.TailFairly, p.TailReply = p.TailDelivery/n, p.TailFairly/n, p.TailReply/n
	return p
}

// partsHead are the columns partsCells fills.
var partsHead = []string{"fairly's part p99 (ms)", "slowest 1 %: delivery / fairly / reply (ms)"}

// partsCells shows where rec's echo spent its time: the scheduler's part
// at p99, and the parts of the slowest requests.
func partsCells(rec *Record) []string {
	if rec == nil || rec.EchoParts == nil {
		return []string{"—", "—"}
	}
	p := rec.EchoParts
	return []string{ms(p.FairlyP99), fmt.Sprintf("%s / %s / %s", ms(p.TailDelivery), ms(p.TailFairly), ms(p.TailReply))}
}

// partsText explains the columns of partsCells under a table.
const partsText = "The last two columns split the response times by clock readings in the driver and in the server: " +
	"delivery runs from the driver's write to the server's read returning (the loopback, the OS waking Go's network poller, Go running the reader), " +
	"fairly from there to the echo's thread running again (the scheduler's part; none for plain goroutines), " +
	"reply from there to the driver reading the echo; the slowest 1 % are shown as the means of their parts."

// Package jobs schedules coarse, mostly blocking jobs (a clone, a sync, an
// export) that many clients submit, and runs each admitted job as a fairly
// thread.
//
// One ordering decides which pending job is admitted next:
//
//  1. Tier. Urgent jobs first, longest urgent first; then the highest
//     effective tier. A job's effective tier is its type's tier, promoted
//     one step per Aging.Interval once it has waited Aging.Grace, up to
//     Aging.Ceiling; it becomes urgent when its aged level reaches
//     Aging.Urgent.
//  2. Groups and keys. Within a tier, only groups with a free slot of their
//     allocation take part (minimums, then weights, then caps, with what a
//     group cannot use handed to the others); among them, the fairness key
//     with the smallest virtual time, its accumulated charge over its
//     weight, goes first. A new or returning key starts at the current
//     minimum.
//  3. Inside a key, Smith's rule with linear aging: the largest
//     w/r + a·wait, where r is the learned cost of the (type, id).
//  4. Checks: total slots, the cap of the job's base tier, type
//     MaxConcurrency, group allocation or cap, conflict group on the same id. A job failing one is set aside
//     until what blocks it frees, keeps aging, and never holds up the jobs
//     behind it.
//  5. Charging: admission charges the key the estimate; completion corrects
//     it by actual − estimate and updates the estimate (an EMA).
//
// Submit queues a job and returns; RunSync waits for it and honours its
// context. Each admission costs O(log n) (heaps, no re-sorting). The
// design, the answers to its interaction questions, the wait bound and
// the benchmark figures are in docs/jobs.md.
package jobs

// Package jobs schedules coarse, mostly blocking jobs (a clone, a sync, an
// export) that many clients submit, and runs each admitted job as a fairly
// thread.
//
// One ordering decides which pending job is admitted next, and whenever a
// slot is free and some pending job is admissible, the best admissible job
// in that order starts (the scheduler is work-conserving):
//
//  1. Tier. Urgent jobs first, longest urgent first; then the highest
//     effective tier. A job's effective tier is its type's tier, promoted
//     one step per Aging.Interval once it has waited Aging.Grace (time its
//     group spends paused does not count), up to Aging.Ceiling; it becomes
//     urgent when its aged level reaches Aging.Urgent.
//  2. Groups and keys. Within a tier, only groups with a free slot of their
//     allocation take part (minimums, then weights, then caps, with what a
//     group cannot use handed to the others); among them, the fairness key
//     with the smallest virtual time, its accumulated charge over its
//     weight, goes first. A new or returning key starts at the larger of
//     its own virtual time and the system virtual time, and no key carries
//     more than Config.MaxLag of credit.
//  3. Inside a key, first submitted first (the fair-queuing design), or,
//     with Config.SmithFactor set, Smith's rule with linear aging: the
//     largest w/r + a·wait, where r is the learned cost of the (type, id).
//  4. Checks: total slots, the cap of the job's base tier, type
//     MaxConcurrency, group allocation or cap, conflict group on the same
//     id. A job failing one is set aside until what blocks it frees, then
//     competes again in the fair order; it keeps aging, and never holds up
//     the jobs behind it.
//  5. Charging: admission charges the key the estimate, and the charge
//     sticks: completion raises it to the actual wall time if that was
//     longer, never lowers it, and learns the estimate (the first run
//     replaces the default, an EMA smooths later ones).
//
// Submit queues a job and returns; RunSync waits for it and honours its
// context; a second submission of a pending or running (type, id) joins
// it. Job.Retry retries failed jobs with backoff. Close drains, Shutdown
// drops what has not started and reports it. MetricsSnapshot gives the
// figures, and the module github.com/fairlyprompt/fairly/fairlyprom exports
// them to Prometheus.
//
// Config.Store keeps the jobs in a database instead of memory (packages
// sqlitestore and pgstore): Submit then returns once the job is committed,
// a process's jobs survive its death (at least once), and processes that
// share one PostgreSQL database keep one fair order between them, a
// leader admitting for all. With a store, a job type's body is its
// TypeConfig.Handler. The design, the answers to its interaction
// questions, the wait and lag bounds, the shutdown contract and the
// benchmark figures, the durability contract and the protocol between
// processes are in docs/jobs.md.
package jobs

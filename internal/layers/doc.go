// Package layers holds the test that keeps memprobe's packages in layers
// that read top-down:
//
//	cmd/probe                      thin: flags → options → call
//	probe/runner                   the experiment runner: children of probe train
//	probe/job, probe/decodebench   runners: one configuration, its instruments
//	report, schema                 results: read, compare, render (no trainer)
//	probe/{allocsite, ledger, memmodel, procfs, profiling, reconcile,
//	       rtstats, sampler}       instruments (no trainer, no runner)
//	trainer/...                    the subject (of the probe, only ledger)
//	internal/...                   helpers anyone may use
//
// The rules are checked on the dependency lists `go list -deps` reports, for
// each set of build tags that changes what links.
package layers

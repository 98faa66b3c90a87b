// Package layers holds the test that keeps memprobe's folders in layers
// that read top-down. Each top-level folder is one layer; a package may
// import its own folder, internal/, and the folders listed for its layer:
//
//	cmd/        the command: flags → options → call        anything below
//	run/        the experiment runner and the jobs it runs  trainer, instrument, outside, foundations
//	report/     results read, compared and rendered         foundations only (no instrument, no runner)
//	outside/    any process watched from outside            instrument, foundations
//	instrument/ the in-process instruments                  foundations (no trainer)
//	trainer/    the subject                                 ledger
//	ledger/, stats/, metric/, schema/                       the foundations (metric: schema)
//	internal/   helpers anyone may use                      nothing of the module
//	scripts/    tools beside the program                    internal only
//
// The rules are checked on folder prefixes of the dependency lists
// `go list -deps` reports, for each set of build tags that changes what
// links; a folder the table does not name is an error, so a new folder
// gets a place in the layers before it gets code. docs/architecture.md
// lists the same folders in the same order, and a test holds it to that.
package layers

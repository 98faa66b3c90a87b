// Package runner is the experiment runner behind `probe run`: it runs the
// reference trainer through the phases of every plan, each configuration
// in a fresh child process, several times, measures each child from inside
// (the `probe train --json` result it writes) and from outside (the
// parent's RSS sampler, the kernel's rusage), and returns one
// [schema.Report] (memprobe.report/v1).
//
// Its place in the pipeline is between the command and the job: cmd/probe
// turns flags into Options and calls Run; Run starts `probe train` (the
// same binary, re-executed) per configuration, and each child runs
// [memprobe/run/job]; package report renders the Report it returns.
//
// The stages, in order:
//
//  1. Plan lists the configurations: plans × phases × the sweep grid,
//     each at its plan's scale (Scale: a preset, steps and data at which
//     the plan's before state is affordable) and each as a child command
//     line. Shard keeps every N-th.
//  2. Predict sizes each configuration's memory with
//     [memprobe/instrument/memmodel] before anything starts; a configuration
//     above the memory limit is refused (skipped), never started.
//     WritePlan prints the plan (--dry-run).
//  3. Run starts the children one at a time (measurements must not
//     compete), watches each (sampler, timeout, memory limit), kills its
//     process group when it passes a limit or the run is interrupted, and
//     records what the parent saw (schema.Outside) beside what the child
//     wrote (schema.Result).
//  4. Summarize condenses each configuration's repetitions: per metric the
//     values, the median and its confidence interval
//     ([memprobe/stats], over golang.org/x/perf/benchmath), with warnings
//     beside the figures.
//  5. Merge joins the reports of shards into one.
package runner

// Package process draws every text of a process watched from outside
// (`probe exec`, `probe attach`): the report, its tables and its
// diagnosis, and the live view's frame. It works from data alone
// (schema.Result of kind "process", schema.LiveSample, schema.LiveSites),
// so that the watch (memprobe/outside) keeps the mechanics and the words
// have one home:
//
//  1. Diagnose turns a result into its findings, a plain sentence each
//     with its figure (schema.Process.Diagnosis, kept in the JSON); the
//     caller runs it before writing the JSON.
//  2. Render prints the result as text or markdown: the run, the
//     timeline, descendants, counters, GPU, the breakdown at the peak
//     (report.ReconciliationTable), allocation sites, the diagnosis, the cost.
//  3. LiveFrame draws one frame of the live view (LiveSites its --sites
//     section); DrawFrame puts it on a terminal.
//
// It imports only internal/ and the foundations (schema), never the
// watch or an instrument.
package process

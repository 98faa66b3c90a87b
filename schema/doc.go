// Package schema owns every file format memprobe reads and writes: the
// result of one training job (Result, "memprobe.train/v3"), the report of
// a run of many configurations (Report, "memprobe.report/v1"), the
// configuration that produced a result (Config), the machine and build it
// ran on (Environment), and the records of `probe decode --json`
// (DecodeRecord, "memprobe.decode/v1", with its DecodeConfig).
//
// It is the hinge of the pipeline trainer → probe → report: probe/job
// fills these types, report/ and the experiment runner read them. So that
// a reader does not link the trainer to read a JSON file, the package
// imports nothing under memprobe/trainer, nor probe/job or probe/memmodel
// (which do); it imports only the leaf instrument packages whose types
// appear in a result (probe/ledger, probe/reconcile, probe/sampler,
// probe/rtstats, probe/allocsite, probe/profiling). A test checks this
// with `go list -deps`.
//
// The formats, field by field with units and sources, are in
// docs/report-schema.md. Versioning: each format carries its name and
// version in its "schema" field. Adding a field keeps the version;
// removing one, renaming one, or changing its meaning or unit bumps it,
// and so does adding a section readers must be able to rely on. The
// readers (DecodeResult, ReadResult, DecodeReport, ReadReport,
// DecodeDecode, ReadDecode) accept
// exactly the version this build writes and refuse any other with one
// line naming the file, the version found and the version this build
// reads; errors.Is(err, ErrSchema) tells such a refusal from a damaged
// file. Writers (WriteResult, WriteReport) write a temporary file and
// rename it, so a reader never sees half a file.
package schema

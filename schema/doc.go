// Package schema owns every file format memprobe reads and writes: the
// result of one training job (Result, "memprobe.train/v3"), the report of
// a run of many configurations (Report, "memprobe.report/v1"), the
// configuration that produced a result (Config), the machine and build it
// ran on (Environment), and the records of `probe decode --json`
// (DecodeRecord, "memprobe.decode/v1", with its DecodeConfig).
//
// It is the hinge of the pipeline trainer → probe → report: run/job
// fills these types, report/ and the experiment runner read them. The
// package owns the wire format whole: every type a file holds is defined
// here with its JSON tags, the instruments' parts included (the sampler's
// timeline, SamplerResult; the runtime's counters, RuntimeSnapshot and
// SteadyState; the RSS reconciliation, Reconciliation; allocation sites,
// AllocSites; the profiles written, Profiles; device memory,
// DeviceMemory). The instrument packages fill these types (instrument/sampler's
// Result is an alias of SamplerResult, and so on), so a field cannot
// change in the JSON without a change here, where the version is. The
// package is a leaf: it imports no memprobe package but the internal/
// helpers (internal/atomicfile writes its files), so that reading a file
// links no instrument and no trainer. A test checks this with
// `go list -deps`.
//
// The formats, field by field with units and sources, are in
// docs/report-schema.md. Versioning: each format carries its name and
// version in its "schema" field. Adding a field keeps the version;
// removing one, renaming one, or changing its meaning or unit bumps it,
// and so does adding a section readers must be able to rely on. The
// readers (DecodeResult, ReadResult, DecodeReport, ReadReport,
// DecodeDecode, ReadDecode) accept exactly the version this build writes
// and refuse any other with one line naming the file, the version found
// and the version this build reads; errors.Is(err, ErrSchema) tells such
// a refusal from a damaged file. Open reads a file, or a directory of
// them, whatever it holds (a result, a report, decode records) by the
// reader its content names (DecodeFile for bytes in hand). Writers
// (WriteResult, WriteReport) write a temporary file and rename it, so a
// reader never sees half a file.
package schema

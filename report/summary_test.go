package report

import (
	"bytes"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// TestWriteSummaryGolden: the end-of-run summary of a recorded result (the
// threads plan's fixed state): the model-vs-ledger table, the
// reconciliation at the peak, the sampler and runtime lines, the verdict.
func TestWriteSummaryGolden(t *testing.T) {
	r, err := schema.ReadResult("testdata/threads-P6.json")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"component", "rss at peak", "peak rss: sampler", "done: "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	golden.Check(t, "summary-threads-P6.golden", b.Bytes())

	// Without instruments only the verdict remains.
	r.Instruments = false
	b.Reset()
	if err := WriteSummary(&b, r); err != nil || strings.Count(b.String(), "\n") != 1 || !strings.HasPrefix(b.String(), "done: ") {
		t.Errorf("without instruments: %q, %v", b.String(), err)
	}
}

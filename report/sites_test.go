package report

import (
	"bytes"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// TestRenderAllocSitesGolden: the allocations-by-site table from a made-up
// report of ten sites (eight shown, the rest counted in a note).
func TestRenderAllocSitesGolden(t *testing.T) {
	s := &schema.AllocSites{Exact: true, Steps: 5, ProgramObjects: 20, ProgramBytes: 20 * 4096,
		RuntimeObjects: 3, ProbeObjects: 40, SitesOmitted: 4}
	for i := range 10 {
		site := schema.AllocSite{Class: "program", Function: "memprobe/trainer.(*Trainer).step", File: "/src/trainer/step.go",
			Line: 100 + i, Objects: int64(20 - i), Bytes: int64(20-i) * 4096}
		if i%3 == 1 {
			site.Class, site.Function, site.File, site.CalledFrom = "runtime", "runtime.malg", "/go/src/runtime/proc.go", "memprobe/trainer.(*pool).start"
		}
		s.Sites = append(s.Sites, site)
	}
	var b bytes.Buffer
	if err := writeAllocSites(&b, s); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "allocsites.golden", b.Bytes())
	b.Reset()
	if err := writeAllocSites(&b, &schema.AllocSites{Exact: true, Steps: 5}); err != nil || bytes.Count(b.Bytes(), []byte("\n")) != 1 {
		t.Errorf("no sites: %q, %v; want the summary line only", b.String(), err)
	}
}

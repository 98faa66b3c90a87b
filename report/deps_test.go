package report

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFoundationsOnly: rendering links nothing that measures. The
// packages under report/ depend, of this module, only on report/ itself,
// internal/ and the foundations (schema, metric, stats, ledger): never on
// an instrument, the outside tool, the runner, the trainer or the command.
// The instruments hand report schema types (theirs are aliases), so a
// result file renders the same as a run in this process. internal/layers
// checks the same rule for every folder; this test says it where a reader
// of report/ looks, for each set of build tags that changes what links.
func TestFoundationsOnly(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot list dependencies")
	}
	ok := []string{"report", "internal", "schema", "metric", "stats", "ledger"}
	for _, tags := range []string{"", "openblas", "cuda", "viz"} {
		out, err := exec.Command(goBin, "list", "-tags="+tags, "-deps", "memprobe/report/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags=%q -deps: %v\n%s", tags, err, out)
		}
	deps:
		for _, p := range strings.Fields(string(out)) {
			rest, mine := strings.CutPrefix(p, "memprobe/")
			if !mine {
				continue
			}
			top, _, _ := strings.Cut(rest, "/")
			for _, f := range ok {
				if top == f {
					continue deps
				}
			}
			t.Errorf("tags %q: a package under memprobe/report depends on %s", tags, p)
		}
	}
}

package report

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTrainer: reading a result must not link the trainer. This
// package may depend on the instrument packages (whose wire types are
// schema's, aliased) and on the analytical model (instrument/memmodel, which
// predicts from a result's configuration), never on memprobe/trainer/...
// nor on run/job, which runs it; schema depends on no memprobe package
// at all (schema's TestLeaf). Checked for each set of build tags that
// changes what the trainer links.
func TestNoTrainer(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot list dependencies")
	}
	for _, tags := range []string{"", "openblas", "cuda"} {
		out, err := exec.Command(goBin, "list", "-tags="+tags, "-deps", "memprobe/schema", "memprobe/report").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags=%q -deps: %v\n%s", tags, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == "memprobe/trainer" || strings.HasPrefix(p, "memprobe/trainer/") ||
				p == "memprobe/run/job" {
				t.Errorf("tags %q: memprobe/schema or memprobe/report depends on %s", tags, p)
			}
		}
	}
}

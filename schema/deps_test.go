package schema

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeaf: schema imports no memprobe package but the internal/ helpers
// (internal/atomicfile, the module's one atomic writer), which depend on
// nothing else of the module, directly or through another, so that the
// format is defined here and nowhere else, and reading a file links no
// instrument. Checked for each set of build tags that changes what the
// module links.
func TestLeaf(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot list dependencies")
	}
	for _, tags := range []string{"", "openblas", "cuda", "viz"} {
		out, err := exec.Command(goBin, "list", "-tags="+tags, "-deps", "memprobe/schema").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags=%q -deps memprobe/schema: %v\n%s", tags, err, out)
		}
		pkgs := strings.Fields(string(out))
		if len(pkgs) == 0 || pkgs[len(pkgs)-1] != "memprobe/schema" {
			t.Fatalf("go list -tags=%q -deps memprobe/schema: want the package last, got %q", tags, pkgs)
		}
		for _, p := range pkgs[:len(pkgs)-1] {
			if p == "memprobe" || strings.HasPrefix(p, "memprobe/") && !strings.HasPrefix(p, "memprobe/internal/") {
				t.Errorf("tags %q: memprobe/schema depends on %s", tags, p)
			}
		}
	}
}

package layers

import (
	"os/exec"
	"strings"
	"testing"
)

var instruments = []string{
	"memprobe/instrument/allocsite", "memprobe/ledger", "memprobe/instrument/memmodel", "memprobe/instrument/procfs",
	"memprobe/instrument/profiling", "memprobe/instrument/reconcile", "memprobe/instrument/rtstats", "memprobe/instrument/sampler",
	"memprobe/outside", "memprobe/outside/sites",
}

func under(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

// TestLayers checks, for every package of the module, that its
// dependencies respect the layers of the package comment.
func TestLayers(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot list dependencies")
	}
	for _, tags := range []string{"", "openblas", "cuda"} {
		out, err := exec.Command(goBin, "list", "-tags="+tags, "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "memprobe/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags=%q: %v\n%s", tags, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			pkg, deps := f[0], f[1:]
			for _, d := range deps {
				if !strings.HasPrefix(d, "memprobe/") {
					continue
				}
				if why := violation(pkg, d); why != "" {
					t.Errorf("tags %q: %s depends on %s: %s", tags, pkg, d, why)
				}
			}
		}
	}
}

// violation says why pkg may not depend on dep, or "".
func violation(pkg, dep string) string {
	isInstrument := func(p string) bool {
		for _, i := range instruments {
			if p == i {
				return true
			}
		}
		return false
	}
	switch {
	case under(dep, "memprobe/cmd"):
		return "nothing imports the command"
	case under(pkg, "memprobe/trainer") && (under(dep, "memprobe/instrument") || under(dep, "memprobe/run") || under(dep, "memprobe/outside")):
		return "the trainer is the subject: of the probe it may use only the ledger"
	case under(pkg, "memprobe/trainer") && (under(dep, "memprobe/report") || under(dep, "memprobe/schema")):
		return "the trainer does not know the result format"
	case (isInstrument(pkg) || under(pkg, "memprobe/schema") || under(pkg, "memprobe/report")) && under(dep, "memprobe/trainer"):
		return "instruments and result readers do not link the trainer"
	case (isInstrument(pkg) || under(pkg, "memprobe/schema") || under(pkg, "memprobe/report")) &&
		(dep == "memprobe/run/job" || dep == "memprobe/run/decodebench" || dep == "memprobe/run/runner"):
		return "instruments and result readers do not depend on a runner"
	case under(pkg, "memprobe/internal") && !under(dep, "memprobe/internal"):
		return "internal helpers depend on nothing else of the module"
	}
	return ""
}

// TestViolationCatches: the rules can fail.
func TestViolationCatches(t *testing.T) {
	for _, c := range [][2]string{
		{"memprobe/trainer", "memprobe/instrument/allocsite"},
		{"memprobe/instrument/reconcile", "memprobe/trainer/model"},
		{"memprobe/report", "memprobe/run/job"},
		{"memprobe/report", "memprobe/run/runner"},
		{"memprobe/run/job", "memprobe/cmd/probe"},
		{"memprobe/internal/table", "memprobe/schema"},
	} {
		if violation(c[0], c[1]) == "" {
			t.Errorf("%s → %s allowed", c[0], c[1])
		}
	}
	for _, c := range [][2]string{
		{"memprobe/trainer", "memprobe/ledger"},
		{"memprobe/run/job", "memprobe/trainer"},
		{"memprobe/report", "memprobe/instrument/memmodel"},
		{"memprobe/cmd/probe", "memprobe/run/job"},
	} {
		if why := violation(c[0], c[1]); why != "" {
			t.Errorf("%s → %s refused: %s", c[0], c[1], why)
		}
	}
}

package phase

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/trainer"
	"memprobe/trainer/model"
)

// TestList compares List's output with testdata/list.golden; on a mismatch
// it writes testdata/list.got. Run with -update to accept a change.
func TestList(t *testing.T) {
	var b bytes.Buffer
	if err := List(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "list.golden", b.Bytes())
}

func TestPlansWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, p := range Plans() {
		if names[p.Name] {
			t.Errorf("plan %s listed twice", p.Name)
		}
		names[p.Name] = true
		if len(p.Notes) == 0 || len(p.Phases) < 2 {
			t.Errorf("plan %s: %d notes, %d phases", p.Name, len(p.Notes), len(p.Phases))
		}
		for i, ph := range p.Phases {
			want := "before"
			if i > 0 {
				want = "P" + string(rune('0'+i))
			}
			if ph.Name != want {
				t.Errorf("plan %s: phase %d is %q, want %q", p.Name, i, ph.Name, want)
			}
			if ph.Description == "" || ph.Mechanism == "" || ph.Apply == nil || strings.Contains(ph.Description, "\n") {
				t.Errorf("plan %s phase %s: description, mechanism and Apply are required, one line each", p.Name, ph.Name)
			}
		}
	}
	for _, want := range []string{"threads", "arena", "embedding", "decode"} {
		if !names[want] {
			t.Errorf("no plan %s", want)
		}
	}
}

// TestThreadsCumulative: Pk is before plus fixes 1..k, and the last phase
// is the fixed trainer, the zero Pathology.
func TestThreadsCumulative(t *testing.T) {
	p, err := Lookup("threads")
	if err != nil {
		t.Fatal(err)
	}
	get := func(phase string) trainer.Pathology {
		var o trainer.Options
		if err := p.Configure(&o, phase); err != nil {
			t.Fatal(err)
		}
		return o.Pathology
	}
	before := get("before")
	if before.WorkerStackBytes != 8<<20 || !before.SphereHierarchy || !before.ContextWorkspaces || before.CacheScale != BeforeCacheScale ||
		!before.ClearCaches || !before.EmbeddingCache || !before.EagerBatches || !before.ModelLock {
		t.Errorf("before: %+v", before)
	}
	p3 := get("P3")
	want := trainer.Pathology{WorkerStackBytes: 1 << 20, ContextWorkspaces: true, EagerBatches: true, ModelLock: true}
	if p3 != want {
		t.Errorf("P3: %+v, want %+v", p3, want)
	}
	if p6 := get("P6"); p6 != (trainer.Pathology{}) {
		t.Errorf("P6 is not the fixed trainer: %+v", p6)
	}
	// Configure overwrites the plan's switches whatever o held.
	o := trainer.Options{Pathology: trainer.Pathology{ModelLock: true, CacheScale: 9}}
	if err := p.Configure(&o, "P6"); err != nil || o.Pathology != (trainer.Pathology{}) {
		t.Errorf("P6 over a dirty Options: %+v, %v", o.Pathology, err)
	}
}

// TestExpectations: every expectation names a result field (a unit in its
// name), a known reference and exactly one figure; a phase with an
// expectation has a claim, and the headline ones say what the notes say.
func TestExpectations(t *testing.T) {
	units := []string{"_bytes", "_per_sec", "_ns_median", "_per_step"}
	for _, p := range Plans() {
		for i, ph := range p.Phases {
			if len(ph.Expect) > 0 && ph.Claim == "" {
				t.Errorf("plan %s phase %s: expectations without a claim", p.Name, ph.Name)
			}
			for _, e := range ph.Expect {
				where := fmt.Sprintf("plan %s phase %s: %+v", p.Name, ph.Name, e)
				hasUnit := false
				for _, u := range units {
					hasUnit = hasUnit || strings.HasSuffix(e.Metric, u)
				}
				switch {
				case !hasUnit:
					t.Errorf("%s: metric has no unit in its name", where)
				case (e.Ratio == 0) == (e.Delta == 0):
					t.Errorf("%s: want exactly one of Ratio and Delta", where)
				case e.Ratio < 0:
					t.Errorf("%s: negative ratio", where)
				case e.Versus == VersusAbsolute && (e.Ratio != 0 || e.Delta <= 0):
					t.Errorf("%s: an absolute claim is a positive value in Delta", where)
				case e.Versus != VersusPrevious && e.Versus != VersusBefore && e.Versus != VersusAbsolute:
					t.Errorf("%s: versus %q", where, e.Versus)
				case i == 0 && e.Versus != VersusAbsolute:
					t.Errorf("%s: the before state has nothing to compare with", where)
				}
			}
		}
	}
	get := func(plan, phase string) []Expectation {
		p, err := Lookup(plan)
		if err != nil {
			t.Fatal(err)
		}
		k, err := p.Index(phase)
		if err != nil {
			t.Fatal(err)
		}
		return p.Phases[k].Expect
	}
	for _, c := range []struct {
		plan, phase string
		want        Expectation
	}{
		{"threads", "before", Expectation{Metric: "peak_rss_bytes", Versus: VersusAbsolute, Delta: 1.32e9}},
		{"threads", "P1", Expectation{Metric: "peak_rss_bytes", Versus: VersusPrevious, Delta: -455e6}},
		{"threads", "P4", Expectation{Metric: "peak_rss_bytes", Versus: VersusPrevious, Delta: -2e6}},
		{"threads", "P5", Expectation{Metric: "tokens_per_sec", Versus: VersusPrevious, Ratio: 63}},
		{"decode", "P3", Expectation{Metric: "tokens_per_sec", Versus: VersusBefore, Ratio: math.Sqrt(100 * 300)}},
	} {
		if got := get(c.plan, c.phase); len(got) == 0 || got[0] != c.want {
			t.Errorf("plan %s phase %s: %+v, want %+v first", c.plan, c.phase, got, c.want)
		}
	}
	if got := get("threads", "P6"); got != nil {
		t.Errorf("threads P6 claims nothing, has %+v", got)
	}
}

func TestBeforeCacheScale(t *testing.T) {
	// 8.65e6 / (32*128*256*4) = 2.0623
	if BeforeCacheScale != 2.06 {
		t.Errorf("BeforeCacheScale = %g, want 2.06", BeforeCacheScale)
	}
}

func TestOtherPlans(t *testing.T) {
	for _, c := range []struct {
		plan, phase string
		check       func(o trainer.Options) bool
	}{
		{"arena", "before", func(o trainer.Options) bool {
			return o.Engine == "tape" && o.Tape.ResetBeforeSide && o.Tape.FreeChunksEvery == 10 && o.GEMM == "naive" && o.Side.Every == 1
		}},
		{"arena", "P1", func(o trainer.Options) bool { return !o.Tape.ResetBeforeSide && o.GEMM == "naive" }},
		{"arena", "P2", func(o trainer.Options) bool { return !o.Tape.ResetBeforeSide && o.GEMM == "auto" }},
		{"embedding", "before", func(o trainer.Options) bool { return o.Tape.OneHotEmbedding && o.Tape.KeepGraphs }},
		{"embedding", "P1", func(o trainer.Options) bool { return !o.Tape.OneHotEmbedding && o.Tape.KeepGraphs }},
		{"embedding", "P2", func(o trainer.Options) bool { return !o.Tape.OneHotEmbedding && !o.Tape.KeepGraphs }},
		{"decode", "before", func(o trainer.Options) bool { return o.Decode == "per-token-copy" }},
		{"decode", "P3", func(o trainer.Options) bool { return o.Decode == "batch" }},
	} {
		var o trainer.Options
		if err := Select(&o, c.plan, c.phase); err != nil {
			t.Fatal(err)
		}
		if !c.check(o) {
			t.Errorf("%s %s: %+v", c.plan, c.phase, o)
		}
	}
}

func TestSelectErrors(t *testing.T) {
	var o trainer.Options
	for _, c := range []struct{ plan, phase, want string }{
		{"thread", "P1", `plan "thread": not one of threads, arena, embedding, decode`},
		{"threads", "P7", `phase "P7" of plan threads: not one of before, P1, P2, P3, P4, P5, P6`},
		{"decode", "fixed", `phase "fixed" of plan decode: not one of before, P1, P2, P3, or after`},
	} {
		err := Select(&o, c.plan, c.phase)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Select(%s, %s): %v, want %q", c.plan, c.phase, err, c.want)
		}
	}
}

// TestAfter: "after" names each plan's fixed state, its last phase, and
// configures exactly what that phase does.
func TestAfter(t *testing.T) {
	for _, p := range Plans() {
		last := p.Phases[len(p.Phases)-1].Name
		if got := p.Resolve(After); got != last {
			t.Errorf("plan %s: after resolves to %s, want %s", p.Name, got, last)
		}
		var a, b trainer.Options
		if err := p.Configure(&a, After); err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(&b, last); err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("plan %s: after configures %+v, %s %+v", p.Name, a, last, b)
		}
	}
}

func TestKnobs(t *testing.T) {
	if n, err := WorkerStack("0"); n != 0 || err != nil {
		t.Errorf("WorkerStack(0) = %d, %v", n, err)
	}
	// The units of every other size flag (data.ParseSize): binary and
	// decimal, both spelled out.
	for in, want := range map[string]int64{"96KiB": 96 << 10, "8MiB": 8 << 20, "1MB": 1e6, "1 GiB": 1 << 30, "65536": 65536} {
		if n, err := WorkerStack(in); n != want || err != nil {
			t.Errorf("WorkerStack(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "10.5M", "1.5B", "99999999999999999999"} {
		if _, err := WorkerStack(in); err == nil || !strings.HasPrefix(err.Error(), "--worker-stack") {
			t.Errorf("WorkerStack(%q): %v", in, err)
		}
	}
	// Ranges are Validate's: one place, whichever way the value came in.
	for _, c := range []struct {
		mut  func(*trainer.Options)
		want string
	}{
		{func(o *trainer.Options) { o.Pathology.CacheScale = 0.99 }, "cache scale 0.99 out of range"},
		{func(o *trainer.Options) { o.Pathology.CacheScale = 64.5 }, "cache scale 64.5 out of range"},
		{func(o *trainer.Options) { o.Engine = "jit" }, `engine "jit"`},
	} {
		o := trainer.Options{Config: model.Presets["tiny"], Optimizer: model.DefaultAdamW, Threads: 2}
		c.mut(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate: %v, want %q", err, c.want)
		}
	}
	if e, err := BatchAlloc("eager"); !e || err != nil {
		t.Errorf("BatchAlloc(eager) = %v, %v", e, err)
	}
	if _, err := BatchAlloc("lazyy"); err == nil {
		t.Error("BatchAlloc(lazyy): no error")
	}
}

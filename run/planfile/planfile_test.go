package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"memprobe/schema"
)

// TestBadPlans: each bad plan file in testdata/bad is refused with the
// line of what is wrong and a message that names it.
func TestBadPlans(t *testing.T) {
	cases := []struct {
		file string
		line int
		want string
	}{
		{"01-unknown-field.toml", 6, `unknown field "phase.comand"`},
		{"02-no-command.toml", 7, `phase "b" has no command`},
		{"03-var-no-value.toml", 7, `{thread} has no value`},
		{"04-unregistered-metric.toml", 10, `metric "peak_rss_mb" is not registered`},
		{"05-duplicate-phase.toml", 8, `phase "a" is named twice (first at line 4)`},
		{"06-bad-change.toml", 10, `change "35%": want a signed percentage`},
		{"07-count-range.toml", 2, `count 0 out of range [1, 1000]`},
		{"08-syntax.toml", 5, `expected a comma`},
		{"09-unknown-expect-field.toml", 10, `unknown field "phase.expect.chnage"`},
		{"10-train-only-metric.toml", 10, `"tokens_per_sec" is measured only inside the reference trainer`},
		{"11-first-phase-change.toml", 6, `the first phase has no previous phase`},
		{"12-workdir-missing.toml", 2, `workdir "no-such-dir"`},
		{"13-bad-versus.toml", 10, `versus "after": want previous or before`},
		{"14-var-table.toml", 4, `variable "sizes": want a string or a number`},
		{"15-env-var-no-value.toml", 6, `env MALLOC_ARENA_MAX: {arenas} has no value`},
		{"16-no-name.toml", 0, `no name`},
		{"17-change-no-unit.toml", 10, `change "-30" has no unit: write -30% or -30MB`},
		{"18-phase-table.toml", 3, `[phase] is a table; phases are [[phase]]`},
		{"19-env-array.toml", 6, `env MALLOC_ARENA_MAX: want a string, a number or a boolean, not an array`},
		{"20-command-string.toml", 5, `phase.command: want an array, not a string`},
	}
	files, _ := filepath.Glob("testdata/bad/*.toml")
	if len(files) != len(cases) {
		t.Errorf("testdata/bad holds %d files, the table %d cases", len(files), len(cases))
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", c.file)
			_, err := Load(path, nil)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Load: %v, want a plan file error", err)
			}
			if pe.Line != c.line {
				t.Errorf("line %d, want %d: %v", pe.Line, c.line, err)
			}
			prefix := path + ":"
			if c.line == 0 {
				prefix = path + ": "
			}
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q... containing %q", err, prefix, c.want)
			}
		})
	}
}

func TestGoodPlan(t *testing.T) {
	p, err := Load("testdata/good.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "stacks" || p.Count != 2 || len(p.Phases) != 2 || p.Vars["threads"] != "63" {
		t.Fatalf("plan %+v", p)
	}
	wantExpect := []schema.Expectation{
		{Metric: "peak_rss_bytes", Versus: "previous", Ratio: 0.65},
		{Metric: "final_vsz_bytes", Versus: "before", Delta: -455e6},
		{Metric: "max_rss_bytes", Versus: "previous", Ratio: 0.5},
	}
	if !reflect.DeepEqual(p.Phases[1].Expect, wantExpect) {
		t.Errorf("P1 expect %+v, want %+v", p.Phases[1].Expect, wantExpect)
	}
	if e := p.Phases[0].Expect; len(e) != 1 || e[0].Versus != "absolute" || e[0].Delta != 1.32e9 {
		t.Errorf("before expect %+v", e)
	}
	if p.Phases[0].Line != 11 || p.Phases[1].Line != 19 {
		t.Errorf("phase lines %d, %d, want 11, 19", p.Phases[0].Line, p.Phases[1].Line)
	}
	cs := p.Configs(map[string]string{VarProbe: "/bin/probe", VarTmp: "/tmp/x"})
	if len(cs) != 2 {
		t.Fatalf("%d configurations, want 2", len(cs))
	}
	want := []string{"./prog", "--threads", "63", "--stack", "8M", "{literal}"}
	if !slices.Equal(cs[0].Command, want) {
		t.Errorf("command %q, want %q", cs[0].Command, want)
	}
	abs, _ := filepath.Abs("testdata")
	if got := cs[0].Program(p.Dir); got != filepath.Join(abs, "prog") {
		t.Errorf("program %q, want %q", got, filepath.Join(abs, "prog"))
	}
	if got := cs[1].Program(p.Dir); got != "/bin/probe" {
		t.Errorf("program %q, want /bin/probe", got)
	}
	if !slices.Equal(cs[0].Set, []string{"GREETING=hi 63"}) || !slices.Equal(cs[0].Unset, []string{"MALLOC_ARENA_MAX"}) {
		t.Errorf("env set %q unset %q", cs[0].Set, cs[0].Unset)
	}
	if cs[1].Command[0] != "/bin/probe" {
		t.Errorf("{probe} expanded to %q", cs[1].Command[0])
	}
	if s := p.SetupCommand(map[string]string{VarTmp: "/tmp/x"}); !slices.Equal(s, []string{"cc", "-o", "/tmp/x/prog", "prog.c"}) {
		t.Errorf("setup %q", s)
	}
	env := cs[0].Environ([]string{"PATH=/bin", "MALLOC_ARENA_MAX=2", "GREETING=old"})
	if !slices.Equal(env, []string{"PATH=/bin", "GREETING=hi 63"}) {
		t.Errorf("environment %q", env)
	}
}

// TestEnvScalars: an env value may be a number or a boolean, taken as
// the string TOML writes (MALLOC_ARENA_MAX = 2 is "2"), as [vars] are.
func TestEnvScalars(t *testing.T) {
	src := "name = \"x\"\n[[phase]]\nname = \"a\"\ncommand = [\"/bin/true\"]\nenv = { MALLOC_ARENA_MAX = 2, F = 0.5, B = true, S = \"s\" }\n"
	p, err := Parse("env.toml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"MALLOC_ARENA_MAX": "2", "F": "0.5", "B": "true", "S": "s"}
	if !reflect.DeepEqual(p.Phases[0].Env, want) {
		t.Errorf("env %q, want %q", p.Phases[0].Env, want)
	}
	// One [phase] alone is a type mismatch to the decoder, not a key
	// defined twice; both are named as the table they are.
	one := "name = \"x\"\n\n[phase]\nname = \"a\"\ncommand = [\"/bin/true\"]\n"
	if _, err := Parse("one.toml", []byte(one), nil); err == nil || err.Error() != "one.toml:3: [phase] is a table; phases are [[phase]] (an array of tables, one [[phase]] header each)" {
		t.Errorf("one [phase]: %v", err)
	}
}

// TestSweep: --sweep overrides a variable's default with a grid, the
// first swept variable varying slowest, and refuses a variable no phase
// uses.
func TestSweep(t *testing.T) {
	sw, err := ParseSweep("threads=1,63")
	if err != nil {
		t.Fatal(err)
	}
	sw2, _ := ParseSweep("stack=1M,8M")
	p, err := Load("testdata/good.toml", []Sweep{sw, sw2})
	if err != nil {
		t.Fatal(err)
	}
	cs := p.Configs(nil)
	if len(cs) != 8 {
		t.Fatalf("%d configurations, want 2 phases x 4 points", len(cs))
	}
	var got []string
	for _, c := range cs[:4] {
		got = append(got, c.Command[2]+"/"+c.Command[4])
	}
	if want := []string{"1/1M", "1/8M", "63/1M", "63/8M"}; !slices.Equal(got, want) {
		t.Errorf("grid %q, want %q", got, want)
	}
	if cs[0].Point["threads"] != "1" || cs[0].Phase != 0 || cs[4].Phase != 1 {
		t.Errorf("configuration 0 %+v, 4 %+v", cs[0], cs[4])
	}
	bad, _ := ParseSweep("unused=1,2")
	if _, err := Load("testdata/good.toml", []Sweep{bad}); err == nil || !strings.Contains(err.Error(), "--sweep unused") {
		t.Errorf("a sweep of an unused variable: %v", err)
	}
	for _, s := range []string{"threads", "threads=", "1x=2", "threads=1,1", "threads=1,,2"} {
		if _, err := ParseSweep(s); err == nil {
			t.Errorf("ParseSweep(%q) accepted", s)
		}
	}
	// A variable with no default is fine when swept.
	src := "name = \"x\"\n[[phase]]\nname = \"a\"\ncommand = [\"/bin/echo\", \"{n}\"]\n"
	if _, err := Parse("mem.toml", []byte(src), nil); err == nil {
		t.Error("{n} without a value accepted")
	}
	n, _ := ParseSweep("n=1,2")
	if p, err := Parse("mem.toml", []byte(src), []Sweep{n}); err != nil || len(p.Configs(nil)) != 2 {
		t.Errorf("swept {n}: %v", err)
	}
}

// FuzzParse: no plan file makes Parse panic, and every error it returns
// for a file names the file. Seeded with the test plans.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.toml")
	bad, _ := filepath.Glob("testdata/bad/*.toml")
	for _, p := range append(files, bad...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse("fuzz.toml", b, nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		for _, c := range p.Configs(nil) {
			if len(c.Command) == 0 {
				t.Errorf("a configuration without a command: %+v", c)
			}
		}
	})
}

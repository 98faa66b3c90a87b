package metric

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"memprobe/schema"
)

// fill sets every number reachable in v to a distinct value (next counts
// them), allocates its pointers and gives slices of numbers two
// elements, so that an accessor that reads the wrong field reads the
// wrong value.
func fill(v reflect.Value, next *float64, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), next, depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), next, depth+1)
			}
		}
	case reflect.Slice:
		if isNumber(v.Type().Elem().Kind()) {
			s := reflect.MakeSlice(v.Type(), 2, 2)
			fill(s.Index(0), next, depth+1)
			fill(s.Index(1), next, depth+1)
			v.Set(s)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		*next++
		v.SetInt(int64(*next))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		*next++
		v.SetUint(uint64(*next))
	case reflect.Float32, reflect.Float64:
		*next++
		v.SetFloat(*next + 0.5)
	}
}

func isNumber(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Float64
}

// asJSON is v's JSON as a map, the reference the accessors are checked
// against: a field's value at its dotted JSON path.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func at(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = obj[k]
	}
	return cur
}

func numbers(x any) []float64 {
	arr, _ := x.([]any)
	var out []float64
	for _, e := range arr {
		out = append(out, e.(float64))
	}
	return out
}

// TestAccessors: every registered accessor reads the field its name
// names, in a value whose numbers all differ.
func TestAccessors(t *testing.T) {
	var next float64
	var r schema.Result
	var o schema.Outside
	var d schema.DecodeRecord
	fill(reflect.ValueOf(&r).Elem(), &next, 0)
	fill(reflect.ValueOf(&o).Elem(), &next, 0)
	fill(reflect.ValueOf(&d).Elem(), &next, 0)
	rj, oj, dj := asJSON(t, &r), asJSON(t, &o), asJSON(t, &d)
	check := func(name, what string, got float64, ok bool, want any) {
		t.Helper()
		if w, isNum := want.(float64); !ok || !isNum || got != w {
			t.Errorf("%s: %s reads %v (ok %v), the field holds %v", name, what, got, ok, want)
		}
	}
	for _, def := range All() {
		if strings.HasPrefix(def.Name, "process.at_peak.") {
			continue // a part by its name, not a field's path: TestAtPeakParts
		}
		if def.Run != nil {
			x, ok := def.Run(&r)
			check(def.Name, "Run", x, ok, at(rj, def.Name))
		}
		if def.Outside != nil {
			x, ok := def.Outside(&o)
			check(def.Name, "Outside", x, ok, at(oj, def.Name))
		}
		if def.Decode != nil {
			x, ok := def.Decode(&d)
			check(def.Name, "Decode", x, ok, at(dj, def.Name))
		}
		if def.Passes != nil {
			if got, want := def.Passes(&d), numbers(at(dj, def.Name+"_passes")); len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s: Passes reads %v, %s_passes holds %v", def.Name, got, def.Name, want)
			}
		}
		if def.Runs != nil {
			if got, want := def.Runs(&d), numbers(at(dj, def.Name+"_runs")); len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s: Runs reads %v, %s_runs holds %v", def.Name, got, def.Name, want)
			}
		}
		if !def.Of(Run) && !def.Of(Decode) {
			t.Errorf("%s: no accessor", def.Name)
		}
	}
}

// TestAbsent: a figure of a nested object that is null, or one the
// record leaves out, is absent, not 0.
func TestAbsent(t *testing.T) {
	var r schema.Result // Runtime, DecodeStats, Process, Sampler nil
	var d schema.DecodeRecord
	d.DeviceMemory = &schema.DeviceMemory{}
	for _, name := range []string{"runtime.peak.heap_live_bytes", "decode_stats.syncs", "process.vm_hwm_bytes", "process.rusage_user_ms", "sampler.peaks.rss_bytes"} {
		def, _ := Lookup(name)
		if _, ok := def.Run(&r); ok {
			t.Errorf("%s of a result without it: present", name)
		}
	}
	for _, name := range []string{"device_busy_pct", "device_busy_ns_per_token", "device_memory.context_process_bytes", "device_memory.alloc_granularity_bytes"} {
		def, _ := Lookup(name)
		if _, ok := def.Decode(&d); ok {
			t.Errorf("%s of a record without it: present", name)
		}
	}
	def, _ := Lookup("device_memory.total_bytes")
	if _, ok := def.Decode(&d); !ok {
		t.Error("device_memory.total_bytes of a record with device memory: absent")
	}
}

// suffixUnits are the name endings that say the unit, longest first.
var suffixUnits = []struct{ suffix, unit string }{
	{"_bytes_per_step", BytesPerStep},
	{"_ns_per_token", NsPerToken},
	{"_ns_median", Nanoseconds},
	{"_bytes", Bytes},
	{"_ns", Nanoseconds},
	{"_pct", Percent},
	{"_ms", Milliseconds},
	{"tokens_per_sec", TokensPerSec},
	{"_per_token", PerToken},
	{"_allocs_per_step", PerStep},
	// decode_stats' two names with the unit before a qualifier.
	{"_bytes_in_use", Bytes},
	{"_bytes_peak", Bytes},
}

// TestUnitInName: a name with a unit's suffix has that unit, and a unit
// that has a suffix is in the name.
func TestUnitInName(t *testing.T) {
	for _, def := range All() {
		want := ""
		for _, s := range suffixUnits {
			if strings.HasSuffix(def.Name, s.suffix) {
				want = s.unit
				break
			}
		}
		switch {
		case want != "" && def.Unit != want:
			t.Errorf("%s: unit %q, the name says %q", def.Name, def.Unit, want)
		case want == "" && slices.ContainsFunc(suffixUnits, func(s struct{ suffix, unit string }) bool { return s.unit == def.Unit }):
			t.Errorf("%s: unit %q is not in the name", def.Name, def.Unit)
		case def.Unit == "":
			t.Errorf("%s: no unit", def.Name)
		}
	}
}

// TestLookup: a registered name is found; any other is an UnknownError
// that names it and lists every registered metric.
func TestLookup(t *testing.T) {
	d, err := Lookup("go_heap_allocs_per_step")
	if err != nil || d.Name != "go_heap_allocs_per_step" || !d.Exact || d.Run == nil {
		t.Errorf("Lookup(go_heap_allocs_per_step) = %+v, %v", d, err)
	}
	for _, name := range []string{"bogus", "", "config.seed", "tokens_per_sec_passes"} {
		_, err := Lookup(name)
		ue, ok := errors.AsType[*UnknownError](err)
		if !ok || ue.Name != name || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("Lookup(%q): %v, want an UnknownError naming it", name, err)
			continue
		}
		for _, n := range Names(-1) {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("Lookup(%q): the error does not list %s", name, n)
			}
		}
	}
}

// TestNames: each kind lists its own metrics, tokens_per_sec in both.
func TestNames(t *testing.T) {
	run, dec := Names(Run), Names(Decode)
	for _, c := range []struct {
		name        string
		run, decode bool
	}{
		{"peak_rss_bytes", true, false},
		{"max_rss_bytes", true, false},
		{"counts.workers", true, false},
		{"decode_stats.syncs", true, false},
		{"tokens_per_sec", true, true},
		{"syncs_per_token", false, true},
		{"device_memory.process_peak_bytes", false, true},
	} {
		if slices.Contains(run, c.name) != c.run || slices.Contains(dec, c.name) != c.decode {
			t.Errorf("%s: of run reports %v, of decode results %v; want %v, %v", c.name, slices.Contains(run, c.name), slices.Contains(dec, c.name), c.run, c.decode)
		}
	}
	if len(run)+len(dec) != len(Names(-1))+1 { // tokens_per_sec in both
		t.Errorf("%d run and %d decode metrics of %d", len(run), len(dec), len(Names(-1)))
	}
}

// TestDefaults: the metrics a diff compares when none is named are the
// registry's Default ones of each kind, in registry order, as probe diff
// --help lists them; tokens_per_sec, of both kinds, is in both.
func TestDefaults(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		want []string
	}{
		{Run, []string{"peak_rss_bytes", "max_rss_bytes", "final_vsz_bytes", "go_heap_alloc_bytes_per_step", "go_heap_allocs_per_step",
			"tokens_per_sec", "step_ns_median", "ledger_total_bytes", "decode_stats.syncs"}},
		{Decode, []string{"tokens_per_sec", "host_wait_ns_per_token", "device_busy_pct", "syncs_per_token", "launches_per_token",
			"host_allocs_per_token", "device_peak_bytes"}},
	} {
		if got := Defaults(c.kind); !slices.Equal(got, c.want) {
			t.Errorf("Defaults(%s) = %v, want %v", c.kind, got, c.want)
		}
	}
}

// TestTitle: a metric with a label is named by it in sentences, one
// without by its name.
func TestTitle(t *testing.T) {
	for name, want := range map[string]string{"peak_rss_bytes": "peak RSS", "step_ns_median": "step time", "floor_bytes": "floor_bytes"} {
		d, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Title(); got != want {
			t.Errorf("%s: Title %q, want %q", name, got, want)
		}
	}
}

// TestAtPeakParts: the process.at_peak metrics read their own part of the
// breakdown at the peak walk (each part's figures differ, and a decoy
// part comes first), and are absent without the walk or the part.
func TestAtPeakParts(t *testing.T) {
	parts := []schema.ReconciliationPart{
		{Name: "stacks.main", Bytes: 1, ReservedBytes: 2},
		{Name: "stacks.threads", Bytes: 4 << 20, ReservedBytes: 504 << 20},
		{Name: "c.malloc.arenas", Bytes: 59 << 20, ReservedBytes: 960 << 20},
	}
	r := schema.Result{Process: &schema.Process{AtPeak: &schema.Snapshot{
		Reconciliation: schema.Reconciliation{Parts: parts, GlibcArenas: 15}}}}
	want := map[string]float64{
		"process.at_peak.stacks_reserved_bytes":        504 << 20,
		"process.at_peak.stacks_resident_bytes":        4 << 20,
		"process.at_peak.malloc_arenas_reserved_bytes": 960 << 20,
		"process.at_peak.malloc_arenas_resident_bytes": 59 << 20,
		"process.at_peak.glibc_arenas":                 15,
	}
	n := 0
	for _, def := range All() {
		if !strings.HasPrefix(def.Name, "process.at_peak.") {
			continue
		}
		n++
		w, listed := want[def.Name]
		if !listed {
			t.Errorf("%s: not checked here", def.Name)
			continue
		}
		if got, ok := def.Run(&r); !ok || got != w {
			t.Errorf("%s: reads %v (ok %v), want %v", def.Name, got, ok, w)
		}
		if _, ok := def.Run(&schema.Result{Process: &schema.Process{}}); ok {
			t.Errorf("%s: present without a walk at the peak", def.Name)
		}
		if def.Name != "process.at_peak.glibc_arenas" {
			empty := schema.Result{Process: &schema.Process{AtPeak: &schema.Snapshot{}}}
			if _, ok := def.Run(&empty); ok {
				t.Errorf("%s: present without its part", def.Name)
			}
		}
	}
	if n != len(want) {
		t.Errorf("%d process.at_peak metrics registered, %d checked", n, len(want))
	}
}

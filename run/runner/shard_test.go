package runner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"memprobe/run/planfile"
	"memprobe/schema"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestParseShardSpec: --shard auto takes the index and count from the
// variables each scheduler sets, and names the variable that is missing
// or disagrees.
func TestParseShardSpec(t *testing.T) {
	cases := []struct {
		spec string
		env  []string
		i, n int
		src  string
		err  string
	}{
		{"2/5", nil, 2, 5, "flag", ""},
		{"auto/4", []string{EnvK8sIndex, "3"}, 3, 4, EnvK8sIndex, ""},
		{"auto", []string{EnvK8sIndex, "3"}, 0, 0, "", "JOB_COMPLETION_INDEX=3 is set, and a Kubernetes Job does not give the count"},
		{"auto/3", []string{EnvK8sIndex, "3"}, 0, 0, "", "JOB_COMPLETION_INDEX gives shard 3 of 3: out of range"},
		{"auto/4", []string{EnvK8sIndex, "x"}, 0, 0, "", `JOB_COMPLETION_INDEX="x" is not`},
		// sbatch --array=0-3
		{"auto", []string{EnvSlurmID, "2", EnvSlurmMin, "0", EnvSlurmMax, "3", EnvSlurmCount, "4"}, 2, 4, EnvSlurmID, ""},
		// sbatch --array=1-8:2 (tasks 1, 3, 5, 7)
		{"auto", []string{EnvSlurmID, "5", EnvSlurmMin, "1", EnvSlurmMax, "7", EnvSlurmStep, "2", EnvSlurmCount, "4"}, 2, 4, EnvSlurmID, ""},
		{"auto/4", []string{EnvSlurmID, "3", EnvSlurmMin, "0", EnvSlurmCount, "4"}, 3, 4, EnvSlurmID, ""},
		{"auto/5", []string{EnvSlurmID, "3", EnvSlurmMin, "0", EnvSlurmMax, "3"}, 0, 0, "", "the scheduler's variables (SLURM_ARRAY_TASK_ID) say 4 shards"},
		// sbatch --array=1,3,8: not a range
		{"auto", []string{EnvSlurmID, "3", EnvSlurmMin, "1", EnvSlurmMax, "8", EnvSlurmCount, "3"}, 0, 0, "", "SLURM_ARRAY_TASK_COUNT=3 but SLURM_ARRAY_TASK_MIN=1..SLURM_ARRAY_TASK_MAX=8 step 1 holds 8 tasks"},
		{"auto", []string{EnvSlurmID, "3"}, 0, 0, "", "SLURM_ARRAY_TASK_MIN is not"},
		{"auto", []string{EnvSlurmID, "3", EnvSlurmMin, "0"}, 0, 0, "", "neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is"},
		{"auto", []string{EnvGitLabNode, "1", EnvGitLabN, "3"}, 0, 3, EnvGitLabNode, ""},
		{"auto", []string{EnvGitLabNode, "2"}, 0, 0, "", "CI_NODE_TOTAL is not"},
		{"auto", nil, 0, 0, "", "none of JOB_COMPLETION_INDEX"},
		{"auto/4", []string{EnvK8sIndex, "1", EnvSlurmID, "1"}, 0, 0, "", "JOB_COMPLETION_INDEX and SLURM_ARRAY_TASK_ID are all set"},
		{"auto/0", nil, 0, 0, "", "want auto or auto/N"},
	}
	for _, c := range cases {
		i, n, src, err := ParseShardSpec(c.spec, envOf(c.env...))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %v: %d/%d, %v; want an error with %q", c.spec, c.env, i, n, err, c.err)
			}
		case err != nil || i != c.i || n != c.n || src != c.src:
			t.Errorf("%s %v: %d/%d from %q, %v; want %d/%d from %q", c.spec, c.env, i, n, src, err, c.i, c.n, c.src)
		}
	}
}

// TestShardAutoMerge: four shards run under --shard auto, with the
// variables a Kubernetes Indexed Job and a Slurm array set, merge into
// the configurations of the unsharded run, in its order; shards of
// another plan, another split or another commit do not merge, and a
// missing shard is named by its index.
func TestShardAutoMerge(t *testing.T) {
	src := `
name = "sharded"
[vars]
ok = "0"
[[phase]]
name = "a"
command = ["/bin/sh", "-c", "exit {ok}"]
[[phase]]
name = "b"
command = ["/bin/sh", "-c", "exit {ok}"]
[[phase]]
name = "c"
command = ["/bin/sh", "-c", "exit {ok}"]
`
	p := writePlan(t, strings.Replace(src, `"exit {ok}"`, `"exit {ok} # {n}"`, -1), "n=1,2,3")
	whole := planOptions(t, p)
	whole.Count = 1
	all, err := Run(context.Background(), whole)
	if err != nil {
		t.Fatal(err)
	}
	envs := map[string]func(int) func(string) string{
		"kubernetes": func(i int) func(string) string { return envOf(EnvK8sIndex, string(rune('0'+i))) },
		// sbatch --array=1-4
		"slurm": func(i int) func(string) string {
			return envOf(EnvSlurmID, string(rune('1'+i)), EnvSlurmMin, "1", EnvSlurmMax, "4", EnvSlurmCount, "4", EnvSlurmStep, "1")
		},
	}
	for sched, env := range envs {
		checkAutoShards(t, p, all, sched, env)
	}
	checkShardRefusals(t, src, p)
}

// checkAutoShards runs plan p in four shards under --shard auto/4, the
// scheduler's variables for shard k from env(k), and checks that the
// shards, merged in reverse order, hold the configurations and commands of
// the unsharded run all in its order, and that a merge of three names the
// missing shard.
func checkAutoShards(t *testing.T, p *planfile.Plan, all *schema.Report, sched string, env func(int) func(string) string) {
	t.Helper()
	var reps []*schema.Report
	var files []string
	for k := range 4 {
		o := planOptions(t, p)
		o.Count = 1
		var err error
		if o.Shard, o.Shards, o.ShardSource, err = ParseShardSpec("auto/4", env(k)); err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Shard == nil || rep.Shard.Index != k || rep.Shard.Count != 4 || rep.Shard.Configurations != 9 {
			t.Fatalf("%s shard %d: %+v", sched, k, rep.Shard)
		}
		reps, files = append(reps, rep), append(files, o.Out)
	}
	// The shards come in any order.
	slices.Reverse(reps)
	slices.Reverse(files)
	m, err := Merge(files, reps, nil)
	if err != nil {
		t.Fatalf("%s: %v", sched, err)
	}
	if got, want := runNames(m), runNames(all); !slices.Equal(got, want) {
		t.Errorf("%s: merged %q, want %q", sched, got, want)
	}
	for i := range m.Runs {
		if a, b := m.Runs[i].Command, all.Runs[i].Command; !slices.Equal(a, b) {
			t.Errorf("%s: %s command %q, unsharded %q", sched, m.Runs[i].Name, a, b)
		}
	}
	if _, err := Merge(files[1:], reps[1:], nil); err != nil {
		t.Errorf("%s: three of four shards: %v", sched, err)
	} else if m3, _ := Merge(files[1:], reps[1:], nil); !slices.ContainsFunc(m3.Warnings, func(w string) bool { return strings.Contains(w, "shard 3/4") && strings.Contains(w, "missing") }) {
		t.Errorf("%s: the missing shard 3/4 is not named: %q", sched, m3.Warnings)
	}
}

// checkShardRefusals: shards of plan p (from src) and of another plan,
// another split or another commit do not merge.
func checkShardRefusals(t *testing.T, src string, p *planfile.Plan) {
	t.Helper()
	// Another plan: the same file with another variable's value.
	other := writePlan(t, strings.Replace(src, `"exit {ok}"`, `"exit {ok} # {n}"`, -1), "n=1,2,4")
	o := planOptions(t, other)
	o.Count, o.Shard, o.Shards = 1, 1, 4
	rep1, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	o = planOptions(t, p)
	o.Count, o.Shard, o.Shards = 1, 0, 4
	rep0, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge([]string{"a", "b"}, []*schema.Report{rep0, rep1}, nil); err == nil || !strings.Contains(err.Error(), "a shard of another plan") {
		t.Errorf("shards of two plans: %v", err)
	}
	o = planOptions(t, p)
	o.Count, o.Shard, o.Shards = 1, 1, 3
	rep3, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge([]string{"a", "b"}, []*schema.Report{rep0, rep3}, nil); err == nil || !strings.Contains(err.Error(), "another plan") && !strings.Contains(err.Error(), "split") {
		t.Errorf("shards of two splits: %v", err)
	}
	late := *rep0
	late.Shard = &schema.Shard{}
	*late.Shard = *rep0.Shard
	late.Shard.Index = 2
	late.Environment.VCSRevision = "0123456789abcdef"
	if _, err := Merge([]string{"a", "b"}, []*schema.Report{rep0, &late}, nil); err == nil || !strings.Contains(err.Error(), "built from commit") {
		t.Errorf("shards of two commits: %v", err)
	}
}

func runNames(rep *schema.Report) []string {
	var out []string
	for _, r := range rep.Runs {
		out = append(out, r.Name)
	}
	return out
}

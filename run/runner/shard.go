package runner

import (
	"fmt"
	"strconv"
	"strings"
)

// The schedulers' variables --shard auto reads (docs/run.md shows each
// scheduler's job):
//
//   - a Kubernetes Indexed Job sets JOB_COMPLETION_INDEX (0 to
//     completions-1) in each pod, and not the count: --shard auto/N;
//   - a Slurm job array (sbatch --array=MIN-MAX[:STEP]) sets
//     SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_MAX,
//     SLURM_ARRAY_TASK_STEP and SLURM_ARRAY_TASK_COUNT;
//   - GitLab's parallel jobs set CI_NODE_INDEX (from 1) and CI_NODE_TOTAL.
//
// GitHub Actions sets no index: a matrix job passes its own,
// --shard ${{ matrix.shard }}/N.
const (
	EnvK8sIndex   = "JOB_COMPLETION_INDEX"
	EnvSlurmID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmMax   = "SLURM_ARRAY_TASK_MAX"
	EnvSlurmStep  = "SLURM_ARRAY_TASK_STEP"
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	EnvGitLabNode = "CI_NODE_INDEX"
	EnvGitLabN    = "CI_NODE_TOTAL"
)

// ParseShardSpec reads --shard: I/N, or auto or auto/N, which take the
// index (and the count) from the scheduler's variables that getenv
// reads. source is "flag" for I/N, else the variable that gave the
// index. A missing variable, or variables that disagree with one another
// or with N, is an error naming them.
func ParseShardSpec(spec string, getenv func(string) string) (i, n int, source string, err error) {
	if spec != "auto" && !strings.HasPrefix(spec, "auto/") {
		i, n, err = ParseShard(spec)
		return i, n, "flag", err
	}
	want := 0
	if rest, ok := strings.CutPrefix(spec, "auto/"); ok {
		want, err = strconv.Atoi(rest)
		if err != nil || want < 1 {
			return 0, 0, "", fmt.Errorf("--shard %q: want auto or auto/N with N >= 1", spec)
		}
	}
	src, err := shardScheduler(getenv)
	if err != nil {
		return 0, 0, "", err
	}
	num := envNum(getenv)
	switch src {
	case EnvK8sIndex:
		i, n, err = k8sShard(num, want)
	case EnvSlurmID:
		i, n, err = slurmShard(num)
	case EnvGitLabNode:
		i, n, err = gitLabShard(num)
	}
	if err != nil {
		return 0, 0, "", err
	}
	if want != 0 && n != want {
		return 0, 0, "", fmt.Errorf("--shard auto/%d: the scheduler's variables (%s) say %d shards", want, src, n)
	}
	if i >= n {
		return 0, 0, "", fmt.Errorf("--shard auto: %s gives shard %d of %d: out of range", src, i, n)
	}
	return i, n, src, nil
}

// shardScheduler is the one scheduler variable set that gives the shard's
// index; none, or more than one, is an error.
func shardScheduler(getenv func(string) string) (string, error) {
	var found []string
	for _, v := range []string{EnvK8sIndex, EnvSlurmID, EnvGitLabNode} {
		if getenv(v) != "" {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("--shard auto: none of %s (a Kubernetes Indexed Job), %s (a Slurm job array) or %s (GitLab parallel) is set; elsewhere (GitHub Actions) give --shard I/N", EnvK8sIndex, EnvSlurmID, EnvGitLabNode)
	case 1:
		return found[0], nil
	default:
		return "", fmt.Errorf("--shard auto: %s are all set: which scheduler's is the index? give --shard I/N", strings.Join(found, " and "))
	}
}

// envNumber reads a scheduler variable: its value, whether it is set, and
// an error naming it where it is not a non-negative integer.
type envNumber func(name string) (int, bool, error)

// envNum is the envNumber of getenv.
func envNum(getenv func(string) string) envNumber {
	return func(name string) (int, bool, error) {
		s := getenv(name)
		if s == "" {
			return 0, false, nil
		}
		x, err := strconv.Atoi(s)
		if err != nil || x < 0 {
			return 0, true, fmt.Errorf("--shard auto: %s=%q is not a non-negative integer", name, s)
		}
		return x, true, nil
	}
}

// k8sShard is a Kubernetes Indexed Job's shard: the index from its
// variable, the count from --shard auto/N (want), which the Job does not
// give.
func k8sShard(num envNumber, want int) (i, n int, err error) {
	i, _, err = num(EnvK8sIndex)
	if err != nil {
		return 0, 0, err
	}
	if want == 0 {
		return 0, 0, fmt.Errorf("--shard auto: %s=%d is set, and a Kubernetes Job does not give the count: use --shard auto/N with N its .spec.completions", EnvK8sIndex, i)
	}
	return i, want, nil
}

// slurmShard is a Slurm job array's shard: the task's place in the array
// (its ID from the minimum, by the step) and the array's size, from its
// maximum or its count, which must agree (an array that is not a range
// has no places).
func slurmShard(num envNumber) (i, n int, err error) {
	id, _, err := num(EnvSlurmID)
	if err != nil {
		return 0, 0, err
	}
	lo, hasLo, err1 := num(EnvSlurmMin)
	hi, hasHi, err2 := num(EnvSlurmMax)
	step, hasStep, err3 := num(EnvSlurmStep)
	count, hasCount, err4 := num(EnvSlurmCount)
	for _, e := range []error{err1, err2, err3, err4} {
		if e != nil {
			return 0, 0, e
		}
	}
	if !hasStep {
		step = 1
	}
	if step < 1 {
		return 0, 0, fmt.Errorf("--shard auto: %s=0 is not a step", EnvSlurmStep)
	}
	if !hasLo {
		return 0, 0, fmt.Errorf("--shard auto: %s=%d is set but %s is not (Slurm sets both in a job array)", EnvSlurmID, id, EnvSlurmMin)
	}
	if id < lo || (id-lo)%step != 0 {
		return 0, 0, fmt.Errorf("--shard auto: %s=%d is not in the array %s=%d with step %d", EnvSlurmID, id, EnvSlurmMin, lo, step)
	}
	i = (id - lo) / step
	switch {
	case hasHi:
		if hi < lo {
			return 0, 0, fmt.Errorf("--shard auto: %s=%d is below %s=%d", EnvSlurmMax, hi, EnvSlurmMin, lo)
		}
		n = (hi-lo)/step + 1
		if hasCount && count != n {
			// --array=1,3,8: not a range; the index is not the task's place.
			return 0, 0, fmt.Errorf("--shard auto: %s=%d but %s=%d..%s=%d step %d holds %d tasks: the array is not a range; give --shard I/N", EnvSlurmCount, count, EnvSlurmMin, lo, EnvSlurmMax, hi, step, n)
		}
	case hasCount:
		n = count
	default:
		return 0, 0, fmt.Errorf("--shard auto: %s=%d is set but neither %s nor %s is", EnvSlurmID, id, EnvSlurmCount, EnvSlurmMax)
	}
	return i, n, nil
}

// gitLabShard is a GitLab parallel job's shard: its node (from 1) less
// one, of its total.
func gitLabShard(num envNumber) (i, n int, err error) {
	node, _, err := num(EnvGitLabNode)
	if err != nil {
		return 0, 0, err
	}
	total, ok, err := num(EnvGitLabN)
	switch {
	case err != nil:
		return 0, 0, err
	case !ok:
		return 0, 0, fmt.Errorf("--shard auto: %s=%d is set but %s is not", EnvGitLabNode, node, EnvGitLabN)
	case node < 1:
		return 0, 0, fmt.Errorf("--shard auto: %s=%d: GitLab counts nodes from 1", EnvGitLabNode, node)
	}
	return node - 1, total, nil
}

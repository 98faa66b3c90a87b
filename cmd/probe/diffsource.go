package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"memprobe/run/runner"
	"memprobe/schema"
)

// readSide reads one side of probe diff: a report or result file, or a
// directory whose *.json reports (or results) are pooled into one side
// (runner.Pool: every repetition of each configuration).
func readSide(path string) (*schema.Report, error) {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return readReport(path)
	}
	files, err := schema.Open(path)
	if errors.Is(err, schema.ErrNoFiles) {
		return nil, fmt.Errorf("%s: a directory with no .json report in it", path)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	reps := make([]*schema.Report, len(files))
	for i, f := range files {
		names[i] = f.Path
		if reps[i], err = asReport(f); err != nil {
			return nil, err
		}
	}
	return poolReports(names, reps)
}

// pool reads files and pools them into one report.
func pool(files []string) (*schema.Report, error) {
	slices.Sort(files)
	reps := make([]*schema.Report, len(files))
	for i, f := range files {
		r, err := readReport(f)
		if err != nil {
			return nil, err
		}
		reps[i] = r
	}
	return poolReports(files, reps)
}

// poolReports pools the reports read from files, in that order, into one
// (one report is itself).
func poolReports(files []string, reps []*schema.Report) (*schema.Report, error) {
	if len(reps) == 1 {
		return reps[0], nil
	}
	return runner.Pool(files, reps)
}

// isRange reports whether arg names a git range "BASE..HEAD" rather than
// a file: it has "..", and no file of that name exists.
func isRange(arg string) bool {
	if !strings.Contains(arg, "..") || strings.Contains(arg, "...") {
		return false
	}
	_, err := os.Stat(arg)
	return err != nil
}

// rangeReports resolves "BASE..HEAD" (any revisions git knows, in the
// repository of the current directory) to the reports that `probe run`
// wrote for those commits in dir: probe-<commit>.json, the commit
// abbreviated to 7 or more hex digits (runner.DefaultOut). Several
// reports of one commit are pooled. same, when not "", says that both
// revisions are one commit: the diff compares its reports with
// themselves.
func rangeReports(arg, dir string) (base, head *schema.Report, baseName, headName, same string, err error) {
	revs := strings.SplitN(arg, "..", 2)
	if revs[0] == "" || revs[1] == "" {
		return nil, nil, "", "", "", usageError{fmt.Errorf("range %q: want BASE..HEAD, both named", arg)}
	}
	var sides [2]*schema.Report
	var names, fulls [2]string
	for i, rev := range revs {
		full, err := resolveCommit(rev)
		fulls[i] = full
		if err != nil {
			return nil, nil, "", "", "", err
		}
		files, err := commitReports(dir, full)
		if err != nil {
			return nil, nil, "", "", "", err
		}
		if len(files) == 0 {
			return nil, nil, "", "", "", fmt.Errorf("no report of %s (commit %s) in %s: want probe-%s.json, as probe run names it (run make probe at that commit, or name the files)", rev, full[:12], dir, full[:7])
		}
		if sides[i], err = pool(files); err != nil {
			return nil, nil, "", "", "", err
		}
		names[i] = rev + " (" + strings.Join(files, ", ") + ")"
	}
	if fulls[0] == fulls[1] {
		same = fmt.Sprintf("%s and %s are one commit, %s: the diff compares its reports with themselves", revs[0], revs[1], fulls[0][:12])
	}
	return sides[0], sides[1], names[0], names[1], same, nil
}

// sameInput says, when base and head are one file or directory, or two
// files of the same bytes, that the diff compares a report with itself;
// "" otherwise.
func sameInput(base, head string) string {
	bs, err1 := os.Stat(base)
	hs, err2 := os.Stat(head)
	switch {
	case err1 != nil || err2 != nil:
		return ""
	case os.SameFile(bs, hs):
		return fmt.Sprintf("base and head are one file, %s: the diff compares it with itself", base)
	case bs.IsDir() || hs.IsDir() || bs.Size() != hs.Size():
		return ""
	}
	b, err1 := os.ReadFile(base)
	h, err2 := os.ReadFile(head)
	if err1 == nil && err2 == nil && bytes.Equal(b, h) {
		return fmt.Sprintf("base %s and head %s have the same bytes: the diff compares a report with itself", base, head)
	}
	return ""
}

// resolveCommit is rev's full commit hash, from git.
func resolveCommit(rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", usageError{fmt.Errorf("revision %q: may not start with -", rev)}
	}
	out, err := exec.Command("git", "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		if _, lerr := exec.LookPath("git"); lerr != nil {
			return "", fmt.Errorf("revision %s: git is not installed: %v", rev, lerr)
		}
		return "", fmt.Errorf("revision %s: not a commit of the git repository here", rev)
	}
	return strings.TrimSpace(string(out)), nil
}

var reportName = regexp.MustCompile(`^probe-([0-9a-f]{7,40})\.json$`)

// commitReports lists the reports in dir named for commit full.
func commitReports(dir, full string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--reports: %w", err)
	}
	var out []string
	for _, e := range ents {
		if m := reportName.FindStringSubmatch(e.Name()); m != nil && strings.HasPrefix(full, m[1]) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

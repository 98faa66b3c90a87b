package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/schema"
)

// copyFile copies src to dst, failing the test on error.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiffDirectories: each side may be a directory whose reports are
// pooled: the base's two reports give 10 repetitions a side.
func TestDiffDirectories(t *testing.T) {
	dir := t.TempDir()
	base, head := filepath.Join(dir, "base"), filepath.Join(dir, "head")
	os.Mkdir(base, 0o755)
	os.Mkdir(head, 0o755)
	copyFile(t, diffBase, filepath.Join(base, "a.json"))
	copyFile(t, diffSame, filepath.Join(base, "b.json"))
	copyFile(t, diffRegressed, filepath.Join(head, "c.json"))
	stdout, stderr, err := runProbe("diff", base, head)
	if err != nil {
		t.Fatalf("diff of directories: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "10+5") {
		t.Errorf("the base directory's two reports were not pooled (want n 10+5):\n%s", stdout)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, _, err := runProbe("diff", empty, head); err == nil || !strings.Contains(err.Error(), "no .json report") {
		t.Errorf("an empty directory: %v", err)
	}
}

// TestDiffGitRange: `probe diff BASE..HEAD --reports DIR` reads the
// reports probe run wrote for the two commits, and gates on them.
func TestDiffGitRange(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	run("commit", "-q", "--allow-empty", "-m", "base")
	a := run("rev-parse", "HEAD")
	run("commit", "-q", "--allow-empty", "-m", "head")
	b := run("rev-parse", "HEAD")
	reports := t.TempDir()
	copyFile(t, diffBase, filepath.Join(reports, "probe-"+a[:7]+".json"))
	copyFile(t, diffRegressed, filepath.Join(reports, "probe-"+b[:7]+".json"))
	t.Chdir(repo)

	stdout, stderr, err := runProbe("diff", "HEAD~1..HEAD", "--reports", reports, "--fail-on", "peak_rss_bytes:+5%")
	var be breachError
	if !errors.As(err, &be) || !strings.Contains(stderr, "regression: threads/P6") {
		t.Errorf("range diff with a regression: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "probe-"+a[:7]+".json") || !strings.Contains(stdout, "probe-"+b[:7]+".json") {
		t.Errorf("the range's reports are not named:\n%s", stdout)
	}

	// main..HEAD with main at HEAD: one report compared with itself,
	// which the diff says.
	run("branch", "main", "HEAD")
	stdout, _, err = runProbe("diff", "main..HEAD", "--reports", reports, "--fail-on", "peak_rss_bytes:+5%")
	if want := "warning: main and HEAD are one commit, " + b[:12] + ": the diff compares its reports with themselves"; err != nil || !strings.Contains(stdout, want) {
		t.Errorf("main..HEAD of one commit: %v; stdout lacks %q:\n%s", err, want, stdout)
	}

	for _, c := range []struct{ arg, want string }{
		{"HEAD~1..nope", "revision nope: not a commit"},
		{"HEAD~1..", "want BASE..HEAD"},
	} {
		if _, _, err := runProbe("diff", c.arg, "--reports", reports); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("diff %s: %v, want an error containing %q", c.arg, err, c.want)
		}
	}
	os.Remove(filepath.Join(reports, "probe-"+a[:7]+".json"))
	if _, _, err := runProbe("diff", "HEAD~1..HEAD", "--reports", reports); err == nil || !strings.Contains(err.Error(), "no report of HEAD~1") {
		t.Errorf("a commit without a report: %v", err)
	}
}

// TestDiffCaveats: a diff of a file with itself (one path, or a copy of
// the same bytes) says so, and so do matched configurations run on other
// data (200 KB against 48 MB), naming the setting and both values; none
// of these is said of two reports of one setting.
func TestDiffCaveats(t *testing.T) {
	dir := t.TempDir()
	cp := filepath.Join(dir, "copy.json")
	copyFile(t, diffBase, cp)
	rep, err := schema.ReadReport(diffBase)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rep.Runs {
		rep.Runs[i].Config.Data = "synthetic:48MB"
	}
	other := writeReportFile(t, "other-data.json", rep)
	for _, c := range []struct {
		base, head, want string
	}{
		{diffBase, diffBase, "warning: base and head are one file, " + diffBase + ": the diff compares it with itself"},
		{diffBase, cp, "warning: base " + diffBase + " and head " + cp + " have the same bytes: the diff compares a report with itself"},
		{diffBase, other, `warning: data differs (base "synthetic:1MB", head "synthetic:48MB") in 13 of 13 configurations: the figures compare that too, not the commits alone`},
		{diffBase, diffSame, ""},
	} {
		stdout, _, err := runProbe("diff", c.base, c.head)
		if err != nil {
			t.Fatalf("diff %s %s: %v", c.base, c.head, err)
		}
		// Text wraps a long warning at 120 columns, its next lines indented.
		unwrapped := strings.ReplaceAll(stdout, "\n  ", " ")
		if c.want == "" && strings.Contains(stdout, "warning:") || c.want != "" && !strings.Contains(unwrapped, c.want) {
			t.Errorf("diff %s %s: want %q in stdout:\n%s", c.base, c.head, c.want, stdout)
		}
	}
}

package main

// The README and docs/commands.md are tested as x/perf's doc_test.go tests
// benchstat's documentation: every `bin/probe` command they show in a
// fenced block is run (TestReadmeCommands, TestReadmeCommandsHTMLAndPlot),
// the README's table excerpt is what the kept report renders
// (TestReadmeExcerpt), and docs/architecture.md lists the packages `go
// list` lists (TestArchitecturePackages).

import (
	"bufio"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/outside/sites"
	"memprobe/report"
	"memprobe/schema"
)

const (
	readmePath   = "../../README.md"
	commandsPath = "../../docs/commands.md"
	archPath     = "../../docs/architecture.md"
	// keptReport is the real `make probe` report that docs/phases.md's
	// measured sections come from (report's TestPhasesDocMatchesReport).
	keptReport = "../../testdata/phases/report.json.gz"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the README's table excerpts from "+keptReport)

// readmeExcerpts are the README's tables, each between
// "<!-- excerpt: NAME -->" and "<!-- end excerpt -->", and how each is
// rendered from the kept report.
var readmeExcerpts = map[string]func(*schema.Report) (string, error){
	"threads phases": func(rep *schema.Report) (string, error) {
		return phaseExcerpt(rep, "threads", "phase", "peak RSS", "Δ previous", "peak Go heap", "tokens/s", "agrees")
	},
}

// phaseExcerpt renders the columns named (by their text header) of a plan's
// phase table, as `probe report` builds it (report.PlanBlocks), through the
// one table renderer, in a fenced text block. The footnote references
// ("no [1]") are dropped with the footnotes.
func phaseExcerpt(rep *schema.Report, plan string, columns ...string) (string, error) {
	blocks, err := report.PlanBlocks(rep, plan)
	if err != nil {
		return "", err
	}
	var phases *table.Table
	for _, b := range blocks {
		if b.Table != nil {
			phases = b.Table // the first table is the phases
			break
		}
	}
	if phases == nil {
		return "", fmt.Errorf("plan %s: no phase table", plan)
	}
	header, _, err := phases.Cells(table.Text)
	if err != nil {
		return "", err
	}
	var idx []int
	for _, name := range columns {
		i := slices.Index(header, name)
		if i < 0 {
			return "", fmt.Errorf("plan %s's phase table has no column %q (it has %q)", plan, name, header)
		}
		idx = append(idx, i)
	}
	footnote := regexp.MustCompile(`( \[\d+\])+$`)
	ex := &table.Table{}
	for _, i := range idx {
		ex.Columns = append(ex.Columns, phases.Columns[i])
	}
	for _, row := range phases.Rows {
		var cells []any
		for _, i := range idx {
			var v any
			if i < len(row) {
				v = row[i]
			}
			if s, ok := v.(string); ok {
				v = footnote.ReplaceAllString(s, "")
			}
			cells = append(cells, v)
		}
		ex.Add(cells...)
	}
	var b strings.Builder
	b.WriteString("```text\n")
	if err := ex.Render(&b, table.Text); err != nil {
		return "", err
	}
	b.WriteString("```\n")
	return b.String(), nil
}

// replaceExcerpts returns doc with every excerpt's body replaced by what
// render gives for its name; an error for an unknown name or a missing end.
func replaceExcerpts(doc string, render func(name string) (string, error)) (string, error) {
	const begin, end = "<!-- excerpt: ", "<!-- end excerpt -->"
	var out strings.Builder
	rest := doc
	n := 0
	for {
		i := strings.Index(rest, begin)
		if i < 0 {
			break
		}
		eol := strings.Index(rest[i:], "-->\n")
		if eol < 0 {
			return "", errors.New("an excerpt marker without -->")
		}
		name := strings.TrimSpace(rest[i+len(begin) : i+eol])
		bodyStart := i + eol + len("-->\n")
		j := strings.Index(rest[bodyStart:], end)
		if j < 0 {
			return "", fmt.Errorf("excerpt %q: no %s", name, end)
		}
		body, err := render(name)
		if err != nil {
			return "", fmt.Errorf("excerpt %q: %w", name, err)
		}
		out.WriteString(rest[:bodyStart])
		out.WriteString(body)
		rest = rest[bodyStart+j:]
		n++
	}
	if n == 0 {
		return "", errors.New("no excerpt markers")
	}
	out.WriteString(rest)
	return out.String(), nil
}

// TestReadmeExcerpt: the README's table excerpts are what the kept report
// renders, byte for byte, and no wider than 100 columns. -update-readme
// rewrites them.
func TestReadmeExcerpt(t *testing.T) {
	doc, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	rep := readKept(t, keptReport)
	got, err := replaceExcerpts(string(doc), func(name string) (string, error) {
		r, ok := readmeExcerpts[name]
		if !ok {
			return "", errors.New("no such excerpt in readmeExcerpts")
		}
		return r(rep)
	})
	if err != nil {
		t.Fatalf("%s: %v", readmePath, err)
	}
	if *updateReadme {
		if err := os.WriteFile(readmePath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = []byte(got)
	}
	if got != string(doc) {
		t.Errorf("%s: an excerpt is not what %s renders (go test ./cmd/probe -run TestReadmeExcerpt -update-readme rewrites it):\n%s",
			readmePath, keptReport, golden.FirstDiff(doc, []byte(got)))
	}
	for i, l := range strings.Split(got, "\n") {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("%s:%d: %d columns, more than 100", readmePath, i+1, n)
		}
	}
	if lines := strings.Count(got, "\n"); lines >= 120 {
		t.Errorf("%s: %d lines, want under 120", readmePath, lines)
	}
}

// TestReadmeExcerptCatchesAnEdit: a figure changed by hand in the excerpt
// is caught.
func TestReadmeExcerptCatchesAnEdit(t *testing.T) {
	doc, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	rep := readKept(t, keptReport)
	render := func(name string) (string, error) { return readmeExcerpts[name](rep) }
	edited := strings.Replace(string(doc), " GiB ", " TiB ", 1)
	if edited == string(doc) {
		t.Fatal("no GiB figure in the README to edit")
	}
	got, err := replaceExcerpts(edited, render)
	if err != nil {
		t.Fatal(err)
	}
	if got == edited {
		t.Error("an excerpt edited by hand renders the same")
	}
}

// docCommand is one command line shown in a document's fenced block.
type docCommand struct {
	where string   // file:line
	args  []string // after "bin/probe"
}

// docCommands returns the `bin/probe ...` lines of the fenced blocks of
// path (a trailing "# comment" dropped), in order.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "probe "); ok {
			line = "bin/probe " + rest // the command as `probe`, on the PATH
		}
		if !strings.HasPrefix(line, "bin/probe ") {
			continue
		}
		args, err := splitShell(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, docCommand{fmt.Sprintf("%s:%d", filepath.Base(path), n), args[1:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitShell splits a line into words as sh would for the quoting the
// documents use ('...', "..."), stopping at an unquoted "#".
func splitShell(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated %c", c)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			i = len(line)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// vizCommand reports whether a command line draws (the viz build's
// commands): report --html, history --chart, plot, pprof.
func vizCommand(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "plot", "pprof":
		return true
	case "report":
		return slices.ContainsFunc(args, func(a string) bool { return a == "--html" || strings.HasPrefix(a, "--html=") })
	case "history":
		return slices.ContainsFunc(args, func(a string) bool { return a == "--chart" || strings.HasPrefix(a, "--chart=") })
	}
	return false
}

// docFixtures are the files and values the documents' placeholders stand
// for, made once per test.
type docFixtures struct {
	subst map[string]string
}

// quickArgs is a command line at its quick scale: the scale flags come
// last, so that they win over the document's.
func quickArgs(args []string, short bool) []string {
	out := slices.Clone(args)
	if len(out) == 0 {
		return out
	}
	switch out[0] {
	case "run":
		switch {
		case slices.Contains(out, "--plan-file"):
			// A plan file's programs set their own scale: once each.
			out = append(out, "--count", "1")
		case !slices.Contains(out, "--quick"):
			out = append(out, "--quick")
		}
		if short {
			out = append(out, "--dry-run")
		}
	case "train":
		if !slices.Contains(out, "--list-phases") {
			out = append(out, "--preset", "tiny", "--steps", "2")
			// A file the document names is kept; a synthetic corpus shrinks.
			if i := slices.Index(out, "--data"); i < 0 || i+1 < len(out) && strings.HasPrefix(out[i+1], "synthetic:") {
				out = append(out, "--data", "synthetic:100KB")
			}
		}
	case "decode":
		if !slices.Contains(out, "--checkpoint") {
			out = append(out, "--preset", "tiny")
		}
		out = append(out, "--passes", "1", "--data", "synthetic:100KB")
	}
	return out
}

// makeDocFixtures writes what the placeholders stand for under dir: run
// reports (the kept `make probe` report and report's fixtures), a job
// result and a profile of a tiny training run, decode results, directories
// of reports, a running process.
func makeDocFixtures(t *testing.T, dir string) *docFixtures {
	t.Helper()
	// probe exec --sites preloads its library, which make build puts
	// beside bin/probe: here it is built from its source.
	if lib, err := sites.Build(); err == nil {
		t.Setenv(sites.EnvLib, lib)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	copyTo := func(src, dst string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	// The kept report of this commit's `make probe`, as probe run wrote it.
	kept := filepath.Join(dir, "probe-kept.json")
	{
		f, err := os.Open(keptReport)
		if err != nil {
			t.Fatal(err)
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(z)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kept, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runReport := copyTo("../../report/testdata/run-report.json", filepath.Join(dir, "run-report.json"))
	phasesDoc := copyTo("../../docs/phases.md", filepath.Join(dir, "docs", "phases.md"))
	base := copyTo("../../report/testdata/diff-base.json", filepath.Join(dir, "base.json"))
	head := copyTo("../../report/testdata/diff-same.json", filepath.Join(dir, "head.json"))
	copyTo(base, filepath.Join(dir, "basedir", "r1.json"))
	copyTo(head, filepath.Join(dir, "headdir", "r1.json"))
	copyTo(base, filepath.Join(dir, "history", "a.json"))
	copyTo(head, filepath.Join(dir, "history", "b.json"))
	decBase := copyTo("../../testdata/gpu/h100-2026-11-26/decode-seed.json", filepath.Join(dir, "base-decode.json"))
	decHead := copyTo("../../testdata/gpu/h100-2026-11-26/decode-seed.json", filepath.Join(dir, "head-decode.json"))

	// A job result, a checkpoint and heap profiles of a tiny run.
	result := filepath.Join(dir, "result.json")
	ck := filepath.Join(dir, "ck.bin")
	prof := filepath.Join(dir, "prof")
	if _, stderr, err := runProbe("train", "--preset", "tiny", "--steps", "2", "--data", "synthetic:100KB",
		"--json", result, "--checkpoint", ck, "--profile-dir", prof); err != nil {
		t.Fatalf("making the fixtures: probe train: %v\n%s", err, stderr)
	}
	heap := filepath.Join(prof, "default.heap.pprof")
	if _, err := os.Stat(heap); err != nil {
		ls, _ := filepath.Glob(filepath.Join(prof, "*"))
		t.Fatalf("making the fixtures: no %s (have %v)", heap, ls)
	}
	sub := map[string]string{
		"probe-<commit>.json": kept,
		"REPORT.json":         runReport,
		"docs/phases.md":      phasesDoc,
		"BASE.json":           base,
		"HEAD.json":           head,
		"BASEDIR":             filepath.Dir(filepath.Join(dir, "basedir", "r1.json")),
		"HEADDIR":             filepath.Dir(filepath.Join(dir, "headdir", "r1.json")),
		"DIR":                 filepath.Join(dir, "history"),
		"RESULT.json":         result,
		"DECODE.json":         decBase,
		"base-decode.json":    decBase,
		"head-decode.json":    decHead,
		"CHECKPOINT":          ck,
		"PROFILE":             heap,
		"BASE.pprof":          heap,
		"CMD":                 "sleep",
		"ARGS...":             "0.1",
		"TEXT.txt":            abs("../../testdata/sample.txt"),
		// The documents' paths into the repository, from its root.
		"examples/c-threads.toml": abs("../../examples/c-threads.toml"),
	}
	return &docFixtures{subst: sub}
}

// substitute replaces the placeholders that are whole words, and those
// after "=" in --flag=PLACEHOLDER.
func (fx *docFixtures) substitute(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if v, ok := fx.subst[a]; ok {
			out[i] = v
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
			if s, ok := fx.subst[v]; ok {
				out[i] = k + "=" + s
				continue
			}
		}
		out[i] = a
	}
	return out
}

// allDocCommands are the commands of the README and docs/commands.md.
func allDocCommands(t *testing.T) []docCommand {
	t.Helper()
	cmds := docCommands(t, readmePath)
	if len(cmds) < 5 {
		t.Fatalf("%s shows %d bin/probe commands, want at least 5", readmePath, len(cmds))
	}
	more := docCommands(t, commandsPath)
	if len(more) == 0 {
		t.Fatalf("%s shows no bin/probe commands", commandsPath)
	}
	return append(cmds, more...)
}

// runDocCommand runs one document command in-process, in a fresh working
// directory under dir, and returns its error with its stderr.
func runDocCommand(t *testing.T, fx *docFixtures, c docCommand, dir string, short bool) error {
	args := quickArgs(fx.substitute(c.args), short)
	t.Logf("%s: probe %s", c.where, strings.Join(args, " "))
	if slices.Contains(args, "--plan-file") {
		// The example plans build their program with the C compiler.
		if _, err := exec.LookPath("cc"); err != nil {
			t.Logf("%s: not run: no C compiler (%v)", c.where, err)
			return nil
		}
	}
	// A range BASE..HEAD names commits of the repository this test runs
	// in, whose reports it finds in --reports: give it HEAD's report.
	for i, a := range args {
		if isRange(a) && !strings.HasPrefix(a, "-") {
			sha, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
			if err != nil {
				t.Logf("%s: not run: no git repository here (%v)", c.where, err)
				return nil
			}
			reports := filepath.Join(dir, "reports")
			os.MkdirAll(reports, 0o755)
			b, _ := os.ReadFile(fx.subst["BASE.json"])
			os.WriteFile(filepath.Join(reports, "probe-"+strings.TrimSpace(string(sha))+".json"), b, 0o644)
			args[i] = "HEAD..HEAD"
			args = append(args, "--reports", reports)
			_, stderr, err := runProbe(args...)
			if err != nil {
				return fmt.Errorf("%v\n%s", err, stderr)
			}
			return nil
		}
	}
	wd := filepath.Join(dir, strings.NewReplacer(":", "-", ".", "-").Replace(c.where))
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	switch args[0] {
	case "pprof":
		// It serves until interrupted: check its command line instead,
		// as cobra would before running it, and that its files open.
		root := newRootCmd(io.Discard, io.Discard)
		cmd, rest, err := root.Find(args)
		if err != nil {
			return err
		}
		if err := cmd.ParseFlags(rest); err != nil {
			return err
		}
		pos := cmd.Flags().Args()
		if cmd.Args != nil {
			if err := cmd.Args(cmd, pos); err != nil {
				return err
			}
		}
		for _, p := range pos {
			if _, err := os.Stat(p); err != nil {
				return err
			}
		}
		return nil
	case "attach":
		sleep := exec.Command("sleep", "1")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		defer sleep.Wait()
		for i, a := range args {
			if a == "PID" {
				args[i] = fmt.Sprint(sleep.Process.Pid)
			}
		}
	}
	_, stderr, err := runProbe(args...)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, stderr)
	}
	return nil
}

// TestReadmeCommands runs every `bin/probe` command of the README and
// docs/commands.md (each at its quick scale, placeholders replaced by
// fixtures) and fails naming the one that no longer works. The commands
// that draw run in the viz build (TestReadmeCommandsHTMLAndPlot); here,
// in the lean build, they must be handed to probe-viz with the same
// command line. -short runs probe run as --dry-run.
func TestReadmeCommands(t *testing.T) {
	t.Setenv(mainEnv, "1") // probe run's and decode --runs' children are this binary
	cmds := allDocCommands(t)
	dir := t.TempDir()
	fx := makeDocFixtures(t, dir)
	for _, c := range cmds {
		if vizCommand(c.args) {
			if writeHTML != nil {
				continue // the viz build: TestReadmeCommandsHTMLAndPlot
			}
			args := fx.substitute(c.args)
			if n, err := delegated(args); err != nil || n != 1 {
				t.Errorf("%s: probe %s: %v; handed to probe-viz %d times, want once", c.where, strings.Join(args, " "), err, n)
			}
			continue
		}
		t.Run(strings.ReplaceAll(c.where, "/", "_"), func(t *testing.T) {
			if err := runDocCommand(t, fx, c, dir, testing.Short()); err != nil {
				t.Errorf("%s: probe %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		})
	}
}

// delegated runs args in the lean build with probe-viz's search and exec
// stubbed, and returns how many times it would have run probe-viz.
func delegated(args []string) (int, error) {
	oldFind, oldExec := findViz, execViz
	defer func() { findViz, execViz = oldFind, oldExec }()
	n := 0
	findViz = func() (string, bool) { return "/nonexistent/probe-viz", true }
	execViz = func(string, []string) error { n++; return nil }
	_, _, err := runProbe(args...)
	return n, err
}

// TestReadmeCommandsHTMLAndPlot runs the documents' commands that draw
// (report --html, history --chart, plot; pprof's command line is checked,
// not served) in the viz build: go test -tags viz -run HTML ./cmd/probe,
// as make test does. The lean build skips it.
func TestReadmeCommandsHTMLAndPlot(t *testing.T) {
	if writeHTML == nil {
		t.Skip("the lean build hands these to probe-viz (TestReadmeCommands checks that); go test -tags viz runs them")
	}
	var viz []docCommand
	for _, c := range allDocCommands(t) {
		if vizCommand(c.args) {
			viz = append(viz, c)
		}
	}
	if len(viz) == 0 {
		t.Fatal("the documents show no command that draws")
	}
	dir := t.TempDir()
	fx := makeDocFixtures(t, dir)
	// probe plot --outside needs the parent's timelines, which the
	// fixture reports do not keep: a real run report of two phases.
	t.Setenv(mainEnv, "1")
	rep := filepath.Join(dir, "quick-report.json")
	if _, stderr, err := runProbe("run", "--quick", "--plan", "threads", "--phases", "before,P6", "--out", rep); err != nil {
		t.Fatalf("making the fixtures: probe run: %v\n%s", err, stderr)
	}
	fx.subst["REPORT.json"] = rep
	for _, c := range viz {
		t.Run(strings.ReplaceAll(c.where, "/", "_"), func(t *testing.T) {
			if err := runDocCommand(t, fx, c, dir, testing.Short()); err != nil {
				t.Errorf("%s: probe %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		})
	}
}

// TestArchitecturePackages: the package list of docs/architecture.md (the
// lines "- `memprobe/...`" of its "Package list" section) is the packages
// `go list ./...` lists, in the same order.
func TestArchitecturePackages(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goBin, "list", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	want := strings.Fields(string(out))
	doc, err := os.ReadFile(archPath)
	if err != nil {
		t.Fatal(err)
	}
	got := archPackages(string(doc))
	if !slices.Equal(got, want) {
		var missing, extra []string
		for _, p := range want {
			if !slices.Contains(got, p) {
				missing = append(missing, p)
			}
		}
		for _, p := range got {
			if !slices.Contains(want, p) {
				extra = append(extra, p)
			}
		}
		t.Errorf("%s's package list is not go list ./...'s: missing %q, not a package %q (or out of order)", archPath, missing, extra)
	}
}

// archPackages returns the import paths listed in the "## Package list"
// section: one "- `path`" per line.
func archPackages(doc string) []string {
	_, sec, ok := strings.Cut(doc, "\n## Package list\n")
	if !ok {
		return nil
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var out []string
	for _, l := range strings.Split(sec, "\n") {
		if rest, ok := strings.CutPrefix(l, "- `"); ok {
			if p, _, ok := strings.Cut(rest, "`"); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func readKept(t *testing.T, path string) *schema.Report {
	t.Helper()
	rep, err := schema.ReadReport(path) // gzip-compressed: schema.ReadFile
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

package htmlreport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// verdictScript, added to a copy of the page by the test (the page itself
// has no script), checks once the page has loaded that every chart drew
// (an <svg> with a box and shapes), every table has a box and rows, every
// flame graph's frame a box, and writes its verdict into the DOM, which
// chromium --dump-dom prints.
const verdictScript = `<script>
window.addEventListener("load", function () {
  var bad = [], n = {charts: 0, tables: 0, flames: 0};
  document.querySelectorAll("figure.chart").forEach(function (f, i) {
    var s = f.querySelector("svg"), r = s && s.getBoundingClientRect();
    if (!s || r.width < 100 || r.height < 100 || s.querySelectorAll("path, text").length < 5) bad.push("chart " + i + " (" + f.dataset.kind + ")");
    else n.charts++;
  });
  document.querySelectorAll("table").forEach(function (t, i) {
    var r = t.getBoundingClientRect(), hidden = t.closest("details") && !t.closest("details").open;
    if (t.rows.length < 1 || (!hidden && (r.width <= 0 || r.height <= 0))) bad.push("table " + i);
    else n.tables++;
  });
  document.querySelectorAll("iframe.flame").forEach(function (f, i) {
    var r = f.getBoundingClientRect();
    if (r.width < 100 || r.height < 50) bad.push("flame " + i);
    else n.flames++;
  });
  var v = document.createElement("pre");
  v.id = "verdict";
  v.textContent = (bad.length ? "FAIL " + bad.join(", ") : "OK") + " charts=" + n.charts + " tables=" + n.tables + " flames=" + n.flames;
  document.body.appendChild(v);
});
</script>
`

// chromium finds a Chromium or Chrome binary: $MEMPROBE_CHROMIUM, else the
// usual names on PATH.
func chromium() string {
	if p := os.Getenv("MEMPROBE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowser renders the fixture's page (charts, tables, a flame graph),
// loads it in headless Chromium (no network: a file URL, nothing
// external), checks that every chart, table and flame graph rendered with
// a size, and saves a screenshot in the test's artifact directory (kept
// with go test -artifacts).
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium: install Debian's chromium (apt-get install chromium; .ci/run does) or set MEMPROBE_CHROMIUM to run the browser test")
	}
	dir := t.TempDir()
	rep := fixture(t, dir)
	page := render(t, rep, Options{ReportDir: dir, OutDir: dir, Title: "probe report (browser test)"})
	wantCharts := strings.Count(page, `<figure class="chart"`)
	wantTables := strings.Count(page, "<table")
	wantFlames := strings.Count(page, `<iframe class="flame"`)
	if wantCharts < 4 || wantFlames != 1 {
		t.Fatalf("the page has %d charts and %d flame graphs, want at least 4 and 1", wantCharts, wantFlames)
	}
	checked := filepath.Join(dir, "checked.html")
	if err := os.WriteFile(checked, []byte(strings.Replace(page, "</body>", verdictScript+"</body>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	shown := filepath.Join(dir, "report.html")
	if err := os.WriteFile(shown, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, bin, dir)
	defer b.close()
	verdict := b.verdict(t, checked)
	t.Logf("Chromium: %s", verdict)
	if !strings.HasPrefix(verdict, "OK ") {
		t.Errorf("Chromium: %s", verdict)
	}
	for name, want := range map[string]int{"charts": wantCharts, "tables": wantTables, "flames": wantFlames} {
		if !strings.Contains(verdict, " "+name+"="+strconv.Itoa(want)) {
			t.Errorf("Chromium: %s; the page has %s=%d", verdict, name, want)
		}
	}
	b.screenshot(t, filepath.Join(t.ArtifactDir(), "report.png"), "1400,3000", shown)
}

// browser runs headless Chromium on local pages for the browser tests.
// Chromium itself sometimes dies by a signal on a loaded machine
// ("Zygote could not fork", then SIGSEGV: seen once in CI on a 2-core
// machine, after the page had passed): that is the browser's failure,
// not the page's, so a run killed by a signal is tried once more, and
// a second crash skips the test, saying so, rather than failing it. An
// exit status of the browser's own, or a verdict that is not OK, fails.
type browser struct {
	bin, dir string
	ctx      context.Context
	cancel   context.CancelFunc
}

func newBrowser(t *testing.T, bin, dir string) *browser {
	// A guard against a browser that hangs, not a timed assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	return &browser{bin: bin, dir: dir, ctx: ctx, cancel: cancel}
}

func (b *browser) close() { b.cancel() }

// run runs Chromium with args and returns its stdout, or, when it was
// killed by a signal twice, why (crash); any other failure fails the test.
func (b *browser) run(t *testing.T, args ...string) (out []byte, crash string) {
	t.Helper()
	args = append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--disable-background-networking", "--hide-scrollbars",
		"--user-data-dir=" + filepath.Join(b.dir, "chromium-profile")}, args...)
	for try := 1; ; try++ {
		cmd := exec.CommandContext(b.ctx, b.bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil {
			return out, ""
		}
		ee, isExit := errors.AsType[*exec.ExitError](err)
		crashed := isExit && !ee.ProcessState.Exited() && b.ctx.Err() == nil // a signal, not our timeout's kill
		switch {
		case crashed && try == 1:
			t.Logf("%s crashed (%v); trying once more", b.bin, err)
			continue
		case crashed:
			return nil, fmt.Sprintf("%s crashed twice (%v), the browser's failure, not the page's:\n%s", b.bin, err, stderr.String())
		}
		t.Fatalf("%s %s: %v\n%s", b.bin, strings.Join(args, " "), err, stderr.String())
	}
}

// TestBrowserCrash: a browser killed by a signal is tried again, then
// reported as a crash (which skips the browser tests), not as the page's
// failure.
func TestBrowserCrash(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "chromium")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho run >> "+filepath.Join(dir, "runs")+"\nkill -SEGV $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, bin, dir)
	defer b.close()
	_, crash := b.run(t, "--dump-dom", "file:///nonexistent.html")
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if !strings.Contains(crash, "crashed twice") || strings.Count(string(runs), "run") != 2 {
		t.Errorf("crash %q after %d runs, want a crash after 2", crash, strings.Count(string(runs), "run"))
	}
}

// verdict loads page (with verdictScript in it) and returns what the
// script wrote; it skips the test when Chromium crashed twice.
func (b *browser) verdict(t *testing.T, page string) string {
	t.Helper()
	dom, crash := b.run(t, "--virtual-time-budget=10000", "--dump-dom", "file://"+page)
	if crash != "" {
		t.Skip(crash)
	}
	m := regexp.MustCompile(`<pre id="verdict">([^<]*)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no verdict in the page Chromium loaded (did the script run?); DOM ends:\n%s", dom[max(0, len(dom)-2000):])
	}
	return string(m[1])
}

// screenshot saves page as a PNG at shot (an artifact, kept with go test
// -artifacts). The page has passed by then: a crash here is logged, not
// a failure.
func (b *browser) screenshot(t *testing.T, shot, size, page string) {
	t.Helper()
	if _, crash := b.run(t, "--window-size="+size, "--screenshot="+shot, "file://"+page); crash != "" {
		t.Logf("no screenshot: %s", crash)
		return
	}
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, fi.Size())
}

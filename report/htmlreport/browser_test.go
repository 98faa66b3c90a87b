package htmlreport

import (
	"context"
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
	// A guard against a browser that hangs, not a timed assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browse := func(args ...string) []byte {
		t.Helper()
		args = append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
			"--no-first-run", "--disable-extensions", "--disable-background-networking", "--hide-scrollbars",
			"--user-data-dir=" + filepath.Join(dir, "chromium-profile")}, args...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	dom := browse("--virtual-time-budget=10000", "--dump-dom", "file://"+checked)
	m := regexp.MustCompile(`<pre id="verdict">([^<]*)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no verdict in the page Chromium loaded (did the script run?); DOM ends:\n%s", dom[max(0, len(dom)-2000):])
	}
	verdict := string(m[1])
	t.Logf("Chromium: %s", verdict)
	if !strings.HasPrefix(verdict, "OK ") {
		t.Errorf("Chromium: %s", verdict)
	}
	for name, want := range map[string]int{"charts": wantCharts, "tables": wantTables, "flames": wantFlames} {
		if !strings.Contains(verdict, " "+name+"="+strconv.Itoa(want)) {
			t.Errorf("Chromium: %s; the page has %s=%d", verdict, name, want)
		}
	}
	shot := filepath.Join(t.ArtifactDir(), "report.png")
	browse("--window-size=1400,3000", "--screenshot="+shot, "file://"+shown)
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, fi.Size())
}

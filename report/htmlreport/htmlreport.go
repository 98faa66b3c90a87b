// Package htmlreport renders a run report (`probe run`, a schema.Report)
// as one self-contained HTML page (`probe report --html`): no network, no
// external script, font or style. It is a stage after package report:
//
//  1. the tables are report's own (HeadBlocks, PlanBlocks: the blocks
//     that WriteRunTables and WritePlanTables render), laid out from
//     internal/table's formatted cells, so the page shows the figures,
//     verdicts and footnotes of `probe report`, plan by plan;
//  2. each plan gets charts drawn with gonum.org/v1/plot as SVG (vgsvg)
//     and inlined: the RSS timelines of its first and last phase on one
//     chart (report/memplot), the ledger against the analytical model as
//     bars, the resident set at its peak in named parts as stacked bars,
//     and its sweeps with each phase's least-squares line; bytes tick at
//     binary steps, the text is the page's font (Liberation Sans or its
//     metric twins Arial and Helvetica, the face gonum measures with);
//  3. the heaviest phases (largest median peak RSS) that wrote profiles
//     (`probe run --profile-dir`) get flame graphs (report/flame) of their
//     heap profile at the live-heap peak, each an SVG document in a
//     sandboxed iframe; every profile is listed and linked;
//  4. the environment the report records closes the page.
//
// Every string from a report goes through html/template. Profile paths are
// read and linked only under the report's directory (package profiles);
// ".." or an absolute path elsewhere is a note on the page, never a read.
//
// gonum/plot parses its fonts at start-up (about 12 MiB resident), so the
// command links this package only in `-tags viz` builds (bin/probe-viz);
// HistoryChart draws `probe history --chart` with the same library, and
// BuildDecode a decode result's page with the same template (decode.go).
package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"memprobe/internal/atomicfile"
	"memprobe/schema"
)

// Options are Write's choices.
type Options struct {
	// ReportDir is the report's directory: profiles are read and linked
	// only under it ("" is the current directory).
	ReportDir string
	// OutDir is the page's directory, to which profile links are relative;
	// "" links none.
	OutDir string
	// Flames is how many of the heaviest phases get a flame graph; 0 is
	// DefaultFlames, a negative number none.
	Flames int
	// Title heads the page (default: "probe report").
	Title string
}

// DefaultFlames is the number of flame graphs when Options.Flames is 0.
const DefaultFlames = 3

// Page is what the template renders.
type Page struct {
	Title       string
	Head        []Block
	Plans       []PlanSection
	Flames      []Flame
	FlameNotes  []string
	Profiles    []ProfileLink
	Environment [][2]string
	// NoFlames leaves out the flame graphs' section and its link: a
	// decode result's page (BuildDecode), which has no profiles to draw.
	NoFlames bool
}

// PlanSection is one plan's tables and charts.
type PlanSection struct {
	Name, ID string
	Blocks   []Block
	Charts   []*Chart
	Notes    []string // charts not drawn, and why
}

//go:embed page.html.tmpl
var pageTemplate string

var tmpl = template.Must(template.New("page").Parse(pageTemplate))

// Build computes the page of rep without writing it.
func Build(rep *schema.Report, o Options) (*Page, error) {
	if o.ReportDir == "" {
		o.ReportDir = "."
	}
	pg := &Page{Title: o.Title}
	if pg.Title == "" {
		pg.Title = "probe report"
	}
	var err error
	if pg.Head, err = headBlocks(rep); err != nil {
		return nil, err
	}
	for k, p := range groupPlans(rep) {
		name := p.name
		sec := PlanSection{Name: planTitle(name), ID: fmt.Sprintf("plan-%d", k+1)}
		if sec.Blocks, err = planBlocks(rep, name); err != nil {
			return nil, err
		}
		add := func(c *Chart, note string) {
			if c != nil {
				sec.Charts = append(sec.Charts, c)
			} else if note != "" {
				sec.Notes = append(sec.Notes, note)
			}
		}
		add(timelineChart(p))
		add(ledgerChart(p))
		add(reconcileChart(p))
		for _, axis := range sweepAxes(p) {
			add(sweepChart(p, axis))
		}
		pg.Plans = append(pg.Plans, sec)
	}
	n := o.Flames
	if n == 0 {
		n = DefaultFlames
	}
	if n > 0 {
		pg.Flames, pg.FlameNotes = heaviest(rep, o, n)
	}
	pg.Profiles = profileLinks(rep, o)
	pg.Environment = environment(rep.Environment)
	return pg, nil
}

// Write renders rep's page to w.
func Write(w io.Writer, rep *schema.Report, o Options) error {
	pg, err := Build(rep, o)
	if err != nil {
		return err
	}
	return renderPage(w, pg)
}

// renderPage executes the page template for pg into w, whole or not at all.
func renderPage(w io.Writer, pg *Page) error {
	var b bytes.Buffer
	if err := tmpl.Execute(&b, pg); err != nil {
		return fmt.Errorf("rendering HTML: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteFile renders rep's page into path, atomically.
func WriteFile(path string, rep *schema.Report, o Options) error {
	var b bytes.Buffer
	if err := Write(&b, rep, o); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}

// environment lists the environment's fields by JSON name (nested ones
// dotted), empty ones left out, in name order.
func environment(e schema.Environment) [][2]string {
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var out [][2]string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				if prefix != "" {
					k = prefix + "." + k
				}
				walk(k, y)
			}
		case nil:
		case string:
			if x != "" {
				out = append(out, [2]string{prefix, x})
			}
		case []any:
			var parts []string
			for _, y := range x {
				c, _ := json.Marshal(y)
				parts = append(parts, strings.Trim(string(c), `"`))
			}
			if len(parts) > 0 {
				out = append(out, [2]string{prefix, strings.Join(parts, ", ")})
			}
		default:
			c, _ := json.Marshal(x)
			out = append(out, [2]string{prefix, string(c)})
		}
	}
	walk("", m)
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

package htmlreport

import (
	"bytes"
	"cmp"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/google/pprof/profile"

	"memprobe/internal/table"
	"memprobe/report/flame"
	"memprobe/report/htmlreport/profiles"
	"memprobe/schema"
)

// Flame is the flame graph of one heavy phase's profile, drawn by
// report/flame: an SVG document of its own (its zoom script queries its
// own document), shown in a sandboxed iframe.
type Flame struct {
	Run        string
	Repetition int
	Kind       string
	Path       string // as recorded
	Href       string // the profile relative to the page, "" when not linked
	PeakRSS    string // the run's median peak RSS
	Doc        string // the SVG document
	Height     int    // the frame's height in pixels: the SVG's, at most maxFlameHeight
}

// maxFlameHeight caps a flame graph's frame on the page: a deep graph
// (a Python program's native frames: 1,800 px) scrolls inside it, its
// root at the top, in view as the page opens.
const maxFlameHeight = 640

// ProfileLink is one profile of the report, for the page's list.
type ProfileLink struct {
	profiles.Ref
	Href string // relative to the page; "" when not linked
	Note string // why not linked
}

// profileKinds are the profiles a flame graph prefers, best first: the
// heap at its live-heap peak (memray's peak view: what held the memory
// when it was highest), the heap at the end, the allocations, the CPU.
var profileKinds = []string{"heap-peak", "heap", "allocs", "cpu"}

// samples is the sample type each kind is drawn by.
var samples = map[string]string{"heap-peak": "inuse_space", "heap": "inuse_space", "allocs": "alloc_space"}

// pickProfile chooses res's profile for a flame graph: by profileKinds,
// among heap-peak profiles the one of the largest live heap.
func pickProfile(res *schema.Result) (kind, path string, ok bool) {
	if res.Profiles == nil {
		return "", "", false
	}
	for _, k := range profileKinds {
		var best *int
		for i, f := range res.Profiles.Files {
			if f.Kind == k && (best == nil || f.HeapLiveBytes > res.Profiles.Files[*best].HeapLiveBytes) {
				best = &i
			}
		}
		if best != nil {
			return k, res.Profiles.Files[*best].Path, true
		}
	}
	return "", "", false
}

// heaviest draws the flame graphs of the n finished runs of the largest
// median peak RSS that have a profile (the representative repetition's, or
// else the first repetition with one). A profile that cannot be read (out
// of the report's directory, missing, not a profile) is a note instead.
func heaviest(rep *schema.Report, o Options, n int) ([]Flame, []string) {
	var cands []*schema.Run
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if ok(r) && slices.ContainsFunc(r.Repetitions, func(x schema.Result) bool { _, _, ok := pickProfile(&x); return ok }) {
			cands = append(cands, r)
		}
	}
	slices.SortStableFunc(cands, func(a, b *schema.Run) int { return cmp.Compare(peakMedian(b), peakMedian(a)) })
	var out []Flame
	var notes []string
	for _, r := range cands[:min(n, len(cands))] {
		k := repIndex(r)
		if _, _, ok := pickProfile(&r.Repetitions[k]); !ok {
			k = slices.IndexFunc(r.Repetitions, func(x schema.Result) bool { _, _, ok := pickProfile(&x); return ok })
		}
		res := &r.Repetitions[k]
		kind, path, _ := pickProfile(res)
		f := Flame{Run: r.Name, Repetition: k + 1, Kind: kind, Path: path, PeakRSS: table.FormatBytes(peakMedian(r))}
		doc, h, err := drawFlame(o.ReportDir, path, kind, fmt.Sprintf("%s rep %d, %s", r.Name, k+1, kind))
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: no flame graph: %v", r.Name, err))
			continue
		}
		f.Doc, f.Height = doc, min(h, maxFlameHeight)
		f.Href, _ = link(o, path)
		out = append(out, f)
	}
	return out, notes
}

var svgHeight = regexp.MustCompile(`<svg[^>]* height="(\d+)"`)

// drawFlame reads the profile at path under dir and draws it.
func drawFlame(dir, path, kind, title string) (string, int, error) {
	f, err := profiles.Open(dir, path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return "", 0, fmt.Errorf("parsing profile %s: %w", path, err)
	}
	i, err := flame.SampleIndex(p, samples[kind])
	if err != nil {
		if i, err = flame.SampleIndex(p, ""); err != nil {
			return "", 0, fmt.Errorf("profile %s: %w", path, err)
		}
	}
	g, err := flame.Build(p, i)
	if err != nil {
		return "", 0, fmt.Errorf("profile %s: %w", path, err)
	}
	var b bytes.Buffer
	if err := flame.WriteSVG(&b, g, flame.Options{Title: title}); err != nil {
		return "", 0, err
	}
	h := 400
	if m := svgHeight.FindSubmatch(b.Bytes()); m != nil {
		h, _ = strconv.Atoi(string(m[1]))
	}
	return b.String(), h, nil
}

// link is the profile's URL relative to the page (o.OutDir), or "" and
// why not: a path out of the report's directory is never linked.
func link(o Options, path string) (string, string) {
	rel, err := profiles.Resolve(o.ReportDir, path)
	if err != nil {
		return "", "outside the report's directory: not linked"
	}
	if o.OutDir == "" {
		return "", ""
	}
	absReport, err1 := filepath.Abs(o.ReportDir)
	absOut, err2 := filepath.Abs(o.OutDir)
	if err1 != nil || err2 != nil {
		return "", ""
	}
	r, err := filepath.Rel(absOut, filepath.Join(absReport, rel))
	if err != nil {
		return "", ""
	}
	return (&url.URL{Path: filepath.ToSlash(r)}).String(), ""
}

// profileLinks lists every profile of the report with its link.
func profileLinks(rep *schema.Report, o Options) []ProfileLink {
	var out []ProfileLink
	for _, r := range profiles.List(rep) {
		href, note := link(o, r.Path)
		out = append(out, ProfileLink{Ref: r, Href: href, Note: note})
	}
	return out
}

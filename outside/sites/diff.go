package sites

import (
	"fmt"
	"math"
	"sort"

	"github.com/google/pprof/profile"

	"memprobe/schema"
)

// Change is a site whose bytes differ between two --sites results in one
// profile kind.
type Change struct {
	Kind string // schema.SitesAlloc, SitesPeak or SitesExit
	// Site is the site's function (the first frame that is not the
	// allocator's), as the profiles name it.
	Site                 string
	BaseBytes, HeadBytes int64
	// Pct is the change against the base, +Inf for a new site.
	Pct float64
}

// Compare reads the profiles of two --sites results and lists the sites
// that changed, largest change first. Where both were recorded at rate 1
// the figures are exact and any change is one; otherwise a change is one
// past 20 % and past twice the larger rate in bytes (the sampling error of
// a site of a few samples is that large). A profile that cannot be read
// is an error naming it.
func Compare(base, head *schema.Sites) ([]Change, error) {
	exact := base.Exact && head.Exact
	floor := 2 * float64(max(base.RateBytes, head.RateBytes))
	var out []Change
	for _, kind := range []string{schema.SitesAlloc, schema.SitesPeak, schema.SitesExit} {
		b, err := profileSites(base, kind)
		if err != nil {
			return nil, err
		}
		h, err := profileSites(head, kind)
		if err != nil {
			return nil, err
		}
		names := map[string]bool{}
		for n := range b {
			names[n] = true
		}
		for n := range h {
			names[n] = true
		}
		for n := range names {
			bv, hv := b[n], h[n]
			if bv == hv {
				continue
			}
			d := math.Abs(float64(hv - bv))
			pct := math.Inf(1)
			if bv != 0 {
				pct = 100 * float64(hv-bv) / float64(bv)
			}
			if !exact && (d <= floor || math.Abs(pct) <= 20) {
				continue
			}
			out = append(out, Change{Kind: kind, Site: n, BaseBytes: bv, HeadBytes: hv, Pct: pct})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := abs64(out[i].HeadBytes-out[i].BaseBytes), abs64(out[j].HeadBytes-out[j].BaseBytes)
		if di != dj {
			return di > dj
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Site < out[j].Site
	})
	return out, nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// profileSites sums a profile's bytes (its second value) by site.
func profileSites(s *schema.Sites, kind string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, pf := range s.Profiles {
		if pf.Kind != kind {
			continue
		}
		p, err := readProfile(pf.Path)
		if err != nil {
			return nil, fmt.Errorf("reading the %s profile %s: %w", kind, pf.Path, err)
		}
		for _, smp := range p.Sample {
			if len(smp.Value) < 2 {
				continue
			}
			out[profileSite(smp)] += smp.Value[1]
		}
		return out, nil
	}
	return out, nil
}

// profileSite is the first frame of a sample that is not the
// allocator's: operator new, the C and C++ libraries.
func profileSite(smp *profile.Sample) string {
	first := ""
	for _, l := range smp.Location {
		for _, ln := range l.Line {
			fn := ""
			if ln.Function != nil {
				fn = ln.Function.Name
			}
			if first == "" {
				first = fn
			}
			f := frame{fn: fn}
			if l.Mapping != nil {
				f.obj = l.Mapping.File
			}
			if !allocatorFrame(f) {
				return fn
			}
		}
	}
	if first == "" {
		return "(no stack)"
	}
	return first
}

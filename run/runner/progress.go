package runner

import (
	"fmt"
	"io"
	"time"
)

// progress writes where the run is: on a terminal one line rewritten in
// place, otherwise a plain line per child. Notes (a failure, a skipped
// configuration) are lines of their own in both.
type progress struct {
	w     io.Writer
	term  bool
	n     int // configurations
	count int
	began time.Time
	// estLeft is the estimate of the children not yet finished, estDone
	// of those finished: the elapsed time over estDone calibrates what is
	// left.
	estLeft, estDone float64
	line             bool // a terminal line is showing
}

func newProgress(w io.Writer, term bool, cs []Config, count int) *progress {
	p := &progress{w: w, term: term, n: len(cs), count: count, began: time.Now()}
	for _, c := range cs {
		p.estLeft += float64(count) * c.Prediction.Seconds
	}
	return p
}

func (p *progress) start(i int, c Config, rep int) {
	elapsed := time.Since(p.began)
	left := p.estLeft
	if p.estDone > 0 {
		left *= elapsed.Seconds() / p.estDone
	}
	s := fmt.Sprintf("run %d/%d %s rep %d/%d: %s elapsed, about %s left",
		i+1, p.n, c.Name, rep, p.count, round(elapsed), round(time.Duration(left*float64(time.Second))))
	if p.term {
		fmt.Fprintf(p.w, "\r\x1b[K%s", s)
		p.line = true
		return
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) finish(c Config) {
	p.estLeft -= c.Prediction.Seconds
	p.estDone += c.Prediction.Seconds
}

// skip and skipRest take a configuration's repetitions that will not run
// out of the estimate.
func (p *progress) skip(c Config) { p.skipRest(c, p.count) }

func (p *progress) skipRest(c Config, reps int) {
	p.estLeft -= float64(reps) * c.Prediction.Seconds
}

func (p *progress) note(s string) {
	if p.line {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.line = false
	}
	fmt.Fprintln(p.w, s)
}

// done ends the progress: ran configurations of p.n, in how long.
func (p *progress) done(ran int) {
	if p.line {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.line = false
	}
	if ran < p.n {
		fmt.Fprintf(p.w, "%d of %d configurations in %s\n", ran, p.n, round(time.Since(p.began)))
		return
	}
	fmt.Fprintf(p.w, "%d configurations in %s\n", p.n, round(time.Since(p.began)))
}

func round(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d.Round(time.Second)
}

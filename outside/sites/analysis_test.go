package sites

import (
	"strings"
	"testing"
)

// TestAnalysisEnded: how an image ended, by its end record; an image
// with none is "unflushed", with a warning naming it.
func TestAnalysisEnded(t *testing.T) {
	for _, tc := range []struct {
		im   image
		want string
	}{
		{image{ended: true, endHow: 0}, "exit"},
		{image{ended: true, endHow: 1}, "execve"},
		{image{ended: true, endHow: 2}, "signal"},
		{image{pid: 42, n: 1}, "unflushed"},
	} {
		a := &analysis{}
		if got := a.ended(&tc.im, false); got != tc.want || (len(a.warns) > 0) != (tc.want == "unflushed") {
			t.Errorf("%+v: %q, warnings %q; want %q", tc.im, got, a.warns, tc.want)
		}
		if tc.want == "unflushed" && !strings.Contains(a.warns[0], "pid 42 (image 1)") {
			t.Errorf("warning %q does not name the image", a.warns[0])
		}
	}
}

// TestAccAdd: a site's figures are its stacks' summed, mapped where any
// stack mapped.
func TestAccAdd(t *testing.T) {
	var s acc
	s.add(&acc{allocObj: 1, allocBytes: 10, peakObj: 2, peakBytes: 20, exitObj: 3, exitBytes: 30, tempObj: 4, allocVar: 5, peakVar: 6, exitVar: 7})
	s.add(&acc{allocObj: 1, allocBytes: 10, peakObj: 2, peakBytes: 20, exitObj: 3, exitBytes: 30, tempObj: 4, allocVar: 5, peakVar: 6, exitVar: 7, mapped: true})
	want := acc{allocObj: 2, allocBytes: 20, peakObj: 4, peakBytes: 40, exitObj: 6, exitBytes: 60, tempObj: 8, allocVar: 10, peakVar: 12, exitVar: 14, mapped: true}
	if s != want {
		t.Errorf("sum %+v, want %+v", s, want)
	}
}

package flame

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"memprobe/internal/symname"
	"memprobe/internal/table"
)

// Layout of the SVG, in pixels. The root is drawn at the top (an icicle
// graph), so that the picture opens on it whatever its depth; children
// hang below their parent, left to right in name order.
const (
	// Width is the width of the root frame.
	Width  = 1200
	Pad    = 10
	RowH   = 16
	header = 56
	footer = 10
	// MinWidth: frames narrower than this are not drawn (nor are their
	// descendants), as in flamegraph.pl, to keep the file small.
	MinWidth = 0.1
	charW    = 6.6 // of 11 px monospace
)

// Options are WriteSVG's choices.
type Options struct {
	// Title heads the picture (e.g. the profile's file name).
	Title string
}

// WriteSVG draws g as a self-contained SVG: every frame a group with a
// <title> (the tooltip: function, value, share; in a differential graph
// both values and the change), a rect and a label; an inline script zooms
// on click. No external resources.
func WriteSVG(w io.Writer, g *Graph, o Options) error {
	bw := bufio.NewWriter(w)
	total := g.Root.Value
	depth := maxDepth(g.Root, 0, total)
	height := header + (depth+1)*RowH + footer
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="11">
<style>g.f:hover rect{stroke:#000;stroke-width:0.5} g.f{cursor:pointer} text{pointer-events:none}</style>
<rect id="bg" x="0" y="0" width="%d" height="%d" fill="#ffffff"/>
`, Width+2*Pad, height, Width+2*Pad, height, Width+2*Pad, height)
	kind := g.SampleType + " flame graph"
	if g.Diff {
		kind = g.SampleType + " differential flame graph"
	}
	title := kind
	if o.Title != "" {
		title = o.Title + ": " + kind
	}
	fmt.Fprintf(bw, "<text x=\"%d\" y=\"18\" font-size=\"14\">%s</text>\n", Pad, esc(title))
	var sub string
	if g.Diff {
		sub = fmt.Sprintf("head %s, base %s. Width: head's value; red grew, blue shrank against base. Root at the top.",
			format(total, g.Unit), format(g.BaseTotal, g.Unit))
	} else {
		sub = fmt.Sprintf("total %s. Width: share of the total; colour: package. Root at the top.", format(total, g.Unit))
	}
	if g.Skipped > 0 {
		sub += fmt.Sprintf(" %d samples without a positive value left out.", g.Skipped)
	}
	fmt.Fprintf(bw, "<text x=\"%d\" y=\"34\">%s</text>\n", Pad, esc(sub))
	fmt.Fprintf(bw, "<text x=\"%d\" y=\"48\" fill=\"#555\">Hover: frame, value and share. Click: zoom into a frame; click the background to reset.</text>\n", Pad)
	if total > 0 {
		drawNode(bw, g, g.Root, 0, 0, total)
	}
	bw.WriteString(script)
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// maxDepth is the depth of the deepest frame wide enough to draw.
func maxDepth(n *Node, d int, total int64) int {
	m := d
	for _, c := range n.Children {
		if frameWidth(c.Value, total) >= MinWidth {
			m = max(m, maxDepth(c, d+1, total))
		}
	}
	return m
}

func frameWidth(v, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(v) / float64(total) * Width
}

// drawNode draws n, which starts at offset (in value units from the left
// of the root) at depth d, and its children.
func drawNode(w *bufio.Writer, g *Graph, n *Node, d int, offset, total int64) {
	fx := float64(offset) / float64(total)
	fw := float64(n.Value) / float64(total)
	x := Pad + fx*Width
	width := fw * Width
	y := header + d*RowH
	tip := fmt.Sprintf("%s\n%s (%s of the total)", n.Name, format(n.Value, g.Unit), pct(n.Value, total))
	if g.Diff {
		tip = fmt.Sprintf("%s\nhead %s, base %s, change %s (%s)", n.Name, format(n.Value, g.Unit), format(n.Base, g.Unit),
			signed(n.Value-n.Base, g.Unit), change(n.Base, n.Value))
	}
	forms := ShortNames(n.Name)
	for i, f := range forms {
		forms[i] = esc(f)
	}
	// data-l: the label's forms, one a line, for the zoom script.
	fmt.Fprintf(w, "<g class=\"f\" data-x=\"%s\" data-w=\"%s\" data-d=\"%d\" data-l=\"%s\"><title>%s</title>", num(fx), num(fw), d,
		strings.Join(forms, "&#10;"), esc(tip))
	fmt.Fprintf(w, "<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" rx=\"2\" fill=\"%s\"/>", px(x), y, px(width), RowH-1, colour(g, n))
	fmt.Fprintf(w, "<text x=\"%s\" y=\"%d\">%s</text></g>\n", px(x+3), y+RowH-4, esc(label(n.Name, width)))
	for _, c := range n.Children {
		if frameWidth(c.Value, total) >= MinWidth {
			drawNode(w, g, c, d+1, offset, total)
		}
		offset += c.Value
	}
}

// label is the longest of name's shorter forms (ShortNames) that fits
// width pixels; when none does, the shortest, cut from the left to keep
// the end of the function's name that tells it apart ("..Forward",
// "..alloc", never "..ong)"); "" when not even 3 characters fit. The
// script's lab does the same when zooming, from the forms in data-l.
func label(name string, width float64) string {
	fit := int((width - 6) / charW)
	if fit < 3 {
		return ""
	}
	forms := ShortNames(name)
	for _, f := range forms {
		if utf8.RuneCountInString(f) <= fit {
			return f
		}
	}
	r := []rune(forms[len(forms)-1])
	return ".." + string(r[len(r)-(fit-2):])
}

// ShortNames are the forms a frame's label takes as its frame narrows,
// longest first, as pprof shortens names: the full name
// ("memprobe/trainer/model.(*Model).Forward"), without the package's
// directory ("model.(*Model).Forward"), without the package
// ("(*Model).Forward"). A C++ name is shortened by report/symname
// ("std::vector<…>::_M_realloc_insert<…>", its full name only in the
// tooltip), then keeps its class and method
// ("vector<…>::_M_realloc_insert<…>"), then its method. A name without a
// package path or scope has one form.
func ShortNames(name string) []string {
	forms := []string{name}
	if s := symname.Short(name); s != name {
		// The full name is in the tooltip; the label starts shortened.
		forms = []string{s}
		if parts := strings.Split(s, "::"); len(parts) > 2 {
			forms = append(forms, strings.Join(parts[len(parts)-2:], "::"))
		}
		if parts := strings.Split(s, "::"); len(parts) > 1 {
			forms = append(forms, parts[len(parts)-1])
		}
		return forms
	}
	pkg := Package(name)
	if pkg == name {
		return forms
	}
	rest := name[len(pkg)+1:]
	if k := strings.LastIndexByte(pkg, '/'); k >= 0 {
		forms = append(forms, pkg[k+1:]+"."+rest)
	}
	return append(forms, rest)
}

// colour is a deterministic colour per package, or, in a differential
// graph, red for growth and blue for shrinkage, deeper the larger the
// change relative to the larger of the two values (by its square root, so
// that a 10 % change is visible).
func colour(g *Graph, n *Node) string {
	if g.Diff {
		big := max(n.Value, n.Base)
		r := 0.0
		if big > 0 {
			r = float64(n.Value-n.Base) / float64(big)
		}
		to := [3]float64{215, 48, 39} // red
		if r < 0 {
			to, r = [3]float64{49, 104, 200}, -r // blue
		}
		r = math.Sqrt(r)
		from := [3]float64{235, 235, 235}
		var c [3]float64
		for i := range c {
			c[i] = from[i] + (to[i]-from[i])*r
		}
		return rgb(c[0], c[1], c[2])
	}
	h := fnv.New32a()
	h.Write([]byte(Package(n.Name)))
	s := h.Sum32()
	hue := float64(s % 360)
	sat := 0.55 + float64(s/360%20)/100
	light := 0.62 + float64(s/7200%12)/100
	return hsl(hue, sat, light)
}

func hsl(h, s, l float64) string {
	c := (1 - math.Abs(2*l-1)) * s
	hp := h / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r, g, b float64
	switch {
	case hp < 1:
		r, g = c, x
	case hp < 2:
		r, g = x, c
	case hp < 3:
		g, b = c, x
	case hp < 4:
		g, b = x, c
	case hp < 5:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	return rgb((r+m)*255, (g+m)*255, (b+m)*255)
}

func rgb(r, g, b float64) string {
	return fmt.Sprintf("#%02x%02x%02x", uint8(math.Round(r)), uint8(math.Round(g)), uint8(math.Round(b)))
}

func esc(s string) string { return html.EscapeString(s) }

func num(f float64) string { return strconv.FormatFloat(f, 'g', 8, 64) }

func px(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func pct(v, total int64) string {
	if total == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(100*float64(v)/float64(total), 'f', 2, 64) + "%"
}

// change is the relative change from base to head.
func change(base, head int64) string {
	switch {
	case base == 0 && head == 0:
		return "unchanged"
	case base == 0:
		return "new"
	}
	return strconv.FormatFloat(100*float64(head-base)/float64(base), 'f', 1, 64) + "%"
}

func signed(v int64, unit string) string {
	if v > 0 {
		return "+" + format(v, unit)
	}
	return format(v, unit)
}

// format writes a value in its unit: bytes in IEC units, nanoseconds as a
// duration, anything else as a number and the unit.
func format(v int64, unit string) string {
	switch unit {
	case "bytes":
		return table.FormatBytes(float64(v))
	case "nanoseconds":
		return table.FormatDuration(float64(v))
	case "count", "":
		return strconv.FormatInt(v, 10)
	}
	return strconv.FormatInt(v, 10) + " " + unit
}

// script zooms: a click on a frame makes it the full width, its
// descendants scaled, its ancestors kept full width, the rest hidden; a
// click on the background resets.
const script = `<script type="text/ecmascript"><![CDATA[
(function(){
var W=1200,P=10,C=6.6,fr=document.querySelectorAll("g.f");
function lab(f,w){var k=Math.floor((w-6)/C);if(k<3)return "";for(var i=0;i<f.length;i++){if(Array.from(f[i]).length<=k)return f[i];}var l=Array.from(f[f.length-1]);return ".."+l.slice(l.length-(k-2)).join("");}
function zoom(x,w,d){for(var i=0;i<fr.length;i++){var f=fr[i],fx=+f.getAttribute("data-x"),fw=+f.getAttribute("data-w"),fd=+f.getAttribute("data-d"),e=1e-9,nx,nw;
if(fd<d){if(fx>x+e||fx+fw<x+w-e){f.style.display="none";continue;}nx=0;nw=1;}
else{if(fx<x-e||fx+fw>x+w+e){f.style.display="none";continue;}nx=(fx-x)/w;nw=fw/w;}
f.style.display="";var r=f.querySelector("rect"),t=f.querySelector("text"),n=f.getAttribute("data-l").split("\n");
r.setAttribute("x",(P+nx*W).toFixed(2));r.setAttribute("width",(nw*W).toFixed(2));t.setAttribute("x",(P+nx*W+3).toFixed(2));t.textContent=lab(n,nw*W);}}
for(var i=0;i<fr.length;i++){fr[i].addEventListener("click",function(ev){ev.stopPropagation();zoom(+this.getAttribute("data-x"),+this.getAttribute("data-w"),+this.getAttribute("data-d"));});}
document.getElementById("bg").addEventListener("click",function(){zoom(0,1,0);});
})();
]]></script>
`

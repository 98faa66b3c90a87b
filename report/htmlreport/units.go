package htmlreport

import "memprobe/metric"

// metricAxis is how a chart names a metric's axis and ticks it, read
// through the registry as report's tables read them: its label
// (metric.Def.Title) and whether its unit is bytes (binary ticks). A name
// the registry does not have is its own label, ticked as a count.
func metricAxis(name string) (label string, bytes bool) {
	d, err := metric.Lookup(name)
	if err != nil {
		return name, false
	}
	return d.Title(), d.Unit == metric.Bytes || d.Unit == metric.BytesPerStep
}

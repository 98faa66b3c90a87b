//go:build viz

package main

import (
	"path/filepath"

	"memprobe/report"
	"memprobe/report/htmlreport"
	"memprobe/schema"
)

// The viz build draws itself (viz.go).
func init() {
	writeHTML = func(out, reportPath string, rep *schema.Report) error {
		return htmlreport.WriteFile(out, rep, htmlreport.Options{
			ReportDir: filepath.Dir(reportPath),
			OutDir:    filepath.Dir(out),
			Title:     "probe report " + filepath.Base(reportPath),
		})
	}
	writeDecodeHTML = func(out, path string, recs []schema.DecodeRecord) error {
		return htmlreport.WriteDecodeFile(out, recs, htmlreport.Options{Title: "probe report " + filepath.Base(path)})
	}
	writeHistoryChart = func(out string, entries []report.HistoryEntry, metric, plan string) error {
		return htmlreport.SaveHistoryChart(out, entries, metric, plan)
	}
}

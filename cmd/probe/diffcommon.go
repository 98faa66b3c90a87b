package main

import (
	"fmt"
	"strings"

	"memprobe/report"
)

// nothingInCommon refuses a diff whose two sides share no configuration
// (a run report against a probe exec result, two plans, two programs):
// its table would be "only in base" and "only in head" and its exit
// status 0, which reads as "no change". The error names both inputs, what
// each is and what each holds. basePath and headPath are the arguments
// (headPath "" for a git range, whose reports d names).
func nothingInCommon(d *report.Diff, basePath, headPath string) error {
	if len(d.Configs) > 0 {
		return nil
	}
	side := func(path, name string, keys []string) string {
		what := "a report"
		if path != "" {
			what = describeDiffFile(path)
		}
		return fmt.Sprintf("%s (%s) holds %s", name, what, listKeys(keys))
	}
	baseName, headName := basePath, headPath
	if headPath == "" { // a range: its reports, by the names Compare gave them
		baseName, headName, basePath = d.Base.Name, d.Head.Name, ""
	}
	return fmt.Errorf("diff: %s and %s have no configuration in common, so nothing was compared: %s; %s. Compare runs of the same plan, phases or program",
		baseName, headName, side(basePath, baseName, d.OnlyBase), side(headPath, headName, d.OnlyHead))
}

// listKeys names configurations, the first three and how many more.
func listKeys(keys []string) string {
	switch {
	case len(keys) == 0:
		return "no configuration"
	case len(keys) > 3:
		return fmt.Sprintf("%s and %d more", strings.Join(keys[:3], ", "), len(keys)-3)
	}
	return strings.Join(keys, ", ")
}

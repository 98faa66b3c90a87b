package report

import (
	"bytes"
	"fmt"
	"strings"

	"memprobe/internal/table"
	"memprobe/schema"
)

// EndMarker closes a plan's generated section in a document; BeginMarker
// opens it. Each marker is a line of its own.
const EndMarker = "<!-- end probe report -->"

// BeginMarker is the line that opens plan's generated section.
func BeginMarker(plan string) string { return "<!-- probe report: plan " + plan + " -->" }

// UpdateDoc returns doc (a markdown document: docs/phases.md) with the
// section of every plan of rep, the lines between BeginMarker(plan) and
// the next EndMarker, replaced by where the figures come from, the
// report's warnings and the plan's tables (WritePlanTables, markdown).
// The rest of doc is kept byte for byte, and so are the sections of plans
// the report has no runs of; runs outside a plan have no section. A plan
// whose marker is missing, appears twice or is not closed is an error
// naming the plan.
func UpdateDoc(doc []byte, rep *schema.Report) ([]byte, error) {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	for _, name := range Plans(rep) {
		if name == "" {
			continue
		}
		begin := BeginMarker(name)
		start, end := -1, -1
		for i, l := range lines {
			switch strings.TrimSpace(string(l)) {
			case begin:
				if start >= 0 {
					return nil, fmt.Errorf("plan %s: marker %q appears twice (lines %d and %d)", name, begin, start+1, i+1)
				}
				start = i
			case EndMarker:
				if start >= 0 && end < 0 {
					end = i
				}
			}
		}
		switch {
		case start < 0:
			return nil, fmt.Errorf("plan %s: no marker %q", name, begin)
		case end < 0:
			return nil, fmt.Errorf("plan %s: marker %q on line %d has no %q after it", name, begin, start+1, EndMarker)
		}
		for i := start + 1; i < end; i++ {
			if strings.HasPrefix(strings.TrimSpace(string(lines[i])), "<!-- probe report: plan ") {
				return nil, fmt.Errorf("plan %s: marker %q on line %d is not closed before line %d opens another section", name, begin, start+1, i+1)
			}
		}
		section, err := docSection(rep, name)
		if err != nil {
			return nil, err
		}
		if !bytes.HasSuffix(lines[start], []byte("\n")) {
			lines[start] = append(lines[start], '\n') // cannot happen: an end marker follows
		}
		var out [][]byte
		out = append(out, lines[:start+1]...)
		out = append(out, section)
		out = append(out, lines[end:]...)
		lines = out
	}
	return bytes.Join(lines, nil), nil
}

// docSection is a plan's section: an empty line, the provenance, the
// warnings and the tables, an empty line.
func docSection(rep *schema.Report, plan string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\nMeasured by `probe run`: %s. Regenerate with `probe report REPORT.json --phases-md docs/phases.md`.\n\n", provenance(rep))
	for _, w := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n\n", w)
	}
	if err := WritePlanTables(&b, rep, plan, table.Markdown); err != nil {
		return nil, err
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}

package procfs

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// StatFields are the fields of a /proc stat file (/proc/PID/stat or
// /proc/PID/task/TID/stat) after the command name, which is in
// parentheses and may itself hold spaces and parentheses: StatFields(p)[0]
// is field 3 (the state), [1] field 4 (the parent pid), [26] field 29
// (kstkesp). nil when the file cannot be read.
func StatFields(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// Proc is a process and its parent.
type Proc struct{ PID, PPID int }

// Descendants lists the processes below pid, parents before children,
// from every /proc/N/stat's parent field (task/*/children needs
// CONFIG_PROC_CHILDREN, which many kernels lack). Zombies are listed: a
// child nobody reaped is still below its parent. A process that exits
// meanwhile is left out.
func (fs FS) Descendants(pid int) []Proc {
	ents, err := os.ReadDir(fs.Root())
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := StatFields(fs.Path(n, "stat")); len(f) > 1 {
			if pp, _ := strconv.Atoi(f[1]); pp > 0 {
				kids[pp] = append(kids[pp], n)
			}
		}
	}
	var out []Proc
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			out = append(out, Proc{c, p})
			queue = append(queue, c)
		}
	}
	return out
}

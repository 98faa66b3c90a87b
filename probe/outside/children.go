package outside

import (
	"os"
	"strconv"

	"memprobe/probe/procfs"
)

type proc struct{ pid, ppid int }

// descendants lists the processes below pid, from every /proc/N/stat's
// parent field (task/*/children needs CONFIG_PROC_CHILDREN, which many
// kernels lack). A process that exits meanwhile is left out.
func descendants(fs procfs.FS, pid int) []proc {
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
		if pp := ppid(fs.Path(n, "stat")); pp > 0 {
			kids[pp] = append(kids[pp], n)
		}
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			out = append(out, proc{c, p})
			queue = append(queue, c)
		}
	}
	return out
}

// ppid reads the parent pid (field 4) of a stat file; 0 when unreadable.
func ppid(path string) int {
	f := statFields(path)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"memprobe/run/job"
	"memprobe/schema"
)

// importantFlags are the CPU features schema.Environment reports, in its
// order: the human form names the missing ones too.
var importantFlags = []string{"avx2", "fma", "avx512f", "avx512bw", "amx-tile"}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the build and the machine: commit, Go, OS, CPU, memory, OpenBLAS",
		Long: `version prints what every result records as its "environment": the
commit the binary was built from (and whether the checkout had uncommitted
changes), the Go version, OS and kernel, CPU model and the instruction sets
the GEMM kernels use, cores, memory, cgo, build tags and OpenBLAS's
configuration. --json prints the same as the result's JSON object.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			e := job.Environment()
			if asJSON {
				b, err := schema.Marshal(e)
				if err != nil {
					return err
				}
				_, err = stdout.Write(b)
				return err
			}
			return writeEnvironment(stdout, e)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the environment as JSON (schema.Environment)")
	return cmd
}

// writeEnvironment is the short human form of e.
func writeEnvironment(w io.Writer, e schema.Environment) error {
	var b strings.Builder
	commit := "commit unknown (no VCS stamp: built with -buildvcs=false, by go run or go test, or outside a repository)"
	if e.VCSRevision != "" {
		commit = "commit " + e.VCSRevision
		if e.VCSTime != "" {
			commit += " (" + e.VCSTime + ")"
		}
		if e.VCSModified {
			commit += ", dirty: uncommitted changes"
		} else {
			commit += ", clean"
		}
	}
	fmt.Fprintf(&b, "memprobe %s\n", commit)
	cgo := "cgo off"
	if e.CgoEnabled {
		cgo = "cgo on"
	}
	tags := "no build tags"
	if len(e.BuildTags) > 0 {
		tags = "tags " + strings.Join(e.BuildTags, ",")
	}
	fmt.Fprintf(&b, "go       %s %s/%s, %s, %s\n", e.GoVersion, e.GOOS, e.GOARCH, cgo, tags)
	fmt.Fprintf(&b, "os       %s kernel %s, host %s\n", e.GOOS, orUnknown(e.KernelRelease), orUnknown(e.Hostname))
	have := map[string]bool{}
	for _, f := range e.CPUFlags {
		have[f] = true
	}
	var missing []string
	for _, f := range importantFlags {
		if !have[f] {
			missing = append(missing, f)
		}
	}
	flags := strings.Join(e.CPUFlags, " ")
	if len(missing) > 0 {
		flags = strings.TrimSpace(flags + " (no " + strings.Join(missing, ", ") + ")")
	}
	fmt.Fprintf(&b, "cpu      %s: %s\n", orUnknown(e.CPUModel), flags)
	fmt.Fprintf(&b, "cores    %d logical, GOMAXPROCS %d\n", e.LogicalCores, e.GOMAXPROCS)
	mem := "unknown"
	if e.MemTotalBytes > 0 {
		mem = fmt.Sprintf("%.1f GiB (%d bytes)", float64(e.MemTotalBytes)/(1<<30), e.MemTotalBytes)
	}
	fmt.Fprintf(&b, "memory   %s\n", mem)
	blas := "not in this build (no openblas tag)"
	if e.OpenBLASConfig != "" {
		blas = e.OpenBLASConfig
	}
	coretype := "OPENBLAS_CORETYPE unset"
	if e.OpenBLASCoretype != "" {
		coretype = "OPENBLAS_CORETYPE=" + e.OpenBLASCoretype
	}
	fmt.Fprintf(&b, "openblas %s; %s\n", blas, coretype)
	_, err := io.WriteString(w, b.String())
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

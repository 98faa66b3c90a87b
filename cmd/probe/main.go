// Command probe measures where a training program's memory and time go.
// See README.md; `probe help` lists the subcommands.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	err := run(os.Stdout, os.Stderr, os.Args[1:])
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "probe:", err)
	var ue usageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		os.Exit(ec.ExitCode()) // probe run interrupted: 130
	}
	os.Exit(1)
}

// usageError marks a bad command line: exit status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func run(stdout, stderr io.Writer, args []string) error {
	cmd := newRootCmd(stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	// cobra reports an unknown subcommand as a plain error; it is a usage error.
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		return usageError{err}
	}
	return err
}

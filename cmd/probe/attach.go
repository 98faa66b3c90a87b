package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"memprobe/outside"
	"memprobe/report/process"
)

func newAttachCmd(stdout, stderr io.Writer) *cobra.Command {
	var f outsideFlags
	cmd := &cobra.Command{
		Use:   "attach PID",
		Short: "watch a running process's memory from outside until it exits, --duration ends or Ctrl-C",
		Long: `attach samples a running process's memory from /proc until it exits,
--duration ends, or Ctrl-C (SIGINT, SIGTERM), then takes a last walk of its
address space, writes --json and prints the report (stdout, or stderr with
--json -). The process is not changed or stopped. Reading its memory maps
needs the same user or root. A thread id is taken for its process, with a
note. See docs/exec.md.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("attach: want one PID, got %d arguments", len(args))}
			}
			if n, err := strconv.Atoi(args[0]); err != nil || n < 1 {
				return usageError{fmt.Errorf("attach: PID %q: not a process id", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, _ := strconv.Atoi(args[0])
			o, format, err := f.options()
			if err != nil {
				return usageError{err}
			}
			f.live = liveWanted(f.live, stderr)
			o.Progress = stderr
			if f.live {
				o.Progress = nil // the view shows the walks
			}
			survivePipe()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if f.duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, f.duration)
				defer cancel()
			}
			s, err := outside.Attach(pid, o)
			if err != nil {
				return err
			}
			var view *liveView
			if f.live {
				var quit context.CancelFunc
				ctx, quit = context.WithCancel(ctx)
				defer quit()
				view = startLive(s, liveStdin, stderr, quit)
				defer view.stop()
			}
			r, err := s.Wait(ctx)
			view.stop() // the view off and the terminal back before the report
			if err != nil {
				return err
			}
			r.Process.Diagnosis = process.Diagnose(r, s.TimelineCut())
			return writeOutside(stdout, stderr, f.jsonPath, format, r)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "stop watching after this long (0: until the process exits or Ctrl-C)")
	return cmd
}

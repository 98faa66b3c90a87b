//go:build viz

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"memprobe/instrument/profiling"
)

// Linked only with -tags viz: gonum/plot and pprof's web UI add about 12 MiB
// to the resident set of every probe process at start-up (font parsing,
// package init), the probe train children that probe run measures included.
func init() { extraCommands = append(extraCommands, newPprofCmd) }

// pprofCmdFlags are the command-line options of `probe pprof`.
type pprofCmdFlags struct {
	http        string
	allowRemote bool
}

func newPprofCmd(stdout, stderr io.Writer) *cobra.Command {
	var f pprofCmdFlags
	cmd := &cobra.Command{
		Use:   "pprof [--http 127.0.0.1:0] [--allow-remote] PROFILE...",
		Short: "serve pprof's own interactive web UI for profiles, on loopback, until interrupted",
		Long: `pprof opens the profiles in pprof's web UI (github.com/google/pprof's
driver: graph, flame graph, top, source, peek), served at --http and printed
as a URL, until interrupted (Ctrl-C). Several profiles are merged, as pprof
does. The UI lets whoever connects read the profiles, so the address must be
loopback (127.0.0.0/8, ::1 or localhost) unless --allow-remote, which
prints a warning. Port 0 picks a free port.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.MinimumNArgs(1)(cmd, args); err != nil {
				return usageError{fmt.Errorf("pprof: want at least one profile: %w", err)}
			}
			if err := checkHTTPAddr(f.http, f.allowRemote); err != nil {
				return usageError{err}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if f.allowRemote {
				fmt.Fprintf(stderr, "probe pprof: warning: --allow-remote: anyone who can reach %s can read these profiles\n", f.http)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			return runPprofUI(ctx, stderr, f.http, args)
		},
	}
	cmd.Flags().StringVar(&f.http, "http", "127.0.0.1:0", "host:port to serve the UI on (port 0: any free port)")
	cmd.Flags().BoolVar(&f.allowRemote, "allow-remote", false, "allow an address other machines can reach (prints a warning)")
	return cmd
}

// checkHTTPAddr checks --http: loopback unless --allow-remote, as the
// job's --pprof-addr (profiling.CheckListenAddr).
func checkHTTPAddr(addr string, allowRemote bool) error {
	return profiling.CheckListenAddr("--http", "--allow-remote", addr, allowRemote)
}

// runPprofUI listens at addr first (so that port 0 becomes a real port
// in what pprof prints), then runs pprof's driver with "-http
// host:port -no_browser profiles..." and our own HTTP server on that
// listener, which stops when ctx is done; then it returns.
func runPprofUI(ctx context.Context, stderr io.Writer, addr string, profiles []string) error {
	if err := checkProfiles(profiles); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	defer ln.Close()
	args := append([]string{"-http", ln.Addr().String(), "-no_browser"}, profiles...)
	err = driver.PProf(&driver.Options{
		Flagset: &pprofFlags{FlagSet: flag.NewFlagSet("pprof", flag.ContinueOnError), args: args},
		HTTPServer: func(a *driver.HTTPServerArgs) error {
			return servePprof(ctx, ln, a)
		},
	})
	if err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	fmt.Fprintln(stderr, "probe pprof: stopped")
	return nil
}

// checkProfiles parses each profile that is a local file before pprof's
// driver sees it: the driver prints a bad file's error on its own line and
// then fails with "failed to fetch any source profiles", two lines that do
// not say which input was wrong. Other sources (a URL, a binary beside the
// profile) are the driver's to fetch.
func checkProfiles(profiles []string) error {
	for _, p := range profiles {
		st, err := os.Stat(p)
		switch {
		case err != nil && strings.Contains(p, ":"):
			continue // a URL or host:port/path: the driver fetches it
		case err != nil:
			return fmt.Errorf("pprof: %w", err)
		case st.IsDir():
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("pprof: %w", err)
		}
		if bytes.HasPrefix(b, []byte("\x7fELF")) {
			continue // the program, for symbols: pprof [binary] profile
		}
		if _, err := profile.ParseData(b); err != nil {
			return fmt.Errorf("pprof: %s: not a profile pprof reads: %v", p, err)
		}
	}
	return nil
}

// servePprof serves pprof's handlers on ln until ctx is done.
func servePprof(ctx context.Context, ln net.Listener, a *driver.HTTPServerArgs) error {
	// As pprof's own server: the UI under /ui/ (its links are relative to
	// it), the root redirected there.
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := a.Handlers[r.URL.Path]
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", ui))
	mux.Handle("/", http.RedirectHandler("/ui/", http.StatusTemporaryRedirect))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

// pprofFlags is pprof's driver.FlagSet over a standard flag.FlagSet and
// the arguments we give it.
type pprofFlags struct {
	*flag.FlagSet
	args  []string
	extra []string
}

func (f *pprofFlags) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.String(name, def, usage)}
}

func (f *pprofFlags) ExtraUsage() string      { return strings.Join(f.extra, "\n") }
func (f *pprofFlags) AddExtraUsage(eu string) { f.extra = append(f.extra, eu) }
func (f *pprofFlags) Parse(usage func()) []string {
	f.Usage = usage
	if err := f.FlagSet.Parse(f.args); err != nil {
		return nil
	}
	return f.Args()
}

package profiling

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// server is net/http/pprof on its own mux (not http.DefaultServeMux, so
// that nothing else registered there is exposed).
type server struct {
	srv  *http.Server
	addr string
	done chan error
}

func serve(addr string) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s := &server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// close stops the server, giving requests in flight a moment to finish.
func (s *server) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("pprof server %s: %w", s.addr, err)
	}
	return nil
}

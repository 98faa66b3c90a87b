//go:build !cgo

package gpumem

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestOpenNoCgo checks that a CGO_ENABLED=0 build says why it has no NVML
// in one line, and that a sampler on the nil NVML records errors rather
// than crashing.
func TestOpenNoCgo(t *testing.T) {
	n, err := Open("")
	if n != nil || !errors.Is(err, ErrNoCgo) || !strings.HasPrefix(err.Error(), "no NVML: NVML needs a cgo build") {
		t.Fatalf("Open = %v, %v; want nil and ErrNoCgo", n, err)
	}
	if _, err := n.Devices(); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Devices: %v", err)
	}
	if _, _, err := n.Utilization(0); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Utilization: %v", err)
	}
	if u, err := n.ProcessUtilization(0, os.Getpid(), 7); !errors.Is(err, ErrNoCgo) || u.LastSeen != 7 || u.Known() {
		t.Errorf("ProcessUtilization: %+v, %v", u, err)
	}
	tl := n.Sample(os.Getpid(), time.Hour).Stop()
	if tl.Available() || tl.Errors != 2 || !strings.Contains(tl.FirstErr, "cgo") {
		t.Errorf("timeline %+v; want 2 errors naming cgo", tl)
	}
}

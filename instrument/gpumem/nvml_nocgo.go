//go:build !cgo

package gpumem

// NVML is an initialised NVML library. In a binary built without cgo there
// is none: Open always fails with ErrNoCgo, and the methods, which exist
// so that callers compile the same way in both builds, return errors.
type NVML struct{}

// Open always fails without cgo, which loading a library needs.
// The error is ErrNoCgo, "no NVML: NVML needs a cgo build ...", so that a
// CGO_ENABLED=0 binary explains its missing GPU figures in one line.
func Open(libPath string) (*NVML, error) {
	_ = libPathOrDefault(libPath)
	return nil, ErrNoCgo
}

// Close is a no-op: nothing was opened.
func (n *NVML) Close() error { return nil }

// Devices fails: there is no NVML without cgo.
func (n *NVML) Devices() ([]Device, error) { return nil, ErrNoCgo }

// ProcessBytesPerDevice fails: there is no NVML without cgo.
func (n *NVML) ProcessBytesPerDevice(pid int) ([]int64, error) {
	if err := checkPID(pid); err != nil {
		return nil, err
	}
	return nil, ErrNoCgo
}

// Utilization fails: there is no NVML without cgo.
func (n *NVML) Utilization(index int) (gpuPct, memPct int, err error) { return 0, 0, ErrNoCgo }

// ProcessUtilization fails: there is no NVML without cgo.
func (n *NVML) ProcessUtilization(index, pid int, since uint64) (ProcessUtil, error) {
	return ProcessUtil{LastSeen: since}, ErrNoCgo
}

// processUtilization fails: there is no NVML without cgo.
func (n *NVML) processUtilization(index, pid int, since uint64) (ProcessUtil, int32, error) {
	return ProcessUtil{LastSeen: since}, 0, ErrNoCgo
}

// processUtilErr returns err: the only failure without cgo is ErrNoCgo.
func (n *NVML) processUtilErr(index int, ret int32, err error) error { return err }

// processUtilOK is true for the codes of a good reading; none without cgo.
func processUtilOK(ret int32, err error) bool { return false }

// gpuUtil fails: there is no NVML without cgo.
func (n *NVML) gpuUtil(index int) (pct int, ok bool) { return 0, false }

var _ = errClosed // used by the cgo build only

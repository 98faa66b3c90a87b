//go:build !cgo

package cudadrv

// Without cgo there is no dlopen: the device is compiled and refused.

func dlopen(string) (uintptr, error) { return 0, ErrNoCgo }

func dlsym(uintptr, string) (uintptr, error) { return 0, ErrNoCgo }

func callRaw(uintptr, ...uintptr) uintptr { panic(ErrNoCgo) }

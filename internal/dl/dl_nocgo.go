//go:build !cgo

package dl

// Without cgo there is no dlopen: callers compile and are refused.

func dlopen(string) (uintptr, error) { return 0, ErrNoCgo }

func dlsym(uintptr, string) (uintptr, error) { return 0, ErrNoCgo }

func callRaw(uintptr, ...uintptr) uintptr { panic(ErrNoCgo) }

func dlclose(uintptr) error { return ErrNoCgo }

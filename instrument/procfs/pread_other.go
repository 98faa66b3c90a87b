//go:build !linux

package procfs

import "errors"

const rawReads = false

func rawPread(int, []byte, int64) (int, error) { return 0, errors.ErrUnsupported }

package schema

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// ReadFile reads path as the readers here do: a gzip-compressed file
// (a report kept compressed, testdata/phases/report.json.gz) is
// decompressed, anything else returned as it is. The error names path.
func ReadFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b, err
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err == nil {
		b, err = io.ReadAll(z)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: decompressing: %w", path, err)
	}
	return b, nil
}

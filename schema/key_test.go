package schema_test

import (
	"testing"

	"memprobe/schema/schematest"
)

// TestDecodeKey: the key names mode, device, shape, probs and, where it
// was used, pinned host memory.
func TestDecodeKey(t *testing.T) {
	r := schematest.Record("per-token-copy", schematest.Speeds(1000, 0))
	if got, want := r.Key(), "decode per-token-copy on cpu (B=32 T=128 C=256 V=788, probs)"; got != want {
		t.Errorf("Key: %q, want %q", got, want)
	}
	r.Config.Probs, r.Device = false, "cuda"
	if got, want := r.Key(), "decode per-token-copy on cuda (B=32 T=128 C=256 V=788, no probs)"; got != want {
		t.Errorf("Key: %q, want %q", got, want)
	}
	r.Config.PinnedHost = true
	if got, want := r.Key(), "decode per-token-copy on cuda (B=32 T=128 C=256 V=788, no probs, pinned host)"; got != want {
		t.Errorf("Key: %q, want %q", got, want)
	}
}

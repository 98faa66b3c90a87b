package trainer

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"memprobe/trainer/model"
)

// microCheckpoint is a valid checkpoint of the micro preset at step 3,
// its parameters and moments a ramp: the fuzzer's starting point.
func microCheckpoint(t testing.TB) []byte {
	cfg := model.Presets["micro"]
	n := cfg.NumParams()
	p, m, v := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range p {
		p[i], m[i], v[i] = float32(i)/float32(n), -float32(i), float32(i*i)
	}
	var buf bytes.Buffer
	if err := (&Trainer{cfg: cfg, step: 3}).writeCheckpointFrom(&buf, p, m, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// encodeCheckpoint writes ck back in the file format.
func encodeCheckpoint(t *testing.T, ck *checkpoint) []byte {
	P := len(ck.payload) / 12
	fl := make([]float32, 3*P)
	for i := range fl {
		fl[i] = math.Float32frombits(binary.LittleEndian.Uint32(ck.payload[4*i:]))
	}
	var buf bytes.Buffer
	if err := (&Trainer{cfg: ck.cfg, step: ck.step}).writeCheckpointFrom(&buf, fl[:P], fl[P:2*P], fl[2*P:]); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzReadCheckpoint: the checkpoint reader never panics and never
// accepts a file whose parts disagree: every error names the file, an
// accepted checkpoint has a valid model and exactly 3 × 4 B × its
// parameters of payload, and written back it reads the same. The seeds
// (testdata/fuzz/FuzzReadCheckpoint, plus those below) are a valid micro
// checkpoint, truncated, with a flipped byte, a future version, another
// magic, and a config that does not fit its parameter count.
func FuzzReadCheckpoint(f *testing.F) {
	good := microCheckpoint(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:20])
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	f.Add(flipped)
	f.Add([]byte("MPROBECK\x02\x00\x00\x00"))
	f.Add([]byte("PK\x03\x04 a zip file, not a checkpoint......................"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz/ck.bin"
		ck, err := decodeCheckpoint(b, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := ck.cfg.Validate(); err != nil {
			t.Fatalf("accepted a checkpoint with an invalid model: %v", err)
		}
		if len(ck.payload) != 12*ck.cfg.NumParams() {
			t.Fatalf("accepted %d payload bytes for %d parameters", len(ck.payload), ck.cfg.NumParams())
		}
		back, err := decodeCheckpoint(encodeCheckpoint(t, ck), name)
		if err != nil {
			t.Fatalf("an accepted checkpoint, written back, is refused: %v", err)
		}
		if !reflect.DeepEqual(ck, back) {
			t.Fatal("an accepted checkpoint changed when written back and read again")
		}
	})
}

package trainer

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"memprobe/trainer/data"
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
	unk := 2
	origin := &data.Origin{Source: "corpus.txt", Kind: "chars", Vocab: 3, Chars: "ab\uFFFD", Unk: &unk}
	return encode(t, &checkpoint{cfg: cfg, data: origin, step: 3}, p, m, v)
}

// encode writes a checkpoint of ck's header, parameters and moments.
func encode(t testing.TB, ck *checkpoint, p, m, v []float32) []byte {
	t.Helper()
	header, err := checkpointHeaderOf(ck.cfg, ck.data)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeCheckpointOf(&buf, header, ck.step, p, m, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withData is checkpoint b (version 2) with its data JSON replaced by
// dataJSON, or its data length by length when dataJSON is nil, and the CRC
// made right again: files that get past the CRC to the data's checks.
func withData(b []byte, dataJSON []byte, length uint32) []byte {
	n := int(binary.LittleEndian.Uint32(b[12:]))
	m := int(binary.LittleEndian.Uint32(b[16+n:]))
	if dataJSON == nil {
		dataJSON = b[16+n+4 : 16+n+4+m]
	} else {
		length = uint32(len(dataJSON))
	}
	out := slices.Concat(b[:16+n], binary.LittleEndian.AppendUint32(nil, length), dataJSON, b[16+n+4+m:len(b)-4])
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
}

// encodeCheckpoint writes ck back in the file format.
func encodeCheckpoint(t *testing.T, ck *checkpoint) []byte {
	P := len(ck.payload) / 12
	fl := make([]float32, 3*P)
	for i := range fl {
		fl[i] = math.Float32frombits(binary.LittleEndian.Uint32(ck.payload[4*i:]))
	}
	return encode(t, ck, fl[:P], fl[P:2*P], fl[2*P:])
}

// FuzzReadCheckpoint: the checkpoint reader never panics and never
// accepts a file whose parts disagree: every error names the file, an
// accepted checkpoint has a valid model and exactly 3 × 4 B × its
// parameters of payload, and written back it reads the same. The seeds
// (testdata/fuzz/FuzzReadCheckpoint, plus those below) are a valid micro
// checkpoint, truncated, with a flipped byte, a future version, another
// magic, a config that does not fit its parameter count (all version 1),
// and version 2 files whose data is absent, valid, inconsistent, of an
// unknown kind, not JSON, or longer than the file.
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
	f.Add(withData(good, []byte("null"), 0))
	f.Add(withData(good, []byte(`{"kind":"synthetic","vocab":13,"seed":1}`), 0))
	f.Add(withData(good, []byte(`{"kind":"chars","vocab":3,"chars":"ab"}`), 0))
	f.Add(withData(good, []byte(`{"kind":"bpe","vocab":3}`), 0))
	f.Add(withData(good, []byte(`{"kind":`), 0))
	f.Add(withData(good, nil, 1<<31))
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

// TestCheckpointDataCorrupt: the data part of a checkpoint whose CRC is
// right is checked like the rest, each refusal saying what is wrong.
func TestCheckpointDataCorrupt(t *testing.T) {
	good := microCheckpoint(t)
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{withData(good, []byte(`{"kind":"bpe","vocab":3}`), 0), `corrupt checkpoint: data: unknown data kind "bpe"`},
		{withData(good, []byte(`{"kind":"chars","vocab":3,"chars":"ab"}`), 0), "corrupt checkpoint: data: 2 characters for 3 ids"},
		{withData(good, []byte(`{"kind":`), 0), "corrupt checkpoint: data: unexpected end of JSON input"},
		{withData(good, nil, 1<<31), "corrupt checkpoint: data runs past the end of the file"},
	} {
		_, err := decodeCheckpoint(c.b, "ck.bin")
		if err == nil || !strings.Contains(err.Error(), "reading checkpoint ck.bin: "+c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	ck, err := decodeCheckpoint(withData(good, []byte("null"), 0), "ck.bin")
	if err != nil || ck.data != nil {
		t.Errorf("null data: %v, %+v", err, ck)
	}
	ck, err = decodeCheckpoint(good, "ck.bin")
	if err != nil || ck.data == nil || ck.data.Chars != "ab\uFFFD" || ck.step != 3 {
		t.Errorf("good: %v, %+v", err, ck)
	}
}

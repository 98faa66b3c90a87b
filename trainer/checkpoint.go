package trainer

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"memprobe/internal/atomicfile"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
)

// Checkpoint file layout (little-endian):
//
//	magic    [8]byte  "MPROBECK"
//	version  uint32   CheckpointVersion
//	cfglen   uint32   length of the JSON config that follows
//	config   []byte   model.Config as JSON
//	datalen  uint32   length of the JSON that follows (version 2 on)
//	data     []byte   the training data's data.Origin as JSON, or null
//	step     uint64   optimizer steps taken
//	nparams  uint64   parameter count, NumParams() of config
//	params   [nparams]float32
//	adam m   [nparams]float32
//	adam v   [nparams]float32
//	crc      uint32   CRC-32 (IEEE) of every byte before it
//
// Version 1 had no data fields; this build still reads it (its data is
// unknown, so it cannot be checked against the run's).
const CheckpointVersion = 2

var checkpointMagic = [8]byte{'M', 'P', 'R', 'O', 'B', 'E', 'C', 'K'}

// SaveCheckpoint writes the parameters, Adam moments and step count to path
// atomically: a temporary file in the same directory, synced, then renamed,
// so an interrupted save never leaves a half-written checkpoint behind.
func (t *Trainer) SaveCheckpoint(path string) error {
	if err := atomicfile.Write(path, t.writeCheckpoint); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	return nil
}

// writeCheckpoint writes the checkpoint's bytes, CRC included, to w.
func (t *Trainer) writeCheckpoint(w io.Writer) error {
	return t.writeCheckpointFrom(w, t.Param.Memory, t.M.Memory, t.V.Memory)
}

// writeCheckpointFrom writes a checkpoint of the given parameters and Adam
// moments (NumParams floats each): the trainer's own, or a snapshot of them.
// The side work (Options.Side) writes it to io.Discard every step.
func (t *Trainer) writeCheckpointFrom(w io.Writer, params, m, v []float32) error {
	return writeCheckpointOf(w, t.checkpointHeader, t.step, params, m, v)
}

// checkpointHeader is the bytes of a checkpoint before its step: magic,
// version, the model's configuration and the data's origin (JSON null
// when ds is nil), each JSON part after its length.
func checkpointHeader(cfg model.Config, ds *data.Dataset) ([]byte, error) {
	var origin *data.Origin
	if ds != nil {
		o := ds.Origin()
		origin = &o
	}
	return checkpointHeaderOf(cfg, origin)
}

func checkpointHeaderOf(cfg model.Config, origin *data.Origin) ([]byte, error) {
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	dataJSON, err := json.Marshal(origin)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), checkpointMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, CheckpointVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cfgJSON)))
	b = append(b, cfgJSON...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(dataJSON)))
	return append(b, dataJSON...), nil
}

// writeCheckpointOf writes a checkpoint: header (checkpointHeader), the
// step, the parameter count, the parameters and moments, and the CRC of
// all of it. Its allocations are the same every call (the buffer and the
// CRC's writer), none of them tiny: the side work's allocation count per
// step is exact.
func writeCheckpointOf(w io.Writer, header []byte, step int, params, m, v []float32) error {
	cw := &crcWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<20)
	bw.Write(header)
	bw.Write(binary.LittleEndian.AppendUint64(bw.AvailableBuffer(), uint64(step)))
	bw.Write(binary.LittleEndian.AppendUint64(bw.AvailableBuffer(), uint64(len(params))))
	for _, s := range [][]float32{params, m, v} {
		writeFloats(bw, s)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// The CRC goes to w directly, past the CRC's writer, from the
	// buffer's free space.
	_, err := w.Write(binary.LittleEndian.AppendUint32(bw.AvailableBuffer(), cw.crc))
	return err
}

// crcWriter passes writes to w, keeping the CRC-32 (IEEE) of what went by.
type crcWriter struct {
	w   io.Writer
	crc uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p)
	return c.w.Write(p)
}

// writeFloats writes s little-endian into bw's free space, a buffer at a
// time; bw keeps the first error for its Flush.
func writeFloats(bw *bufio.Writer, s []float32) {
	for len(s) > 0 {
		if bw.Available() < 4 {
			bw.Flush()
		}
		b := bw.AvailableBuffer()
		n := min(len(s), cap(b)/4)
		for _, v := range s[:n] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		if _, err := bw.Write(b); err != nil {
			return
		}
		s = s[n:]
	}
}

// ErrCorruptCheckpoint is wrapped by every error about a damaged file.
var ErrCorruptCheckpoint = errors.New("corrupt checkpoint")

// CheckpointInfo is what a checkpoint says of itself.
type CheckpointInfo struct {
	Config model.Config
	Step   int // optimizer steps taken
	// Data is the data the model was trained on; nil when the file does
	// not say (version 1).
	Data *data.Origin
}

// ReadCheckpointInfo returns what a checkpoint says of itself, after
// verifying the whole file. A command can use it to build a trainer that
// matches before calling LoadCheckpoint.
func ReadCheckpointInfo(path string) (CheckpointInfo, error) {
	ck, err := readCheckpoint(path)
	if err != nil {
		return CheckpointInfo{}, err
	}
	return ck.info(), nil
}

type checkpoint struct {
	cfg     model.Config
	data    *data.Origin
	step    int
	payload []byte // 3*nparams float32s
}

func (ck *checkpoint) info() CheckpointInfo {
	return CheckpointInfo{Config: ck.cfg, Step: ck.step, Data: ck.data}
}

func readCheckpoint(path string) (*checkpoint, error) {
	// Only a regular file, read by its size: a pipe could block for ever
	// and /dev/zero never ends.
	b, err := data.ReadRegularFile(path, 0)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint %s: %w", path, err)
	}
	return decodeCheckpoint(b, path)
}

// decodeCheckpoint checks and splits a checkpoint file's bytes; path
// names it in errors.
func decodeCheckpoint(b []byte, path string) (*checkpoint, error) {
	bad := func(what string) error {
		return fmt.Errorf("reading checkpoint %s: %w: %s", path, ErrCorruptCheckpoint, what)
	}
	if len(b) < 8+4+4+8+8+4 {
		return nil, bad(fmt.Sprintf("file is %d bytes, too short for a header", len(b)))
	}
	if [8]byte(b[:8]) != checkpointMagic {
		return nil, bad("wrong magic (not a memprobe checkpoint)")
	}
	version := binary.LittleEndian.Uint32(b[8:])
	if version != 1 && version != CheckpointVersion {
		return nil, fmt.Errorf("reading checkpoint %s: version %d, this build reads versions 1 to %d", path, version, CheckpointVersion)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, bad("CRC mismatch (truncated or damaged file)")
	}
	n := int(binary.LittleEndian.Uint32(b[12:]))
	if 16+n+16 > len(body) {
		return nil, bad("config length runs past the end of the file")
	}
	ck := &checkpoint{}
	if err := json.Unmarshal(body[16:16+n], &ck.cfg); err != nil {
		return nil, bad("config: " + err.Error())
	}
	if err := ck.cfg.Validate(); err != nil {
		return nil, bad("config: " + err.Error())
	}
	rest := body[16+n:]
	if version >= 2 {
		if len(rest) < 4 {
			return nil, bad("data length runs past the end of the file")
		}
		m := int(binary.LittleEndian.Uint32(rest))
		if 4+m+16 > len(rest) {
			return nil, bad("data runs past the end of the file")
		}
		if err := json.Unmarshal(rest[4:4+m], &ck.data); err != nil {
			return nil, bad("data: " + err.Error())
		}
		if ck.data != nil {
			if err := ck.data.Validate(); err != nil {
				return nil, bad("data: " + err.Error())
			}
		}
		rest = rest[4+m:]
	}
	ck.step = int(binary.LittleEndian.Uint64(rest))
	np := binary.LittleEndian.Uint64(rest[8:])
	if np != uint64(ck.cfg.NumParams()) {
		return nil, bad(fmt.Sprintf("%d parameters stored, config needs %d", np, ck.cfg.NumParams()))
	}
	ck.payload = rest[16:]
	if uint64(len(ck.payload)) != 3*4*np {
		return nil, bad(fmt.Sprintf("%d payload bytes, want %d", len(ck.payload), 3*4*np))
	}
	return ck, nil
}

// LoadCheckpoint restores parameters, Adam moments and the step count. The
// checkpoint's model configuration must equal the trainer's, and its data's
// ids must mean what the trainer's data's do (CheckCheckpointData).
func (t *Trainer) LoadCheckpoint(path string) error {
	ck, err := readCheckpoint(path)
	if err != nil {
		return err
	}
	want := ck.cfg
	want.Batch = t.cfg.Batch // the batch size may change on resume; the model may not
	if want != t.cfg {
		return fmt.Errorf("reading checkpoint %s: it holds a model with %v, this run is configured for %v", path, ck.cfg, t.cfg)
	}
	if err := CheckCheckpointData(path, ck.info(), t.data); err != nil {
		return err
	}
	P := len(t.Param.Memory)
	for k, s := range [][]float32{t.Param.Memory, t.M.Memory, t.V.Memory} {
		src := ck.payload[k*4*P:]
		for i := range s {
			s[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	}
	clear(t.Grad.Memory)
	t.step = ck.step
	t.version++ // caches and decode heads must follow the new parameters
	t.refreshHeads()
	return t.Err()
}

// CheckCheckpointData returns an error when the checkpoint at path (info)
// was trained on data whose ids mean other things than ds's (another
// character table, another synthetic language): going on from it would
// train the model on a language it never saw, and its generated text
// would be garbled, with nothing failing. Nil when they agree or when the
// checkpoint does not say (version 1).
func CheckCheckpointData(path string, info CheckpointInfo, ds *data.Dataset) error {
	if info.Data == nil || ds == nil {
		return nil
	}
	if err := info.Data.SameIDs(ds.Origin()); err != nil {
		return fmt.Errorf("checkpoint %s was trained on other data: %w", path, err)
	}
	return nil
}

// CheckpointDataNotes are the caveats of going on from the checkpoint at path
// (info) with ds, whose ids CheckCheckpointData found to agree: the
// checkpoint does not say what it was trained on (version 1), or it was
// trained on another source in the same ids (another size of the same
// synthetic language, another text in the same characters): legitimate,
// but the losses then do not continue the first run's.
func CheckpointDataNotes(path string, info CheckpointInfo, ds *data.Dataset) []string {
	switch {
	case info.Data == nil:
		return []string{fmt.Sprintf("checkpoint %s does not record its training data (version 1): %s was not checked against it", path, ds.Source)}
	case info.Data.Source != ds.Source:
		return []string{fmt.Sprintf("checkpoint %s was trained on %s, this run reads %s (the same ids)", path, info.Data.Source, ds.Source)}
	}
	return nil
}

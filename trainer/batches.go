package trainer

import (
	"fmt"
	"sync/atomic"

	"memprobe/ledger"
	"memprobe/trainer/model"
)

// batch is one step's sequences as the notes' C trainer held them: token
// ids, next-token targets and an attention mask, int32 each, (B, T): 48 KB
// for the seed preset.
type batch struct {
	inputs  []int32 // (B, T)
	targets []int32 // (B, T)
	mask    []int32 // (B, T) 1 where a position holds a real token
}

// batchStore holds the batches the workers read their sequences from.
// Lazy (the fixed state): one batch, whose rows the workers fill for the
// step being run. Eager (Pathology.EagerBatches): every batch of an epoch,
// all filled at the epoch's first step. Step s reads the sequences starting
// at ((s*B + b) * T) mod n for b < B, n the number of start positions, in
// both modes; an epoch is ceil(n / (B*T)) steps.
type batchStore struct {
	tokens   []uint16
	B, T, n  int
	eager    bool
	perEpoch int
	mem      []int32 // every batch's rows, as made
	bufs     []batch

	// set by begin, read by the workers
	step   int
	cur    *batch
	epoch  int  // eager: the epoch bufs hold (-1: none yet)
	refill bool // eager: this step starts a new epoch
	fills  atomic.Int64
}

func newBatchStore(c model.Config, tokens []uint16, eager bool, acct *ledger.Account) *batchStore {
	s := &batchStore{tokens: tokens, B: c.Batch, T: c.Context, n: len(tokens) - c.Context - 1, eager: eager, epoch: -1}
	s.perEpoch = (s.n + s.B*s.T - 1) / (s.B * s.T)
	nb := 1
	if eager {
		nb = s.perEpoch
	}
	BT := s.B * s.T
	mem := ledger.Make[int32](acct, nb*3*BT)
	s.mem = mem
	s.bufs = make([]batch, nb)
	for k := range s.bufs {
		m := mem[k*3*BT : (k+1)*3*BT]
		s.bufs[k] = batch{inputs: m[:BT:BT], targets: m[BT : 2*BT : 2*BT], mask: m[2*BT:]}
	}
	return s
}

// begin selects the batch of step; call it before the workers run.
func (s *batchStore) begin(step int) {
	s.step = step
	if !s.eager {
		s.cur = &s.bufs[0]
		return
	}
	e := step / s.perEpoch
	s.refill = e != s.epoch
	s.epoch = e
	s.cur = &s.bufs[step%s.perEpoch]
}

// fill writes row b of what this step needs: the current batch's row
// (lazy), or row b of every batch of a new epoch (eager). Rows are
// disjoint, so the workers fill their own sequences' rows concurrently.
func (s *batchStore) fill(b int) {
	if !s.eager {
		s.fillRow(s.cur, s.step, b)
		return
	}
	if s.refill {
		for k := range s.bufs {
			s.fillRow(&s.bufs[k], s.epoch*s.perEpoch+k, b)
		}
	}
}

func (s *batchStore) fillRow(bt *batch, step, b int) {
	T := s.T
	p := int((int64(step)*int64(s.B) + int64(b)) * int64(T) % int64(s.n))
	in, tg, mask := bt.inputs[b*T:(b+1)*T], bt.targets[b*T:(b+1)*T], bt.mask[b*T:(b+1)*T]
	for i := range in {
		in[i] = int32(s.tokens[p+i])
		tg[i] = int32(s.tokens[p+i+1])
		mask[i] = 1
	}
	s.fills.Add(1)
}

// load copies row b of the current batch into a workspace's token buffers.
// The model trains full-length sequences only, so a masked position is a
// bug in fill.
func (s *batchStore) load(b int, in, tg []uint16) {
	T := s.T
	bt := s.cur
	rin, rtg, mask := bt.inputs[b*T:(b+1)*T], bt.targets[b*T:(b+1)*T], bt.mask[b*T:(b+1)*T]
	for i, m := range mask {
		if m == 0 {
			panic(fmt.Sprintf("trainer: batch of step %d, row %d: position %d is masked", s.step, b, i))
		}
		in[i] = uint16(rin[i])
		tg[i] = uint16(rtg[i])
	}
}

package reconcile

import (
	"debug/elf"
	"testing"

	"memprobe/instrument/procfs"
)

// claimedBy is the class that holds addr in l: the owner of its mapping,
// or the claimed range of it that holds addr; "" where none does.
func claimedBy(l *layout, addr uint64) string {
	i := l.find(addr)
	if i < 0 {
		return ""
	}
	v := &l.vmas[i]
	if v.owner != "" {
		return v.owner
	}
	for _, s := range v.subs {
		if s.lo <= addr && addr < s.hi {
			return s.class
		}
	}
	return ""
}

// withResident is in with pagemap showing its mappings' resident
// ranges whole.
func withResident(in Input) Input {
	var rs [][2]uint64
	for _, m := range in.Mappings {
		if m.RssBytes > 0 {
			rs = append(rs, [2]uint64{m.Start, m.End})
		}
	}
	in.Resident = pagemap(rs...)
	return in
}

// ruleIndex is r's place in claimRules; -1 where it is not there.
func ruleIndex(r claimRule) int {
	for i, x := range claimRules {
		if x.name == r.name {
			return i
		}
	}
	return -1
}

// claimRuleCase is a mapping planted for one rule: the rule claims addr
// for class.
type claimRuleCase struct {
	rule  claimRule
	class string
	addr  uint64
	in    func() Input
}

// claimRuleCases are TestClaimRules' planted mappings, one per rule, in
// claimRules' order.
func claimRuleCases() []claimRuleCase {
	const (
		anon  = 0x7f0000000000
		heap  = 0x7f0004000000 // 64 MiB-aligned
		lib   = 0x7f1000000000
		stack = 0x7f2000000000
	)
	return []claimRuleCase{
		{ruleByName, clBrk, anon, func() Input { return space(mk(anon, 132*KiB, "rw-p", "[heap]", 132*KiB)) }},
		{ruleGoArenas, clGoArena, 0xc000000000, func() Input {
			in := space(mk(0xc000000000, 4*MiB, "rw-p", "", 4*MiB))
			in.GoAddrs = []uint64{0xc000001000}
			return in
		}},
		{ruleRaceShadow, clRace, raceShadow[0] + 64*MiB, func() Input {
			in := space(mk(raceShadow[0]+64*MiB, 8*MiB, "rw-p", "", 1*MiB))
			in.Race = true
			return in
		}},
		{ruleBSS, clBSS, lib + 12*KiB, func() Input {
			in := space(
				mk(lib, 4*KiB, "r--p", "/usr/lib/libx.so", 4*KiB),
				mk(lib+4*KiB, 4*KiB, "r-xp", "/usr/lib/libx.so", 4*KiB),
				mk(lib+8*KiB, 4*KiB, "rw-p", "/usr/lib/libx.so", 4*KiB),
				mk(lib+12*KiB, 12*KiB, "rw-p", "", 12*KiB))
			in.OpenFile = files(map[string][]byte{"/usr/lib/libx.so": elfFile(elf.ET_DYN,
				load(elf.PF_R, 0, 0, 0x800, 0x800),
				load(elf.PF_R|elf.PF_X, 0x1000, 0x1000, 0x900, 0x900),
				load(elf.PF_R|elf.PF_W, 0x2000, 0x2000, 0xa00, 0x3010))})
			return in
		}},
		{ruleKnownStacks, clWorkers, stack + 4*KiB, func() Input {
			in := space(cStack(stack, 1*MiB, 64*KiB)...)
			in.ThreadStacks = []StackRange{{Lo: stack + 4*KiB, Hi: stack + 4*KiB + 1*MiB, GuardBytes: 4 * KiB}}
			return in
		}},
		{ruleStacksBySP, clThreads, stack + 4*KiB, func() Input {
			in := space(cStack(stack, 32*KiB, 16*KiB)...) // below rule 7's 64 KiB
			in.ThreadSPs = []procfs.ThreadSP{{TID: 7, SP: stack + 30*KiB}}
			return in
		}},
		{ruleStacksBySh, clThreads, stack + 4*KiB, func() Input { return space(cStack(stack, 1*MiB, 64*KiB)...) }},
		{ruleHeaps, clArenas, heap, func() Input {
			return space(mk(heap, 1*MiB, "rw-p", "", 1*MiB), mk(heap+1*MiB, 63*MiB, "---p", "", 0))
		}},
		{ruleFullHeaps, clArenas, heap, func() Input {
			in := space(mk(heap, 64*MiB, "rw-p", "", 64*MiB))
			in.ReadMemory = heapMemory(map[uint64][4]uint64{heap: {heap + 0x20, 0, 64 * MiB, 64 * MiB}})
			return in
		}},
		{ruleMmapped, clMmap, anon, func() Input {
			in := space(mk(anon, 1*MiB, "rw-p", "", 1*MiB))
			in.ReadMemory = chunkMemory(map[uint64][2]uint64{anon: {0, 1*MiB | 2}})
			return in
		}},
		{rulePythonPools, clPyMalloc, anon, func() Input {
			in := space(mk(anon, 16*KiB, "rw-p", "", 16*KiB))
			pool := pyPool(anon, 16*KiB, 1)
			in.ReadMemory = func(addr uint64, b []byte) error {
				clear(b)
				if addr == anon {
					copy(b, pool)
				}
				return nil
			}
			return in
		}},
		{ruleAfterPools, clMmap, anon + MiB, func() Input {
			in := space(mk(anon, 2*MiB, "rw-p", "", 2*MiB))
			in.ReadMemory = pyArenaChunks(map[uint64]int{anon: 64}, map[uint64][2]uint64{anon + MiB: {0, MiB | 2}})
			return in
		}},
	}
}

// TestClaimRules: each of classify's rules, on a mapping planted for it,
// claims that mapping for its part, and the rules before it leave it
// unclaimed: the table pins each rule alone and the order they apply in.
func TestClaimRules(t *testing.T) {
	tests := claimRuleCases()
	if len(tests) != len(claimRules) {
		t.Errorf("%d rules tested, %d in claimRules: each rule wants its planted mapping", len(tests), len(claimRules))
	}
	for k, tc := range tests {
		t.Run(tc.rule.name, func(t *testing.T) {
			if i := ruleIndex(tc.rule); i != k {
				t.Fatalf("rule %q is at %d of claimRules, want %d", tc.rule.name, i, k)
			}
			in := withResident(tc.in())
			l := newLayout(&in)
			for _, r := range claimRules[:k] {
				r.claim(l, &in)
			}
			if c := claimedBy(l, tc.addr); c != "" {
				t.Errorf("the rules before %q claim %#x for %q: want it left to this one", tc.rule.name, tc.addr, c)
			}
			tc.rule.claim(l, &in)
			if c := claimedBy(l, tc.addr); c != tc.class {
				t.Errorf("rule %q: %#x claimed for %q, want %q", tc.rule.name, tc.addr, c, tc.class)
			}
		})
	}
}

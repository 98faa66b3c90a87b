package memplot

import (
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func labels(ts []plot.Tick) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Label)
	}
	return strings.Join(s, " | ")
}

// TestByteTicks checks byte axes tick at power-of-two steps labelled in
// one IEC unit, never "2500.00" or "12.50".
func TestByteTicks(t *testing.T) {
	const kib, mib, gib = 1 << 10, 1 << 20, 1 << 30
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 4.53 * gib, "0 | 1 GiB | 2 GiB | 3 GiB | 4 GiB"},
		{0, 150.5 * mib, "0 | 32 MiB | 64 MiB | 96 MiB | 128 MiB"},
		{0, 2600 * mib, "0 | 0.5 GiB | 1 GiB | 1.5 GiB | 2 GiB | 2.5 GiB"},
		{0, 10 * gib, "0 | 2 GiB | 4 GiB | 6 GiB | 8 GiB | 10 GiB"},
		{0, 900, "0 | 128 B | 256 B | 384 B | 512 B | 640 B | 768 B | 896 B"},
		{0, 3, "0 | 1 B | 2 B | 3 B"},
		{100 * mib, 130 * mib, "104 MiB | 112 MiB | 120 MiB | 128 MiB"},
		{0, 40 * kib, "0 | 8 KiB | 16 KiB | 24 KiB | 32 KiB | 40 KiB"},
		{5, 5, ""},
	} {
		if got := labels(ByteTicks{}.Ticks(c.lo, c.hi)); got != c.want {
			t.Errorf("ByteTicks(%g, %g) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// TestCountTicks checks plain axes tick at 1-2-5 steps with only the
// decimals the step needs.
func TestCountTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 2500, "0 | 500 | 1,000 | 1,500 | 2,000 | 2,500"},
		{0, 22.5, "0 | 5 | 10 | 15 | 20"},
		{0, 1, "0.0 | 0.2 | 0.4 | 0.6 | 0.8 | 1.0"},
		{0, 63, "0 | 10 | 20 | 30 | 40 | 50 | 60"},
		{1, 8, "1 | 2 | 3 | 4 | 5 | 6 | 7 | 8"},
		{-3, 3, "-3 | -2 | -1 | 0 | 1 | 2 | 3"},
		{0, 120000, "0 | 20,000 | 40,000 | 60,000 | 80,000 | 100,000 | 120,000"},
	} {
		if got := labels(CountTicks{}.Ticks(c.lo, c.hi)); got != c.want {
			t.Errorf("CountTicks(%g, %g) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// TestByteAxisMax: a byte axis ends at the first tick at or above its
// highest value.
func TestByteAxisMax(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	for top, want := range map[float64]float64{
		121.6 * mib: 128 * mib,
		4.53 * gib:  5 * gib,
		96 * mib:    96 * mib,
		0:           0,
	} {
		if got := ByteAxisMax(top); got != want {
			t.Errorf("ByteAxisMax(%g MiB) = %g MiB, want %g MiB", top/mib, got/mib, want/mib)
		}
		if ts := (ByteTicks{}).Ticks(0, ByteAxisMax(top)); top > 0 && ts[len(ts)-1].Value != ByteAxisMax(top) {
			t.Errorf("ByteAxisMax(%g MiB) is not a tick of its axis: %v", top/mib, labels(ts))
		}
	}
}

package data

import (
	"fmt"
	"math/big"
	"strings"
)

// sizeUnits are the unit suffixes ParseSize accepts, in the order its
// errors list them, with their multipliers in bytes. Decimal units are
// powers of 1000 (MB = 10^6 bytes); binary units are powers of 1024
// (MiB = 2^20 bytes). A number without a unit is bytes.
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"B", 1},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
}

// sizeUnitList is the units of every ParseSize error: "B, KB, ..., TiB".
var sizeUnitList = func() string {
	s := ""
	for i, u := range sizeUnits {
		if i > 0 {
			s += ", "
		}
		s += u.name
	}
	return s
}()

// sizeUnit is the multiplier of a unit suffix, matched case-insensitively;
// "" is bytes.
func sizeUnit(unit string) (int64, bool) {
	if unit == "" {
		return 1, true
	}
	for _, u := range sizeUnits {
		if strings.ToUpper(unit) == strings.ToUpper(u.name) {
			return u.mult, true
		}
	}
	return 0, false
}

// ParseSize parses a byte count such as "24MB", "512KB", "1GiB", "100000B"
// or "3000" (plain bytes). Units are case-insensitive; KB, MB, GB and TB are
// decimal (MB = 10^6 bytes) and KiB, MiB, GiB and TiB are binary (MiB = 2^20
// bytes). The number may have a decimal fraction ("1.5MB") if the result is a
// whole number of bytes, and may be separated from the unit by spaces.
// Errors name the input.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return 0, fmt.Errorf("parsing size %q: want a number followed by an optional unit (%s)", s, sizeUnitList)
	}
	if strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("parsing size %q: malformed number %q", s, num)
	}
	mult, ok := sizeUnit(unit)
	if !ok {
		return 0, fmt.Errorf("parsing size %q: unknown unit %q (want %s)", s, t[i:], sizeUnitList)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("parsing size %q: malformed number %q", s, num)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("parsing size %q: not a whole number of bytes", s)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("parsing size %q: too large", s)
	}
	return r.Num().Int64(), nil
}

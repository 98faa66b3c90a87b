package data

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	valid := []struct {
		in   string
		want int64
	}{
		{"24MB", 24_000_000},
		{"512KB", 512_000},
		{"1GiB", 1 << 30},
		{"100000B", 100_000},
		{"3000", 3000},
		{"0", 0},
		{"1MiB", 1 << 20},
		{"2KiB", 2048},
		{"1.5MB", 1_500_000},
		{"24 MB", 24_000_000},
		{" 7kb ", 7000},
		{"1TB", 1e12},
		{"2TiB", 2 << 40},
		{"3GB", 3e9},
	}
	for _, tc := range valid {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, nil", tc.in, got, err, tc.want)
		}
	}

	invalid := []string{
		"", "MB", "-5MB", "24XB", "24 M B", "1.2.3KB", ".", "1.5B", "0.0001KB",
		"abc", "12MBx", "99999999999TB", "1e3", "3/2KB", "+5",
	}
	for _, in := range invalid {
		got, err := ParseSize(in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, nil; want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), "\""+in+"\"") {
			t.Errorf("ParseSize(%q) error %q does not name the input", in, err)
		}
	}
}

package sites

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordOptions: the rate's one rule, and its default.
func TestRecordOptions(t *testing.T) {
	for _, tc := range []struct {
		rate, want int64
		err        string
	}{
		{0, DefaultRate, ""},
		{1, 1, ""},
		{DefaultRate, DefaultRate, ""},
		{-5, 0, "sites-rate -5: want a number of bytes, 1 or more"},
	} {
		o := RecordOptions{Rate: tc.rate}
		err := o.Check()
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("RecordOptions{Rate: %d}.Check() = %v, want %q", tc.rate, err, tc.err)
		case tc.err == "" && (err != nil || o.Rate != tc.want):
			t.Errorf("RecordOptions{Rate: %d}.Check(): rate %d, %v; want %d", tc.rate, o.Rate, err, tc.want)
		}
	}
	if err := CheckRate(0); err == nil || err.Error() != "sites-rate 0: want a number of bytes, 1 or more" {
		t.Errorf("CheckRate(0) = %v: a rate given as 0 is refused", err)
	}
}

// TestLibraryRefusesBadRate: the library is given a checked rate, and
// refuses any other value of MEMPROBE_SITES_RATE, or none, loudly: a
// message on stderr naming the variable and the value, and no records
// (it once kept 512 KiB silently). A good rate, beside, records.
func TestLibraryRefusesBadRate(t *testing.T) {
	l, bin := lib(t), prog(t, "pairs.c")
	for _, tc := range []struct {
		value string // "unset": not in the environment
		want  string // on stderr; "" for none, and records
	}{
		{"abc", "MEMPROBE_SITES_RATE=abc: want a number of bytes, 1 or more; not recording"},
		{"0", "MEMPROBE_SITES_RATE=0: want"},
		{"-5", "MEMPROBE_SITES_RATE=-5: want"},
		{"12x", "MEMPROBE_SITES_RATE=12x: want"},
		{" 12", "MEMPROBE_SITES_RATE= 12: want"},
		{"", "MEMPROBE_SITES_RATE=: want"},
		{"9223372036854775808", "MEMPROBE_SITES_RATE=9223372036854775808: want"}, // above int64
		{"unset", "MEMPROBE_SITES_RATE is not set: want a number of bytes, 1 or more; not recording"},
		{"1", ""},
		{"524288", ""},
	} {
		dir := t.TempDir()
		env := Env(os.Environ(), l, dir, DefaultRate)
		for i, kv := range env {
			if strings.HasPrefix(kv, EnvRate+"=") {
				env = append(env[:i], env[i+1:]...)
				break
			}
		}
		if tc.value != "unset" {
			env = append(env, EnvRate+"="+tc.value)
		}
		cmd := exec.Command(bin, "1000")
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s=%q: pairs.c: %v\n%s", EnvRate, tc.value, err, stderr.String())
		}
		files, _ := filepath.Glob(filepath.Join(dir, "sites.*.bin"))
		if tc.want == "" {
			if stderr.Len() != 0 || len(files) != 1 {
				t.Errorf("%s=%q: stderr %q, %d record files; want none and 1", EnvRate, tc.value, stderr.String(), len(files))
			}
			continue
		}
		if !strings.Contains(stderr.String(), "libmemprobe-sites: "+tc.want) {
			t.Errorf("%s=%q: stderr %q, want it to say %q", EnvRate, tc.value, stderr.String(), tc.want)
		}
		if len(files) != 0 {
			t.Errorf("%s=%q: %d record files, want none: a rate the library refuses records nothing", EnvRate, tc.value, len(files))
		}
	}
}

// TestHeaderRate: the header's rate is the read-back of the rate used,
// 1 or more; a file that says 0 is not the library's.
func TestHeaderRate(t *testing.T) {
	h := make([]byte, headerLen)
	copy(h, "MPSITES\n")
	binary.LittleEndian.PutUint32(h[8:], recordVersion)
	for _, rate := range []uint64{1, DefaultRate, 0, 1 << 63} {
		binary.LittleEndian.PutUint64(h[24:], rate)
		im, err := parseHeader("sites.1.0.bin", h)
		if ok := rate >= 1 && rate < 1<<63; ok != (err == nil) || ok && im.rate != rate {
			t.Errorf("rate %d in the header: %v, want an error: %v", rate, err, !ok)
		}
	}
}

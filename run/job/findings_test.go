package job

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"memprobe/instrument/memmodel"
	"memprobe/ledger"
	"memprobe/schema"
)

// TestUnaccountedHeap: the job's check of the live Go heap against the
// ledger's Go-heap accounts (Run calls it after its GC; here a GC precedes
// each call). A 64 MiB buffer made through the ledger is no finding; the
// same buffer held after the ledger was told it is dropped is one naming
// at least its bytes, even beside 64 MiB of worker stacks and GPU buffers
// in the ledger, which are not Go heap and hide nothing.
func TestUnaccountedHeap(t *testing.T) {
	const planted = 64 << 20
	led := ledger.New()
	params := led.Account(ledger.Params)
	buf := ledger.Make[byte](params, planted)
	check := func(device string) *schema.LedgerRow {
		t.Helper()
		runtime.GC()
		r := &schema.Result{Ledger: []schema.LedgerRow{}, FinalRSSBytes: 100 << 20}
		unaccountedHeap(r, led, device, 0, io.Discard)
		if r.LedgerFindings != len(r.Ledger) {
			t.Errorf("%d findings counted for %d rows", r.LedgerFindings, len(r.Ledger))
		}
		for i := range r.Ledger {
			if r.Ledger[i].Component == memmodel.UnaccountedComponent {
				return &r.Ledger[i]
			}
		}
		return nil
	}
	if row := check("cpu"); row != nil {
		t.Errorf("a buffer made through the ledger: finding %+v", *row)
	}
	ledger.Drop(params, buf) // the ledger no longer counts it; the heap still holds it
	led.Account(ledger.WorkerStacks).Alloc(planted)
	led.Account(ledger.DeviceBuffers).Alloc(planted)
	row := check("cuda")
	if row == nil {
		t.Fatalf("a %d B buffer outside the ledger is not a finding", planted)
	}
	if row.MeasuredBytes < planted || row.MeasuredBytes > planted+memmodel.UnaccountedMinBytes {
		t.Errorf("%s = %d B, want the planted %d B and less than %d B more", row.Component, row.MeasuredBytes, planted, memmodel.UnaccountedMinBytes)
	}
	runtime.KeepAlive(buf)
}

// TestUnaccountedHeapNeverNegative: where the probe's heap at job start
// and the ledger exceed the live heap (set-up objects freed since), the
// progress line says 0 and by how much, never a negative figure.
func TestUnaccountedHeapNeverNegative(t *testing.T) {
	var out strings.Builder
	r := &schema.Result{Ledger: []schema.LedgerRow{}, FinalRSSBytes: 100 << 20}
	unaccountedHeap(r, ledger.New(), "cpu", 1<<40, &out)
	if line := out.String(); strings.Contains(line, "-") || !strings.Contains(line, "outside the ledger: 0 MiB of") {
		t.Errorf("progress line %q, want 0 MiB outside the ledger and no negative figure", line)
	}
	if r.LedgerFindings != 0 {
		t.Errorf("%d findings for a heap the probe's own exceeds", r.LedgerFindings)
	}
}

package job

import (
	"io"
	"runtime"
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

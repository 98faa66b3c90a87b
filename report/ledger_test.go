package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// readJSON decodes the JSON file at path into v: the rows an instrument's
// own golden test pins, so that a table here renders what the instrument
// computes.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestLedgerGolden renders the rows of instrument/memmodel's TestGolden
// (the tiny preset, two deliberate disagreements) as the model-vs-ledger
// table.
func TestLedgerGolden(t *testing.T) {
	var rows []schema.LedgerRow
	readJSON(t, "../instrument/memmodel/testdata/json_tiny.golden", &rows)
	var b bytes.Buffer
	if err := WriteLedger(&b, rows); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "ledger-tiny.golden", b.Bytes())
}

// TestReconciliationGolden renders the reconciliations of
// instrument/reconcile's TestGolden as tables.
func TestReconciliationGolden(t *testing.T) {
	for _, name := range []string{"cgo_smaps", "counters_only"} {
		var r schema.Reconciliation
		readJSON(t, "../instrument/reconcile/testdata/json_"+name+".golden", &r)
		var b bytes.Buffer
		if err := WriteReconciliation(&b, r); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "reconciliation-"+strings.ReplaceAll(name, "_", "-")+".golden", b.Bytes())
	}
}

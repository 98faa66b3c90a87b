package job

import (
	"context"
	"io"
	"testing"

	"memprobe/instrument/memmodel"
	"memprobe/trainer"
	"memprobe/trainer/data"
)

// TestFloorFromConfiguration: floor_bytes is the configuration's. A
// trainer that makes one executor more than the configuration asks for
// (planted through newTrainer) leaves it unchanged and is the model's
// executors finding; a configuration asking for one executor more moves
// it by one executor's workspace.
func TestFloorFromConfiguration(t *testing.T) {
	run := func(o Options) (floor, perExec int64, made int, finding bool) {
		t.Helper()
		r, err := Run(context.Background(), o, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range r.Ledger {
			if row.Component == memmodel.ExecutorsComponent && row.Finding {
				finding = true
			}
		}
		return r.FloorBytes, r.ExecutorBytes, r.Executors, finding
	}
	floor, perExec, made, finding := run(tinyJob1Exec())
	if made != 1 || finding {
		t.Fatalf("executors 1: the trainer made %d, finding %v", made, finding)
	}

	defer func(f func(trainer.Options, *data.Dataset) (*trainer.Trainer, error)) { newTrainer = f }(newTrainer)
	newTrainer = func(o trainer.Options, ds *data.Dataset) (*trainer.Trainer, error) {
		o.Executors++ // the plant: one workspace the configuration did not ask for
		return trainer.New(o, ds)
	}
	pFloor, _, pMade, pFinding := run(tinyJob1Exec())
	if pMade != 2 || !pFinding {
		t.Errorf("the planted trainer made %d executors (want 2), executors finding %v (want one)", pMade, pFinding)
	}
	if pFloor != floor {
		t.Errorf("floor_bytes %d with a planted executor, %d without: it follows the trainer, not the configuration", pFloor, floor)
	}
	newTrainer = trainer.New

	two := tinyJob1Exec()
	two.Trainer.Executors = 2
	cFloor, _, _, _ := run(two)
	if cFloor-floor != perExec {
		t.Errorf("floor_bytes %d with executors 2, %d with 1: moved by %d, want one executor's %d", cFloor, floor, cFloor-floor, perExec)
	}
	t.Logf("floor_bytes %d (executors 1), %d (planted +1 in the trainer), %d (executors 2 configured); executor %d B", floor, pFloor, cFloor, perExec)
}

func tinyJob1Exec() Options {
	o := tinyJob(1)
	o.Trainer.Executors = 1
	return o
}

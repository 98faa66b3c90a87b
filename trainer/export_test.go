package trainer

// PlantDefects switches on the deliberate memory defects of plant (see
// plant.go) for one test; the returned function switches them off.
func PlantDefects(oversizeActs int, duplicateGrads, leakBatches bool) (undo func()) {
	plant.oversizeActs, plant.duplicateGrads, plant.leakBatches = oversizeActs, duplicateGrads, leakBatches
	return func() { plant.oversizeActs, plant.duplicateGrads, plant.leakBatches = 0, false, false }
}

// PlantExecutors makes numExecutors give extra executors more than the
// configuration asks for, for one test; the returned function undoes it.
func PlantExecutors(extra int) (undo func()) {
	plant.extraExecutors = extra
	return func() { plant.extraExecutors = 0 }
}

// PlantUnledgered makes New keep a plain make([]byte, bytes) that the
// ledger does not see, for one test; the returned function undoes it.
func PlantUnledgered(bytes int) (undo func()) {
	plant.unledgeredBytes = bytes
	return func() { plant.unledgeredBytes = 0 }
}

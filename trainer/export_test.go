package trainer

// PlantDefects switches on the deliberate memory defects of plant (see
// plant.go) for one test; the returned function switches them off.
func PlantDefects(oversizeActs int, duplicateGrads, leakBatches bool) (undo func()) {
	plant.oversizeActs, plant.duplicateGrads, plant.leakBatches = oversizeActs, duplicateGrads, leakBatches
	return func() { plant.oversizeActs, plant.duplicateGrads, plant.leakBatches = 0, false, false }
}

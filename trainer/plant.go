package trainer

// plant holds deliberate memory defects that tests switch on (through
// export_test.go) to prove that the ledger, which records what was really
// made, and the analytical model, which predicts from the configuration,
// can disagree, and that the disagreement names the component. Every field
// is zero in every real run.
var plant struct {
	// oversizeActs adds this many float32s to every workspace's
	// activation buffer: a buffer made larger than needed.
	oversizeActs int
	// duplicateGrads makes the gradient buffer a second time and keeps
	// it: a buffer made twice.
	duplicateGrads bool
	// leakBatches makes a batch-sized buffer every step and never drops
	// it: a leak.
	leakBatches bool
	// extraExecutors is added to the executor count numExecutors gives:
	// a trainer that makes more workspaces than its configuration asks
	// for.
	extraExecutors int
	// unledgeredBytes makes a []byte of this many bytes in New with a
	// plain make, not through the ledger, and keeps it until Close: a
	// buffer the ledger cannot see.
	unledgeredBytes int
}

package runner

import (
	"fmt"

	"memprobe/run/job"
)

// Prediction is what a configuration is expected to cost before it runs
// (job.Prediction: `probe train` checks the same figure before it builds
// anything).
type Prediction = job.Prediction

// The margin over the model (job.MarginBytes).
const (
	MarginBytes        = job.MarginBytes
	MarginFraction     = job.MarginFraction
	ResidentStackBytes = job.ResidentStackBytes
)

// Predict fills each configuration's Prediction. fileSize gives the size
// of a --data file (os.Stat's in the command).
func Predict(cs []Config, fileSize func(string) (int64, error)) error {
	for i := range cs {
		if cs[i].Process != nil {
			continue // a program of the user's: no model
		}
		p, err := job.Predict(cs[i].Schema, fileSize)
		if err != nil {
			return fmt.Errorf("%s: %w", cs[i].Name, err)
		}
		cs[i].Prediction = p
	}
	return nil
}

// MemAvailable is /proc/meminfo's MemAvailable in bytes.
func MemAvailable() (int64, error) { return job.MemAvailable() }

// DefaultMemLimit is MemAvailable less a 10 % margin: the default of
// --mem-limit.
func DefaultMemLimit() (int64, error) { return job.DefaultMemLimit() }

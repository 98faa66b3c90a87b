package main

import "github.com/spf13/pflag"

// maxDecodeRuns bounds --runs: each run is a process that builds the
// model and its hidden states again, so more than this is a mistake.
const maxDecodeRuns = 1000

// parentDecodeFlags are the flags of `probe decode --runs N` that the
// parent keeps for itself: what it writes (the pooled tables and JSON)
// and the runs. Each child gets every other flag the user gave.
var parentDecodeFlags = map[string]bool{"runs": true, "json": true, "format": true}

// decodeChildArgs is the command line of one run: `decode`, every flag
// given on fs but the parent's, as --name=value so that no value is
// read as a flag.
func decodeChildArgs(fs *pflag.FlagSet) []string {
	args := []string{"decode"}
	if fs == nil {
		return args
	}
	fs.Visit(func(f *pflag.Flag) {
		if !parentDecodeFlags[f.Name] {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	return args
}

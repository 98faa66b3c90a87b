package schema

import "time"

// LiveSample is what one frame of the live view (`probe exec --live`)
// shows: the latest figures of a watch. It is never written to the JSON
// result; it travels from the watch (outside) to the frame
// (report/process).
type LiveSample struct {
	Mode    string
	Command []string
	PID     int
	// Elapsed is the time watched so far.
	Elapsed time.Duration
	// RSS and its parts, VSZ and swap as last sampled, in bytes; PeakRSS
	// the largest RSS sampled so far.
	RSS, Anon, File, Shmem uint64
	VSZ, Swap, PeakRSS     uint64
	Threads                int
	// GrowthBytesPerSec is RSS's rate of change over the last few
	// seconds (the live view's window); NaN-free, 0 before a second
	// frame.
	GrowthBytesPerSec float64
	// Walk is the last full walk's parts, largest resident first, and
	// when it was taken (WalkMs since the watch began); none before the
	// first walk.
	Walk   []LivePart
	WalkMs float64
	// Children are the live descendants (--children) and TreeRSS their
	// RSS with the process's, at the last read; -1 when not watched.
	Children int
	TreeRSS  uint64
}

// LivePart is one part of a walk's breakdown of RSS.
type LivePart struct {
	Name  string
	Bytes int64
}

// LiveSites is the sampled blocks in use of the images of an exec
// --sites watch that have not ended, as of their last records read
// (outside/sites' LiveReader.Top): the live view's sites section.
type LiveSites struct {
	// Rate is the sampling rate in bytes (1: every block; 0 before any
	// file was read).
	Rate uint64
	// Bytes and Objects are in use, scaled from the samples.
	Bytes, Objects int64
	// Sites is the number of named sites with blocks in use; Top the
	// largest of them, by bytes.
	Sites int
	Top   []LiveSite
	// Unnamed is the stacks with blocks in use not yet named (the
	// naming budget ran out) and their bytes: not in Sites.
	Unnamed      int
	UnnamedBytes int64
	// Processes is the images read that have not ended.
	Processes int
	// BehindBytes is the records written that the last Poll left to
	// read (PollBytes).
	BehindBytes int64
}

// LiveSite is a site with blocks in use: the first frame that is not the
// allocator's, as in the report's tables.
type LiveSite struct {
	Function, File string
	Line           int
	Bytes, Objects int64
}

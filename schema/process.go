package schema

// Process is the outside view of a process that probe exec or probe attach
// watched (Result.Kind KindProcess).
type Process struct {
	PID int `json:"pid"`
}

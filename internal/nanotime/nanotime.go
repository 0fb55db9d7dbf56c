// Package nanotime stores times as Unix nanoseconds, the zero time as 0, as the
// stores (SQLite, Qdrant payloads, the MCP records) keep them.
package nanotime

import "time"

// Of is t in Unix nanoseconds, 0 for the zero time (whose UnixNano is not 0).
func Of(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Time is the time n stands for, in UTC; 0 is the zero time.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

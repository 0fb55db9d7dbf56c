// Package ids makes the random ids records get (UUIDs), for the daemon's
// stores, the MCP session records and the proxy's MCP sessions alike.
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a random (version 4) UUID in canonical form, the id every
// backend gives a new record (Qdrant takes UUIDs as point ids).
func New() string {
	var b [16]byte
	rand.Read(b[:])         // never fails: crypto/rand crashes the program instead
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return Format(b)
}

// Format writes b in the canonical 8-4-4-4-12 lower-case hex form.
func Format(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// Package systemd holds contextd's systemd user units, embedded so that
// `contextd install-units` can write them for a from-source install.
package systemd

import (
	_ "embed"
	"strings"
)

//go:embed contextd.socket
var socketUnit string

//go:embed contextd.service
var serviceUnit string

//go:embed contextd-http.socket
var httpSocketUnit string

// Unit is one unit file.
type Unit struct {
	Name    string
	Content string
}

// Units returns the unit files with ExecStart pointing at binary: the
// daemon's socket, the HTTP API's socket and the service both start.
func Units(binary string) []Unit {
	svc := strings.Replace(serviceUnit, "ExecStart=/usr/bin/contextd serve", "ExecStart="+binary+" serve", 1)
	return []Unit{{"contextd.socket", socketUnit}, {"contextd-http.socket", httpSocketUnit}, {"contextd.service", svc}}
}

package sandboxinfo

// Connection is one connection (or, where the egress proxy saw them, one
// request) a sandboxed program made through the egress proxy, allowed or
// refused: what the audit record lists. It never holds a secret.
type Connection struct {
	Host        string `json:"host"`
	Port        int    `json:"port"`
	Method      string `json:"method,omitempty"` // "" when tunnelled (TLS the proxy does not open)
	Via         string `json:"via,omitempty"`    // "http", "connect", "socks5", "forward"
	Allowed     bool   `json:"allowed"`
	Rule        string `json:"rule,omitempty"`   // the rule that allowed it
	Source      string `json:"source,omitempty"` // where that rule comes from
	Reason      string `json:"reason,omitempty"` // why it was refused
	Leak        bool   `json:"leak,omitempty"`   // refused: a credential's placeholder went to another host
	Intercepted bool   `json:"intercepted,omitempty"`
	Injected    int    `json:"injected,omitempty"` // credentials put back on the wire
	BytesOut    int64  `json:"bytes_out,omitempty"`
	BytesIn     int64  `json:"bytes_in,omitempty"`
}

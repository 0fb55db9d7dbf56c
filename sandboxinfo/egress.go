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

// Egress is what a sandboxed program's connections through the egress proxy
// come to, for the call's result and its audit record.
type Egress struct {
	// RulesFrom says where the rules come from (the configuration file,
	// and the call's own rules when it had any); never "": a proxy with no
	// name for its rules is still the proxy.
	RulesFrom   string
	Connections []Connection
	// Lines are for the caller, in the call's result: one per refused
	// host, saying how to allow it, and one per blocked leak. The audit
	// record has the connections instead.
	Lines []string
}

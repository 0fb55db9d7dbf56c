// Package egress is the proxy that every connection of a sandboxed program goes through.
//
// A sandboxed command runs in a network namespace that holds only loopback;
// HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at 127.0.0.1:3128 inside it,
// where the daemon listens and hands the listener to Server.Serve. The proxy
// speaks HTTP/1.1 (CONNECT and absolute-form requests) and SOCKS5 on the same
// port, told apart by the first byte. It resolves names itself (the sandbox
// has no DNS), applies an allowlist Policy, checks every address it would dial
// (loopback, private, link-local, ... are refused unless a rule names the
// target exactly), dials the address it checked (so DNS rebinding gains
// nothing), and reports every connection and every visible request as an
// Event.
//
// Credentials: the sandbox only ever sees placeholders for the user's
// secrets. For a host that a Credential belongs to, the proxy terminates TLS
// with a leaf certificate from the per-user CA (which the sandbox trusts;
// its name constraints limit it to the hosts the proxy intercepts, and it
// lives a week),
// replaces placeholders with the secret in the request line, headers
// (including inside Authorization: Basic) and small bodies, and sends the
// request on over TLS that it verifies itself. A request that carries a known
// placeholder to any other host the proxy can see into is refused as a leak.
// Plain-HTTP traffic is always visible. A tunnel to a host whose rules all
// name methods (the read-only registry rules) is intercepted the same way,
// so that every request's method is checked, and refused when there is no
// CA to do it with; other tunnels are not intercepted.
//
// What it cannot stop, by design: a program that may talk to an allowed host
// can send that host whatever it knows (data encoded into URLs, headers or
// bodies of requests to an allowed host is not detectable), and a tunnel to an
// allowed host that is not intercepted is opaque: its bytes are counted, not
// read. Placeholders are not secrets, so a placeholder smuggled out in a form
// the leak check does not recognise (base64 in a body, split across
// requests) exposes nothing; the check exists to catch misdirected
// configuration (a registry URL pointing elsewhere) and to make sure a secret
// is only ever put in a request to its own host. Bodies larger than 1 MiB or
// chunked are streamed without substitution or leak checks.
//
// Limits (limits.go): the daemon is outside every sandbox's memory limit,
// so request and response heads (and chunked trailers) are held to 64 KiB
// and 256 fields, and a call to Limits.MaxConns connections; what goes over
// is refused with the limit named.
package egress

package catalog

// Detail is an error as it crosses a process boundary: the catalog code, the
// message and the hint. The gRPC form (wire.Error) and the proxy's light protocol
// both carry it; ToDetail and FromDetail are the one translation.
type Detail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// remoteError is an error received from another process: it keeps that process's
// message and unwraps to the catalog class, so errors.Is works across the socket.
type remoteError struct {
	class *Class
	msg   string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.class }

// ToDetail turns err into its transportable form, or nil for nil.
func ToDetail(err error) *Detail {
	if err == nil {
		return nil
	}
	c := ClassOf(err)
	return &Detail{Code: c.Code, Message: err.Error(), Hint: c.Hint}
}

// FromDetail turns a received error back into an error that wraps its class. An
// unknown code (from a newer daemon) keeps its message and counts as internal.
func FromDetail(d *Detail) error {
	if d == nil {
		return nil
	}
	c := Lookup(d.Code)
	if c == nil {
		c = ErrInternal
	}
	return &remoteError{class: c, msg: d.Message}
}

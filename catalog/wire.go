package catalog

import (
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/wire"
)

// wireError is an error received from the daemon: it keeps the daemon's message and
// unwraps to the catalog class, so errors.Is works across the socket.
type wireError struct {
	class *Class
	msg   string
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.class }

// ToWire turns err into the wire form, or nil for nil.
func ToWire(err error) *wire.Error {
	if err == nil {
		return nil
	}
	c := ClassOf(err)
	return &wire.Error{Code: c.Code, Message: err.Error(), Hint: c.Hint}
}

// FromWire turns a wire error back into an error that wraps its class. An unknown
// code (a newer daemon) keeps its message and counts as internal.
func FromWire(e *wire.Error) error {
	if e == nil {
		return nil
	}
	c := Lookup(e.Code)
	if c == nil {
		c = ErrInternal
	}
	return &wireError{class: c, msg: e.Message}
}

// ToStatus turns err into a gRPC status error carrying the catalog code as a detail.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	c := ClassOf(err)
	st := status.New(c.GRPC, err.Error())
	if withDetail, derr := st.WithDetails(ToWire(err)); derr == nil {
		st = withDetail
	}
	return st.Err()
}

// FromStatus turns an error returned by a gRPC call back into a catalog error. The
// boolean is false when the status carries no catalog detail: then it came from the
// transport, not the daemon, and the caller must classify it (see proxy/client).
func FromStatus(err error) (error, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return err, false
	}
	for _, d := range st.Details() {
		if we, ok := d.(*wire.Error); ok {
			return FromWire(we), true
		}
	}
	return err, false
}

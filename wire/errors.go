package wire

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/catalog"
)

// ErrorOf turns err into its protobuf form, or nil for nil.
func ErrorOf(err error) *Error {
	d := catalog.ToDetail(err)
	if d == nil {
		return nil
	}
	return &Error{Code: d.Code, Message: d.Message, Hint: d.Hint}
}

// ErrorFrom turns a received protobuf error back into a catalog error.
func ErrorFrom(e *Error) error {
	if e == nil {
		return nil
	}
	return catalog.FromDetail(&catalog.Detail{Code: e.Code, Message: e.Message, Hint: e.Hint})
}

// ToStatus turns err into a gRPC status error carrying the catalog code as a detail.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	c := catalog.ClassOf(err)
	st := status.New(codes.Code(c.GRPC), err.Error())
	if withDetail, derr := st.WithDetails(ErrorOf(err)); derr == nil {
		st = withDetail
	}
	return st.Err()
}

// FromStatus turns an error returned by a gRPC call back into a catalog error. The
// boolean is false when the status carries no catalog detail: then it came from the
// transport, not the daemon, and the caller must classify it.
func FromStatus(err error) (error, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return err, false
	}
	for _, d := range st.Details() {
		if we, ok := d.(*Error); ok {
			return ErrorFrom(we), true
		}
	}
	return err, false
}

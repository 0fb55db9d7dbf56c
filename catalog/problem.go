package catalog

// Problem is an error as the HTTP API answers it: RFC 9457's problem
// details (application/problem+json), carrying the catalog's code and hint.
// ToProblem and HTTPStatus are the one translation of errors to HTTP.
type Problem struct {
	// Type names the class: "urn:contextd:error:CTXD-E002".
	Type   string `json:"type"`
	Title  string `json:"title"`  // the class's name
	Status int    `json:"status"` // the HTTP status
	Detail string `json:"detail"` // the message (already scrubbed by the daemon)
	Code   string `json:"code"`
	Hint   string `json:"hint,omitempty"`
}

// ProblemType is the media type of a Problem.
const ProblemType = "application/problem+json"

// httpOfGRPC maps the gRPC status a class already has to its HTTP status.
var httpOfGRPC = map[Status]int{
	StatusOK:                 200,
	StatusCanceled:           503,
	StatusInvalidArgument:    400,
	StatusDeadlineExceeded:   504,
	StatusNotFound:           404,
	StatusAlreadyExists:      409,
	StatusPermissionDenied:   403,
	StatusResourceExhausted:  429,
	StatusFailedPrecondition: 409,
	StatusInternal:           500,
	StatusUnavailable:        503,
}

// httpOverride are the classes whose HTTP status is not their gRPC
// status's: a layer or a server that could not start is the daemon's side
// (503, not a client's precondition); a broken configuration or audit log
// is the daemon's own failure (500); a spent branch is a refusal, not a
// rate limit (403); a plugin's refused source or changed pin is the
// client's request (422); a body over the bound is HTTP's own 413.
var httpOverride = map[*Class]int{
	ErrSandbox:        503,
	ErrServerStart:    503,
	ErrPluginStart:    503,
	ErrConfig:         500,
	ErrAuditDamaged:   500,
	ErrBranchBudget:   403,
	ErrInstallRefused: 422,
	ErrChecksum:       422,
	ErrBodyTooLarge:   413,
}

// HTTPStatus is the HTTP status of c.
func HTTPStatus(c *Class) int {
	if s, ok := httpOverride[c]; ok {
		return s
	}
	if s, ok := httpOfGRPC[c.GRPC]; ok {
		return s
	}
	return 500
}

// ToProblem turns err into its HTTP form; nil for nil.
func ToProblem(err error) *Problem {
	if err == nil {
		return nil
	}
	c := ClassOf(err)
	return &Problem{Type: "urn:contextd:error:" + c.Code, Title: c.Name, Status: HTTPStatus(c),
		Detail: err.Error(), Code: c.Code, Hint: c.Hint}
}
